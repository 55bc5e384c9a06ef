"""Node labels and taints of a pool: one place, used by AWS node groups, bare-metal node patches and Kueue
ResourceFlavors (so a flavor's nodeLabels always match the nodes)."""

from __future__ import annotations

from dataclasses import dataclass

from components.model.spec import AwsNodePool, BaremetalNodePool, EstateSpec, Server

POOL_LABEL = "gpufleet.io/pool"
ROLE_LABEL = "gpufleet.io/role"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
GPU_PRODUCT_LABEL = "gpufleet.io/gpu-model"
TENANT_NODE_LABEL = "node-restriction.kubernetes.io/tenant"  # kubelets cannot set node-restriction labels
# The tenant a node is dedicated to, as Kueue flavors and admission policies select it. It is also the cost
# label (components.model.tags: `shared` on shared nodes). EKS node groups cannot carry TENANT_NODE_LABEL (reserved
# kubernetes.io/ prefix), so this label is the one selector that exists on every site.
DEDICATED_TENANT_LABEL = "gpufleet.io/tenant"
MIG_CONFIG_LABEL = "nvidia.com/mig.config"  # read by the MIG manager
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"  # selects a named device-plugin config
RACK_LABEL = "topology.gpufleet.io/rack"
LEAF_LABEL = "topology.gpufleet.io/leaf"
RAIL_LABEL = "topology.gpufleet.io/rail"
HOSTNAME_LABEL = "kubernetes.io/hostname"
TOPOLOGY_LEVELS = (RACK_LABEL, LEAF_LABEL, HOSTNAME_LABEL)  # Kueue Topology levels, widest first
EFA_LABEL = "vpc.amazonaws.com/efa.present"
FABRIC_LABEL = "gpufleet.io/fabric"


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str  # NoSchedule | NoExecute | PreferNoSchedule

    def as_k8s(self) -> dict[str, str]:
        return {"key": self.key, "value": self.value, "effect": self.effect}

    def toleration(self) -> dict[str, str]:
        return {"key": self.key, "operator": "Equal", "value": self.value, "effect": self.effect}


GPU_TAINT = Taint("nvidia.com/gpu", "present", "NoSchedule")


def device_plugin_config_name(pool: AwsNodePool | BaremetalNodePool) -> str | None:
    """Name of the pool's time-slicing device-plugin config (None for whole GPUs and MIG)."""
    return pool.name if pool.sharing.mode == "time-slicing" else None


def pool_labels(spec: EstateSpec, pool: AwsNodePool | BaremetalNodePool) -> dict[str, str]:
    """Labels every node of `pool` carries (beyond per-server topology labels)."""
    labels = {
        **pool.labels,
        POOL_LABEL: pool.name,
        ROLE_LABEL: pool.role,
        GPU_PRESENT_LABEL: "true",
        GPU_PRODUCT_LABEL: spec.pool_gpu_model(pool.name).id,
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


def pool_taints(pool: AwsNodePool | BaremetalNodePool) -> list[Taint]:
    """The GPU taint on every GPU node, plus the tenant taint on dedicated pools."""
    taints = [GPU_TAINT]
    if pool.dedicated_to:
        taints.append(Taint("tenant", pool.dedicated_to, "NoSchedule"))
    return taints


def server_topology_labels(server: Server) -> dict[str, str]:
    labels = {RACK_LABEL: server.rack, LEAF_LABEL: server.leaf}
    if server.rail is not None:
        labels[RAIL_LABEL] = server.rail
    return labels
