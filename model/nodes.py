"""Node labels and taints of a pool: one place, used by AWS node groups, bare-metal node patches and Kueue
ResourceFlavors (so a flavor's nodeLabels always match the nodes). The keys live in model.conventions."""

from __future__ import annotations

from collections.abc import Iterable

from model.conventions import (
    DEDICATED_TENANT_LABEL,
    DEVICE_PLUGIN_CONFIG_LABEL,
    FABRIC_LABEL,
    GPU_PRESENT_LABEL,
    GPU_PRODUCT_LABEL,
    GPU_TAINT,
    LEAF_LABEL,
    MIG_CONFIG_LABEL,
    NVLINK_DOMAIN_LABEL,
    POOL_LABEL,
    RACK_LABEL,
    RAIL_LABEL,
    REMEDIATOR_LABEL,
    ROLE_LABEL,
    TENANT_NODE_LABEL,
    Taint,
    shared_pool_taint,
    tenant_taint,
)
from model.spec import EstateSpec, NodePool, Server


def device_plugin_config_name(pool: NodePool) -> str | None:
    """Name of the pool's time-slicing device-plugin config (None for whole GPUs and MIG)."""
    return pool.name if pool.sharing.mode == "time-slicing" else None


def pool_labels(spec: EstateSpec, pool: NodePool) -> dict[str, str]:
    """Labels every node of `pool` carries (beyond per-server topology labels)."""
    labels = {
        **pool.labels,
        POOL_LABEL: pool.name,
        ROLE_LABEL: pool.role,
        GPU_PRESENT_LABEL: "true",
        GPU_PRODUCT_LABEL: spec.pool_gpu_model(pool.name).id,
        REMEDIATOR_LABEL: pool.health.remediator,
    }
    if pool.fabric:
        labels[FABRIC_LABEL] = pool.fabric
    if pool.dedicated_to:
        labels[TENANT_NODE_LABEL] = pool.dedicated_to
        labels[DEDICATED_TENANT_LABEL] = pool.dedicated_to
    if pool.sharing.mode == "mig":
        labels[MIG_CONFIG_LABEL] = f"all-{pool.sharing.mig_profile}"
    else:
        labels[MIG_CONFIG_LABEL] = "all-disabled"
    config = device_plugin_config_name(pool)
    if config:
        labels[DEVICE_PLUGIN_CONFIG_LABEL] = config
    return labels


def pool_taints(pool: NodePool) -> list[Taint]:
    """The GPU taint on every GPU node, plus the tenant taint on dedicated pools and the shared-pool taint on
    time-sliced pools trusted tenants share."""
    taints = [GPU_TAINT]
    if pool.dedicated_to:
        taints.append(tenant_taint(pool.dedicated_to))
    if pool.sharing.shared_by:
        taints.append(shared_pool_taint(pool.name))
    return taints


def shared_pools(pools: Iterable[NodePool]) -> dict[str, list[str]]:
    """Time-sliced pools trusted tenants share, each with the tenants of its `sharing.shared_by`."""
    return {p.name: list(p.sharing.shared_by) for p in pools if p.sharing.shared_by}


def server_topology_labels(server: Server) -> dict[str, str]:
    labels = {RACK_LABEL: server.rack, LEAF_LABEL: server.leaf}
    if server.rail is not None:
        labels[RAIL_LABEL] = server.rail
    if server.nvlink_domain is not None:
        labels[NVLINK_DOMAIN_LABEL] = server.nvlink_domain
    return labels


# The CPU system node group of a created EKS cluster (components.aws.cluster): its size and root volume. One home,
# read by the cluster component and by the cost envelope (gpufleet.review.cost.bill).
SYSTEM_POOL_MIN, SYSTEM_POOL_DESIRED, SYSTEM_POOL_MAX = 2, 2, 4
SYSTEM_ROOT_VOLUME_GIB = 100
