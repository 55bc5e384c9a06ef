"""Every chart and image version gpufleet installs: the one place they are pinned.

A test fails when one of these version strings appears anywhere else in the code. Sources: the upstream
repositories' release tags named next to each pin (state of 2026-08).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass


@dataclass(frozen=True)
class Chart:
    name: str
    version: str
    repository: str  # Helm repository URL (or oci:// registry path)


# -- NVIDIA GPU stack ---------------------------------------------------------------------------------
GPU_OPERATOR = Chart("gpu-operator", "v26.7.0", "https://helm.ngc.nvidia.com/nvidia")
NVIDIA_DEVICE_PLUGIN = Chart("nvidia-device-plugin", "0.20.0", "https://nvidia.github.io/k8s-device-plugin")
# NVIDIA's DRA driver for GPUs (ComputeDomains: IMEX channels across an NVLink domain): tag v25.12.0 of
# NVIDIA/k8s-dra-driver-gpu (now kubernetes-sigs/dra-driver-nvidia-gpu), deployments/helm/nvidia-dra-driver-gpu.
NVIDIA_DRA_DRIVER = Chart("nvidia-dra-driver-gpu", "25.12.0", "https://helm.ngc.nvidia.com/nvidia")
# The driver the GPU Operator installs on bare metal unless a site pins its own (kubernetes.driver_version):
# `driver.version` in deployments/gpu-operator/values.yaml at tag v26.7.0. DCGM exporter, GFD, MIG manager,
# toolkit and the NFD subchart (0.19.0) are left at the images the pinned operator chart ships with.
GPU_DRIVER = "595.91.07"
# What every NVIDIADriver gpufleet creates names beside the driver (bare metal, components/kubernetes/gpu_driver.py):
# `driver.manager.version` and `gds.version` in deployments/gpu-operator/values.yaml at the operator's tag.
GPU_DRIVER_MANAGER = "v0.12.0"
GDS_DRIVER = "2.29.4"

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

# -- Bare-metal storage (kubernetes-csi/csi-driver-nfs charts/index.yaml: 4.13.4 published 2026-07-02, the chart
# charts/v4.13.4/csi-driver-nfs-4.13.4.tgz; kubernetes-sigs/sig-storage-local-static-provisioner tag
# local-static-provisioner-2.9.0, helm/provisioner/Chart.yaml)
NFS_CSI_DRIVER = Chart(
    "csi-driver-nfs", "4.13.4", "https://raw.githubusercontent.com/kubernetes-csi/csi-driver-nfs/master/charts"
)
LOCAL_STATIC_PROVISIONER = Chart(
    "local-static-provisioner", "2.9.0", "https://kubernetes-sigs.github.io/sig-storage-local-static-provisioner"
)

# -- Metrics ----------------------------------------------------------------------------------------------
# kube-prometheus-stack (prometheus-community/helm-charts tag kube-prometheus-stack-88.5.3,
# charts/kube-prometheus-stack/Chart.yaml: Prometheus Operator v0.93.1, with the subcharts kube-state-metrics 8.4.0,
# prometheus-node-exporter 4.56.1 and grafana 12.11.1 from grafana-community/helm-charts), for sites with
# `kubernetes.monitoring.prometheus_operator: install`.
KUBE_PROMETHEUS_STACK = Chart("kube-prometheus-stack", "88.5.3", "https://prometheus-community.github.io/helm-charts")

# -- EKS managed add-ons ---------------------------------------------------------------------------------
# Amazon VPC CNI, managed by gpufleet with NetworkPolicy enforcement on (needs v1.14 or later: EKS user guide,
# cni-network-policy-configure). Not v1.21.1-eksbuild.7, the build the EKS user guide's table lists for 1.29 to 1.35
# (managing-vpc-cni, 2026): on a fresh 1.34 cluster its network policy agent (v1.3.2-eksbuild.2) blocks all pod
# traffic in standard mode with no policy at all (https://github.com/aws/aws-network-policy-agent/issues/553, filed
# 2026-04-20, closed). The v1.23 line runs agent v1.4.1: aws/amazon-vpc-cni-k8s charts/aws-vpc-cni/values.yaml at
# v1.23.0, whose CHANGELOG says the CNI must run with it (IPAMD moved to a Unix socket, PR #3739). Agent v1.3.4
# (2026-04-22) and v1.3.5 (2026-04-28, PR #551: the ClusterPolicyEndpoint CRD check at start removed) came after
# #553; its thread does not name the fixing release, so this pin rests on a later agent, not on a cited fix.
# v1.23.1 is aws/amazon-vpc-cni-k8s PR #3837 (2026-08-20); v1.23.1-eksbuild.1 is the add-on build public EKS
# stacks run on 1.32 to 1.36 in 2026-09.
VPC_CNI_ADDON = "v1.23.1-eksbuild.1"
# EKS Pod Identity Agent, one build for 1.34 and 1.35 (and 1.36): public stacks pin v1.3.10-eksbuild.3 beside
# kube-proxy v1.34.6, v1.35.3 and v1.36.0 builds (2026). Third-party, not read from `aws eks describe-addon-versions`
# (no account offline); the EKS user guide (add-ons-pod-id) gives no per-minor table.
POD_IDENTITY_AGENT_ADDON = "v1.3.10-eksbuild.3"
# EKS node monitoring agent v1.7.0 (aws/eks-node-monitoring-agent tag v1.7.0, 2026-08-04), one build for 1.34 and
# 1.35: its chart (charts/eks-node-monitoring-agent/values.yaml) runs image v1.7.0-eksbuild.1, the build named here.
# Pinned because gpufleet's configuration values (`dcgmAgent.tolerations`) are in the add-on's configuration schema
# only from v1.6.0 (charts/configuration.schema.json), and an unpinned add-on is EKS's default build of the day,
# which a minor bump never moves (EKS user guide, updating-an-add-on). Not read from `aws eks
# describe-addon-versions` (no account offline).
NODE_MONITORING_AGENT_ADDON = "v1.7.0-eksbuild.1"

# -- EKS Kubernetes minors ---------------------------------------------------------------------------------------
EKS_VERSIONS_URL = "https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html"


@dataclass(frozen=True)
class EksMinor:
    """What gpufleet pins for one EKS Kubernetes minor: its support dates, the managed add-ons at builds for it,
    the EKS-optimized AL2023 AMI release its node groups run (the NVIDIA AMI holds the GPU driver), and the
    cluster-autoscaler whose minor matches it."""

    minor: str
    eks_release: dt.date
    end_of_standard_support: dt.date
    end_of_extended_support: dt.date
    support_source: str
    addons: tuple[tuple[str, str], ...]  # (EKS add-on name, addon version) in the order an upgrade moves them
    ami_release: str  # the newest AL2023 release checked for the minor (`<patch>-<YYYYMMDD>`), for a pool to pin
    ami_gpu_driver: str  # kmod-nvidia-latest-dkms in that AL2023 NVIDIA AMI release
    cluster_autoscaler: Chart
    cluster_autoscaler_app: str

    def addon_version(self, name: str) -> str | None:
        return dict(self.addons).get(name)


# AL2023 AMI release v20260714 (awslabs/amazon-eks-ami CHANGELOG.md, "AMI Release v20260714"): release versions
# 1.34.9-20260714 and 1.35.6-20260714 for every AL2023 AMI type; the x86_64 NVIDIA AMIs carry
# kmod-nvidia-latest-dkms 580.159.03. CoreDNS and kube-proxy: the EKS user guide's tables of the latest add-on build
# per minor (managing-coredns and managing-kube-proxy, 2026).
AL2023_RELEASE = "v20260714"
AL2023_NVIDIA_DRIVER = "580.159.03"
# cluster-autoscaler, one chart per Kubernetes minor: the autoscaler's minor must match the control plane's
# (cluster-autoscaler README, "Releases"). Chart 9.53.0 = cluster-autoscaler 1.34.2 and chart 9.54.0 =
# cluster-autoscaler 1.35.0 (kubernetes/autoscaler tags cluster-autoscaler-chart-9.53.0 and -9.54.0,
# cluster-autoscaler/charts/cluster-autoscaler/Chart.yaml appVersion). 1.35 always handles DRA objects
# (cluster-autoscaler/config/flags/flags.go at cluster-autoscaler-1.35.0: --enable-dynamic-resource-allocation
# "locked to true"), and chart 9.54.0 is the first that grants get/list/watch on resource.k8s.io resourceslices,
# deviceclasses and resourceclaims. Its only change from 9.53.0 besides Chart.yaml is that ClusterRole rule, so
# values.yaml, and gpufleet's values, are the same for both. Its values.yaml still runs image v1.34.2, so gpufleet
# names the image of the app below (components/aws/autoscaler.py).
CLUSTER_AUTOSCALER = Chart("cluster-autoscaler", "9.53.0", "https://kubernetes.github.io/autoscaler")
CLUSTER_AUTOSCALER_APP = "1.34.2"
CLUSTER_AUTOSCALER_135 = Chart("cluster-autoscaler", "9.54.0", "https://kubernetes.github.io/autoscaler")
CLUSTER_AUTOSCALER_135_APP = "1.35.0"
EKS_MINORS: dict[str, EksMinor] = {
    m.minor: m
    for m in (
        EksMinor(
            "1.34",
            dt.date(2025, 10, 2),
            dt.date(2026, 12, 2),
            dt.date(2027, 12, 2),
            "awsdocs/amazon-eks-user-guide latest/ug/versioning/kubernetes-versions.adoc (release calendar)",
            (
                ("vpc-cni", VPC_CNI_ADDON),
                ("kube-proxy", "v1.34.6-eksbuild.2"),
                ("eks-pod-identity-agent", POD_IDENTITY_AGENT_ADDON),
                ("eks-node-monitoring-agent", NODE_MONITORING_AGENT_ADDON),
                ("coredns", "v1.13.2-eksbuild.7"),
            ),
            f"1.34.9-{AL2023_RELEASE[1:]}",
            AL2023_NVIDIA_DRIVER,
            CLUSTER_AUTOSCALER,
            CLUSTER_AUTOSCALER_APP,
        ),
        EksMinor(
            "1.35",
            dt.date(2026, 1, 28),
            dt.date(2027, 3, 27),
            dt.date(2028, 3, 27),
            "endoflife.date/amazon-eks (EKS release calendar dates; the stored EKS user guide table ends at 1.34)",
            (
                ("vpc-cni", VPC_CNI_ADDON),
                ("kube-proxy", "v1.35.3-eksbuild.2"),
                ("eks-pod-identity-agent", POD_IDENTITY_AGENT_ADDON),
                ("eks-node-monitoring-agent", NODE_MONITORING_AGENT_ADDON),
                ("coredns", "v1.14.2-eksbuild.4"),
            ),
            f"1.35.6-{AL2023_RELEASE[1:]}",
            AL2023_NVIDIA_DRIVER,
            CLUSTER_AUTOSCALER_135,
            CLUSTER_AUTOSCALER_135_APP,
        ),
    )
}


def eks_minor(version: str) -> EksMinor | None:
    """The pins of an EKS Kubernetes minor (`1.34`), None when gpufleet pins nothing for it."""
    return EKS_MINORS.get(version)


# How early preview warns of the end of standard support: EKS announces that date at least 60 days ahead
# (kubernetes-versions, "Amazon EKS version FAQs").
SUPPORT_WARNING_DAYS = 60


def support_warning(cluster: str, minor: str, support_type: str, today: dt.date) -> str | None:
    """A warning when `minor` is past, or within SUPPORT_WARNING_DAYS of, its end of standard support on `today`;
    what happens then follows the cluster's upgrade policy (view-upgrade-policy)."""
    pinned = eks_minor(minor)
    if pinned is None:
        return None
    days = (pinned.end_of_standard_support - today).days
    if days > SUPPORT_WARNING_DAYS:
        return None
    when = f"ended {-days} days ago" if days < 0 else f"ends in {days} days" if days else "ends today"
    then = (
        "EKS upgrades its control plane alone to the next minor (support_type STANDARD), leaving node groups and "
        "add-ons behind"
        if support_type == "STANDARD"
        else f"it stays on {minor} at the extended-support rate until {pinned.end_of_extended_support}"
    )
    return (
        f"cluster {cluster}: standard support for Kubernetes {minor} {when} ({pinned.end_of_standard_support}, "
        f"{EKS_VERSIONS_URL}); then {then}. Bump `cluster.version` one minor (docs/upgrades.md)"
    )


