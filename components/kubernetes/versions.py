"""Every chart and image version gpufleet installs: the one place they are pinned.

A test fails when one of these version strings appears anywhere else in the code. Sources: the upstream
repositories' tags as recorded in shared/reference/gpu-facts.md (state of 2026-08).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Chart:
    name: str
    version: str
    repository: str  # Helm repository URL (or oci:// registry path)


# -- NVIDIA GPU stack ---------------------------------------------------------------------------------
GPU_OPERATOR = Chart("gpu-operator", "v26.7.0", "https://helm.ngc.nvidia.com/nvidia")
NVIDIA_DEVICE_PLUGIN = Chart("nvidia-device-plugin", "0.20.0", "https://nvidia.github.io/k8s-device-plugin")
# The driver the GPU Operator installs on bare metal unless a site pins its own (kubernetes.driver_version):
# `driver.version` in deployments/gpu-operator/values.yaml at tag v26.7.0. DCGM exporter, GFD, MIG manager,
# toolkit and the NFD subchart (0.19.0) are left at the images the pinned operator chart ships with.
GPU_DRIVER = "595.91.07"

# -- Fabrics --------------------------------------------------------------------------------------------
# NVIDIA Network Operator (Mellanox/network-operator, Chart.yaml `version` at tag v26.4.1, no `v` prefix).
NETWORK_OPERATOR = Chart("network-operator", "26.4.1", "https://helm.ngc.nvidia.com/nvidia")
# Its component images (multus, cni plugins, ipoib-cni, nv-ipam, RDMA shared device plugin) are tagged after
# the operator release (example/crs/*nicclusterpolicy*.yaml at v26.4.1).
NETWORK_OPERATOR_COMPONENTS_TAG = f"network-operator-v{NETWORK_OPERATOR.version}"
NETWORK_OPERATOR_REGISTRY = "nvcr.io/nvidia/mellanox"
# DOCA-OFED driver container the NicClusterPolicy installs (example/crs at v26.4.1).
DOCA_DRIVER = "doca3.4.1-26.04-1.1.0.0-1"
# AWS EFA device plugin (aws/eks-charts stable/aws-efa-k8s-device-plugin/Chart.yaml, 2026-08-03).
AWS_EFA_DEVICE_PLUGIN = Chart("aws-efa-k8s-device-plugin", "v0.5.30", "https://aws.github.io/eks-charts")

# -- AWS storage CSI drivers (kubernetes-sigs charts/<name>/Chart.yaml on the default branch, 2026-04 / 2026-07)
AWS_FSX_CSI_DRIVER = Chart("aws-fsx-csi-driver", "1.17.0", "https://kubernetes-sigs.github.io/aws-fsx-csi-driver")
AWS_EFS_CSI_DRIVER = Chart("aws-efs-csi-driver", "4.4.1", "https://kubernetes-sigs.github.io/aws-efs-csi-driver")

# -- Bare-metal storage (csi-driver-nfs charts/index.yaml 2025-10; local-static-provisioner chart 2.8.0)
NFS_CSI_DRIVER = Chart(
    "csi-driver-nfs", "4.12.1", "https://raw.githubusercontent.com/kubernetes-csi/csi-driver-nfs/master/charts"
)
LOCAL_STATIC_PROVISIONER = Chart(
    "local-static-provisioner", "2.8.0", "https://kubernetes-sigs.github.io/sig-storage-local-static-provisioner"
)

# -- Scheduling -----------------------------------------------------------------------------------------
KUEUE = Chart("kueue", "0.19.2", "oci://registry.k8s.io/kueue/charts")
