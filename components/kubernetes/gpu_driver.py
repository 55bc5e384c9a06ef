"""The NVIDIA driver on bare metal, as the GPU Operator installs it: one NVIDIADriver per set of nodes.

- GPUDirect RDMA is set per node set, so gpufleet manages the driver through NVIDIADriver resources, not the
  ClusterPolicy's single `driver` block.
- RDMA is off by default: its nvidia-peermem container needs DOCA-OFED, which only fabric nodes get.
- Each InfiniBand or RoCE fabric with pools gets its own NVIDIADriver, with RDMA on.
- Every operator-managed site uses this mode, fabric or not, so adding a fabric later never switches it.
- With `driver_managed_by: host` the operator installs no driver. A site with a fabric then states how the host
  provides GPUDirect RDMA (`kubernetes.gpudirect_rdma`, checked by the preflight).
"""

from __future__ import annotations

from typing import Any

from components.kubernetes import placement
from model import kinds, versions
from model.conventions import FABRIC_LABEL
from model.spec import InfinibandFabric, ParallelFsTier, RoceFabric, Site

DRIVER_REPOSITORY = "nvcr.io/nvidia"  # driver.repository / driver.image in the chart's values.yaml
DRIVER_IMAGE = "driver"
MANAGER = {"repository": "nvcr.io/nvidia/cloud-native", "image": "k8s-driver-manager"}  # driver.manager
GDS = {"repository": "nvcr.io/nvidia/cloud-native", "image": "nvidia-fs"}  # gds.repository / gds.image
DRAIN_TIMEOUT_SECONDS = 900  # long enough for a checkpointing training pod to exit; bounded so drains end
POD_DELETION = {"force": False, "timeoutSeconds": 300, "deleteEmptyDir": True}
DRAIN = {"enable": True, "force": False, "timeoutSeconds": DRAIN_TIMEOUT_SECONDS, "deleteEmptyDir": True}


def rdma_fabrics(site: Site) -> list[InfinibandFabric | RoceFabric]:
    """The site's InfiniBand / RoCE fabrics (GPUDirect RDMA and the Network Operator need them)."""
    return [f for f in site.fabrics if isinstance(f, InfinibandFabric | RoceFabric)]


def operator_installs_driver(site: Site) -> bool:
    """The GPU Operator's driver container owns the driver (model.kinds: not the node or host image)."""
    return kinds.of(site).driver == "operator"


def gds_enabled(site: Site) -> bool:
    return (
        operator_installs_driver(site)  # nvidia-fs runs beside the operator's driver container
        and bool(rdma_fabrics(site))
        and any(isinstance(t, ParallelFsTier) for t in site.storage)
    )


def driver_version(site: Site) -> str:
    return site.kubernetes.driver_version or versions.GPU_DRIVER


def driver_values(site: Site) -> dict[str, Any]:
    """The GPU Operator chart's `driver` values."""
    if not operator_installs_driver(site):
        # EKS NVIDIA AMIs, or the host image's driver (the preflight checks it): the operator installs none.
        return {"enabled": False}
    return {
        "enabled": True,
        # NVIDIADriver management (CRD crds/nvidia.com_nvidiadrivers.yaml of the GPU Operator chart at the pinned
        # tag). Used on every operator-managed site: switching a running cluster between ClusterPolicy and
        # NVIDIADriver management restarts every driver pod at once (GPU Operator docs, "NVIDIA GPU Driver Custom
        # Resource Definition"). `deployDefaultCR` renders the default NVIDIADriver (templates/nvidiadriver.yaml).
        "nvidiaDriverCRD": {"enabled": True, "deployDefaultCR": True},
        "version": driver_version(site),
        # The default NVIDIADriver: nodes off every fabric. `rdma.enabled` gives every driver pod the nvidia-peermem
        # container, which loads only against the DOCA-OFED driver the Network Operator installs; the
        # NicClusterPolicy installs that only on InfiniBand / RoCE fabric nodes (network_operator.py). Elsewhere
        # (the onprem example's `dev` pool) the driver pod would wait for it forever.
        "rdma": {"enabled": False, "useHostMofed": False},
        "upgradePolicy": {
            "autoUpgrade": True,
            "maxParallelUpgrades": 1,
            "maxUnavailable": 1,
            "gpuPodDeletion": POD_DELETION,
            "drain": DRAIN,  # force off: never evict pods no controller will recreate
        },
    }


def fabric_driver_name(fabric: InfinibandFabric | RoceFabric) -> str:
    return f"gpufleet-{fabric.name}"


def fabric_driver_specs(site: Site) -> dict[str, dict[str, Any]]:
    """NVIDIADriver name -> spec for each RDMA fabric with pools: the site's driver with GPUDirect RDMA (the
    nvidia-peermem container, against the Network Operator's DOCA-OFED: `useHostMofed: false`) on the fabric's
    nodes only. Empty where the operator installs no driver."""
    if not operator_installs_driver(site):
        return {}
    specs = {}
    for fabric in rdma_fabrics(site):
        pools = [p for p in site.node_pools if p.fabric == fabric.name]
        if not pools:
            continue
        spec: dict[str, Any] = {
            "driverType": "gpu",
            # The CRD's `default` is "the fallback driver ... for GPU nodes that do not match any non-default
            # NVIDIADriver nodeSelector", so each node gets exactly one driver.
            "default": False,
            "nodeSelector": {FABRIC_LABEL: fabric.name},
            "repository": DRIVER_REPOSITORY,
            "image": DRIVER_IMAGE,
            "version": driver_version(site),
            "kernelModuleType": "auto",
            "usePrecompiled": False,
            "manager": {**MANAGER, "version": versions.GPU_DRIVER_MANAGER},
            "rdma": {"enabled": True, "useHostMofed": False},
            "tolerations": placement.tolerations(pools),
            "upgradePolicy": {
                "autoUpgrade": True,
                "maxParallelUpgrades": 1,
                "maxUnavailable": 1,
                "waitForCompletion": {"timeoutSeconds": 0},
                "podDeletion": POD_DELETION,
                "drain": DRAIN,
            },
        }
        if gds_enabled(site):
            spec["gds"] = {"enabled": True, **GDS, "version": versions.GDS_DRIVER}
        specs[fabric_driver_name(fabric)] = spec
    return specs
