"""NVIDIA's DRA driver for GPUs on a cluster with rack-scale pools: ComputeDomains on, GPU allocation off.

Chart `nvidia-dra-driver-gpu` (NVIDIA/k8s-dra-driver-gpu deployments/helm/nvidia-dra-driver-gpu at the pinned tag).
- `resources.computeDomains.enabled`: the driver turns a ComputeDomain into IMEX daemons on its nodes and hands
  each pod an IMEX channel; `resources.gpus.enabled: false` leaves GPUs to the device plugin, as the EKS user
  guide (ml-eks-nvidia-ultraserver) recommends while the driver's GPU allocation is experimental.
- The controller's chart default requires control-plane nodes, which EKS has none of: it runs off GPU nodes.
- The kubelet plugin runs on the rack-scale pools' nodes only, tolerating exactly their taints.
- `nvidiaDriverRoot` is where the driver lives: `/` for a driver on the host or in the node image, the GPU
  Operator's driver container root where the operator installs it (the chart's values.yaml comment).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.kubernetes import helm, placement
from components.kubernetes.gpu_driver import operator_installs_driver
from model import dra, versions
from model.conventions import DRA_DRIVER_NAMESPACE, POOL_LABEL
from model.spec import Site

# Where the GPU Operator's driver container mounts the driver on the host (nvidia-dra-driver-gpu values.yaml:
# "If the NVIDIA GPU driver is managed using the NVIDIA GPU Driver Container, this is typically /run/nvidia/driver").
OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"


def dra_driver_values(site: Site) -> dict[str, Any]:
    pools = dra.rack_scale_pools(site)
    return {
        "nvidiaDriverRoot": OPERATOR_DRIVER_ROOT if operator_installs_driver(site) else "/",
        "resources": {"gpus": {"enabled": False}, "computeDomains": {"enabled": True}},
        "controller": {"nodeSelector": {}, "tolerations": [], "affinity": placement.off_gpu_nodes_affinity()},
        "kubeletPlugin": {
            "affinity": placement.require_labels(POOL_LABEL, [p.name for p in pools]),
            "tolerations": placement.tolerations(pools),
        },
    }


@dataclass(frozen=True)
class DraDriverArgs:
    site: Site
    namespace: pulumi.Resource  # from namespaces.SystemNamespaces


class DraDriver(pulumi.ComponentResource):
    """The NVIDIA DRA driver Helm release (its CRDs, DeviceClasses, controller and kubelet plugin)."""

    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: DraDriverArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:kubernetes:DraDriver", name, None, opts)
        self.release = helm.release(
            f"{name}-release",
            versions.NVIDIA_DRA_DRIVER,
            name="nvidia-dra-driver-gpu",
            namespace=DRA_DRIVER_NAMESPACE,
            create_namespace=False,
            values=dra_driver_values(args.site),
            max_history=10,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[args.namespace]),
        )
        self.register_outputs({"status": self.release.status})