# -- Scheduling -----------------------------------------------------------------------------------------
KUEUE = Chart("kueue", "0.19.2", "oci://registry.k8s.io/kueue/charts")
# JobSet, the one job operator gpufleet installs (Kueue integration jobset.x-k8s.io/jobset): the version Kueue
# 0.19.2 is built against (kubernetes-sigs/kueue go.mod at v0.19.2: sigs.k8s.io/jobset v0.12.0); chart
# charts/jobset at kubernetes-sigs/jobset tag v0.12.0, published as oci://registry.k8s.io/jobset/charts/jobset.
JOBSET = Chart("jobset", "0.12.0", "oci://registry.k8s.io/jobset/charts")

# -- Autoscaling (burst pools) --------------------------------------------------------------------------
# The ProvisioningRequest CRD, which the chart does not ship: the autoscaler repository at the release tag.
PROVISIONING_REQUEST_CRD_URL = (
    f"https://raw.githubusercontent.com/kubernetes/autoscaler/cluster-autoscaler-{CLUSTER_AUTOSCALER_APP}/"
    "cluster-autoscaler/apis/config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml"
)


def kubernetes_minor(version: str) -> str:
    """`1.34.2` -> `1.34`: the Kubernetes minor a component built for that release serves."""
    return ".".join(version.removeprefix("v").split(".")[:2])


# -- Acceptance images (`gpufleet verify`) ---------------------------------------------------------------
@dataclass(frozen=True)
class Image:
    """A container image, pinned by digest where a published digest was found (`digest` None: tag only)."""

    repository: str
    tag: str
    digest: str | None
    source: str  # where the tag (and digest) are published

    @property
    def reference(self) -> str:
        """`repo:tag@sha256:...` (the digest is what the runtime pulls; the tag stays for people), else `repo:tag`."""
        return f"{self.repository}:{self.tag}@{self.digest}" if self.digest else f"{self.repository}:{self.tag}"


# nccl-tests with aws-ofi-nccl, libfabric (EFA installer), Open MPI and sshd: AWS's public image built from
# aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests/nccl-tests.Dockerfile. Tag and digest as
# resolved on 2026-09-06 in awslabs/awsome-distributed-ai examples/use-cases/gpu-cluster-failure-patterns/pins.env.
NCCL_TESTS_EFA = Image(
    "public.ecr.aws/hpc-cloud/nccl-tests",
    "cuda13.0.2-efa1.48.0-ofiv1.19.0-ncclv2.30.4-1-testsv2.18.3",
    "sha256:a5390d3f0eb50f3e5854085e2ae0fef90b9eb4f3b7486ed4cab0d47864809d4c",
    "awslabs/awsome-distributed-ai examples/use-cases/gpu-cluster-failure-patterns/pins.env",
)
# nccl-tests with HPC-X (UCX, Open MPI), the OFED user space and sshd for InfiniBand / RoCE: CoreWeave's public
# image (coreweave/nccl-tests Dockerfile); the tag is the one coreweave/nccl-tests uses in
# mpi-operator/nccl-test-hgx-ib-mpijob.yaml. No published digest was found for it: pinned by tag only.
NCCL_TESTS_IB = Image(
    "ghcr.io/coreweave/nccl-tests",
    "12.9.1-devel-ubuntu22.04-nccl2.30.4-1-111c25a",
    None,
    "coreweave/nccl-tests mpi-operator/nccl-test-hgx-ib-mpijob.yaml",
)
# DCGM (nv-hostengine, dcgmi): the standalone DCGM image the pinned GPU Operator chart names
# (deployments/gpu-operator/values.yaml at v26.7.0, `dcgm.repository`/`dcgm.image`/`dcgm.version`). No published
# digest was found for this tag: pinned by tag only.
DCGM = Image(
    "nvcr.io/nvidia/cloud-native/dcgm",
    "4.6.0-1-ubuntu24.04",
    None,
    "NVIDIA/gpu-operator deployments/gpu-operator/values.yaml at v26.7.0 (dcgm.version)",
)
# fio: the Alpine-based fio 3.13 image the kubestone and dbench storage benchmarks use. No published digest was
# found for this tag: pinned by tag only.
FIO = Image("docker.io/xridge/fio", "3.13", None, "xridge/kubestone docs (Fio benchmark, image xridge/fio:3.13)")
# busybox (httpd, wget, nc) for the tenancy network probes, and the shell of the FSx tenant-directory Job
# (components/aws/storage/fsx.py): the multi-arch index digest of busybox 1.36.1 as Docker Hub answered it
# (quoted with that date, 2026-10-03, in several public repositories).
BUSYBOX = Image(
    "docker.io/library/busybox",
    "1.36.1",
    "sha256:73aaf090f3d85aa34ee199857f03fa3a95c8ede2ffd4cc2cdb5b94e566b11662",
    "Docker Hub library/busybox 1.36.1 (index digest)",
)
ACCEPTANCE_IMAGES = (NCCL_TESTS_EFA, NCCL_TESTS_IB, DCGM, FIO, BUSYBOX)

# -- Cluster jobs --------------------------------------------------------------------------------------------
# kubectl for the burst backstop's CronJobs on the cloud worker (components/hybrid/burst_stop.py): the Kubernetes
# project's own image, at a release of the cluster's minor, CLUSTER_AUTOSCALER_APP's (kubectl supports one minor
# of skew either way: kubernetes.io/releases/version-skew-policy). Pinned by digest, so a pod start needs no pull
# policy of Always: no digest of the autoscaler's own patch was found; this one is the index digest of v1.34.1 as
# several public repositories pin it (e.g. FROM registry.k8s.io/kubectl:v1.34.1@sha256:59bafa07... in Dockerfiles).
KUBECTL = Image(
    "registry.k8s.io/kubectl",
    "v1.34.1",
    "sha256:59bafa07ff3a6d4b417e7633ddb9d79a9606ca98bf64bac080b3e65748669250",
    "registry.k8s.io/kubectl (Kubernetes releases; index digest)",
)
