"""The nodes of a cluster as the scheduler sees them: labels, taints, allocatable resources and how many exist.

- Cloud GPU nodes come from the plan's EKS node groups; owned GPU servers from their NodePatch objects with the
  inventory; other nodes from the system node group or the stack's `system_nodes`.
- Allocatable comes from the catalog and from what the cluster's own objects make the device plugins advertise:
  GPUs (MIG and time-slicing from the device-plugin and mig-parted configs), EFA interfaces, RDMA and SR-IOV
  devices. A device plugin advertises only on nodes its DaemonSet runs on.
- CPU and memory are counted where the catalog knows them, after the kubelet's reservations.
- Huge pages only where the estate pre-allocates them (EFA nodes, model.efa); elsewhere a node offers none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import cache
from typing import Any

import yaml

from gpufleet.engine.plan import PlanResource
from gpufleet.review.reality.first_up_nodes import node_group_node, stated_nodes
from gpufleet.review.reality.journeys import kueue, resources
from gpufleet.review.reality.journeys.core import ClusterView
from gpufleet.review.reality.scheduling import Node, fits
from model import catalog, efa, kinds
from model.conventions import (
    DEVICE_PLUGIN_CONFIG_LABEL,
    GPU_PRESENT_LABEL,
    GPU_RESOURCE,
    HOSTNAME_LABEL,
    MIG_CONFIG_LABEL,
    MIG_RESOURCE_PREFIX,
    POOL_LABEL,
    Taint,
)
from model.rdma import EFA_RESOURCE, HUGEPAGES_PREFIX, RDMA_RESOURCE_PREFIX
from model.spec import EstateSpec

INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"  # set by the kubelet on every node (well-known labels)
UNBOUNDED = 10_000  # nodes of a group the stack states without a count
# Resources every node has and the kubelet always accounts (the rest are extended resources a plugin advertises).
NODE_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pods")


def pod_requests(spec: dict[str, Any]) -> dict[str, Fraction]:
    """What one pod asks the scheduler for (resources.pod_requests: sidecars summed, init containers at their
    peak, a request defaulting to its limit), as exact numbers; zero requests left out."""
    return {k: Fraction(v) for k, v in resources.pod_requests(spec).items() if v > 0}


@dataclass(frozen=True)
class NodeShape:
    """Identical nodes of one pool or group: what each offers and how many there are.

    `exist` nodes are there to schedule on; up to `most` exist when `grows` (what adds them) acts. `allocatable`
    holds what each node offers; resources in `uncounted` are not checked (the stack does not say them)."""

    ref: str  # the object that brings the nodes: "NodeGroup/use1-h100-ng", "Node/gpu-r1-01"
    pool: str | None  # the gpufleet pool, None for system nodes
    node: Node
    allocatable: dict[str, Fraction]
    exist: int
    most: int
    grows: str = ""
    uncounted: frozenset[str] = frozenset()
    notes: tuple[str, ...] = ()
    instance: str = ""  # what one node is, for messages: "p5.48xlarge", "server gpu-r1-01"
    max_size: int = 0  # the group's max size, which only an autoscaler reaches (0: as `most`)
    per_pod: dict[str, int] = field(default_factory=dict)  # the most of a resource one container may get
    burst: bool = False  # a burst pool: its max is the open burst window's cap
    uncounted_prefixes: tuple[str, ...] = ()  # resources by prefix not checked: hugepages- on inventory servers

    def offers(self, resource: str) -> Fraction | None:
        """What one node offers of `resource`; None when it is not counted. Huge pages are counted where the estate
        pre-allocates them (EFA nodes) and are 0 on other node groups: nothing else reserves them. A bare-metal
        server's are not counted: its kernel is the operator's, not gpufleet's."""
        if resource in self.uncounted or resource.startswith(self.uncounted_prefixes):
            return None
        return self.allocatable.get(resource, Fraction(0))


@dataclass
class Devices:
    """What the cluster's device plugins advertise on a node, read from the cluster's own objects."""

    view: ClusterView
    _documents_of: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict, init=False, repr=False)

    def _documents(self, key: str) -> dict[str, dict[str, Any]]:
        """ConfigMap entries (by data key) whose YAML document has top-level `key`: `flags` for device-plugin
        configs, `mig-configs` for mig-parted layouts. Read once per key: every node asks."""
        if key in self._documents_of:
            return self._documents_of[key]
        out = self._documents_of[key] = {}
        for cm in self.view.of("ConfigMap"):
            for name, text in (cm.get("data") or {}).items():
                doc = _yaml(str(text))
                if isinstance(doc, dict) and key in doc:
                    out[str(name)] = doc
        return out

    def _default_config(self) -> str:
        """The device-plugin config of nodes without the config label: the ClusterPolicy's or the standalone
        chart's `config.default`."""
        policy = next(iter(self.view.of("ClusterPolicy")), None)
        if policy is not None:
            return str((((policy.get("spec") or {}).get("devicePlugin") or {}).get("config") or {}).get("default", ""))
        return str(((self.view.releases.get("nvidia-device-plugin") or {}).get("config") or {}).get("default", ""))

    def gpus(self, node: Node, gpus: int, host_slices: dict[str, int]) -> dict[str, Fraction]:
        """GPU resources the NVIDIA device plugin advertises on `node` with `gpus` GPUs.

        - MIG under the mixed strategy: `nvidia.com/mig-<profile>`; under single: `nvidia.com/gpu` per slice
          (GPU Operator docs, gpu-operator-mig, "single" and "mixed" strategies). The slices are the node's
          mig-parted layout, or `host_slices` where the hosts carry the layout (the standalone plugin).
        - time-slicing: `replicas` per GPU, named `<name>.shared` with renameByDefault (k8s-device-plugin README
          at the pinned tag, "Shared Access to GPUs").
        """
        if not self._gpu_plugin_runs(node):
            return {}
        device_config = self._device_config(node)
        strategy = str(((device_config or {}).get("flags") or {}).get("migStrategy") or "none")
        layouts = {k: v for doc in self._documents("mig-configs").values() for k, v in doc["mig-configs"].items()}
        layout = layouts.get(node.labels.get(MIG_CONFIG_LABEL, ""))
        slices = {
            str(p): int(n)
            for d in layout or []
            if d.get("mig-enabled")
            for p, n in (d.get("mig-devices") or {}).items()
        }
        slices = slices if layout is not None else host_slices
        if slices and strategy in ("single", "mixed"):
            if strategy == "single":
                return {GPU_RESOURCE: Fraction(gpus * sum(slices.values()))}
            return {f"{MIG_RESOURCE_PREFIX}{p}": Fraction(gpus * n) for p, n in slices.items()}
        sliced = ((device_config or {}).get("sharing") or {}).get("timeSlicing") or {}
        for r in sliced.get("resources") or []:
            if r.get("name") == GPU_RESOURCE:
                name = f"{GPU_RESOURCE}.shared" if sliced.get("renameByDefault") else GPU_RESOURCE
                return {name: Fraction(gpus * int(r.get("replicas") or 1))}
        return {GPU_RESOURCE: Fraction(gpus)}

    def gpu_per_pod(self, node: Node) -> dict[str, int]:
        """Time-slicing with failRequestsGreaterThanOne: the plugin fails the allocation of more than one shared
        GPU to one container (k8s-device-plugin README, "Shared Access to GPUs")."""
        sliced = ((self._device_config(node) or {}).get("sharing") or {}).get("timeSlicing") or {}
        if not sliced.get("failRequestsGreaterThanOne"):
            return {}
        names = [str(r.get("name")) for r in sliced.get("resources") or []]
        return {f"{n}.shared" if sliced.get("renameByDefault") else n: 1 for n in names}

    def _device_config(self, node: Node) -> dict[str, Any] | None:
        """The device-plugin config the node's label (or the default) selects."""
        configs = self._documents("flags")
        return configs.get(node.labels.get(DEVICE_PLUGIN_CONFIG_LABEL, self._default_config()))

    def _gpu_plugin_runs(self, node: Node) -> bool:
        """The GPU Operator runs the device plugin on nodes labelled nvidia.com/gpu.present=true that tolerate
        its ClusterPolicy's `daemonsets.tolerations`; the standalone plugin where its DaemonSet runs."""
        policy = next(iter(self.view.of("ClusterPolicy")), None)
        if policy is None:
            return self._plugin_runs("k8s-device-plugin", node)
        tolerations = ((policy.get("spec") or {}).get("daemonsets") or {}).get("tolerations") or []
        return node.labels.get(GPU_PRESENT_LABEL) == "true" and fits({"tolerations": tolerations}, node)

    def efa(self, node: Node, instance_type: str, fabric: str | None) -> dict[str, Fraction]:
        """EFA interfaces of an EFA pool's node, where the EFA device plugin's DaemonSet runs (the launch
        template attaches them: model.efa)."""
        if not fabric or not self._plugin_runs("aws-efa-k8s-device-plugin", node):
            return {}
        return {EFA_RESOURCE: Fraction(sum(1 for s in efa.efa_interfaces(instance_type) if s.is_efa))}

    def rdma(self, node: Node) -> dict[str, Fraction]:
        """RDMA shared devices: `rdmaHcaMax` of each configured resource ("Maximum number of RDMA resources that can
        be provided by the device plugin resource": k8s-rdma-shared-dev-plugin README, "RDMA Shared Device Plugin
        Configurations") on nodes the NicClusterPolicy's rdmaSharedDevicePlugin reaches, named
        `rdma/<resourceName>` (model.rdma)."""
        out: dict[str, Fraction] = {}
        for policy in self.view.of("NicClusterPolicy"):
            spec = policy.get("spec") or {}
            plugin = spec.get("rdmaSharedDevicePlugin") or {}
            placement = {
                "tolerations": spec.get("tolerations") or [],
                "affinity": {"nodeAffinity": spec.get("nodeAffinity")},
            }
            if not plugin or not fits(placement, node):
                continue
            doc = _yaml(str(plugin.get("config") or "{}")) or {}
            prefix = str(doc.get("resourcePrefix") or RDMA_RESOURCE_PREFIX)
            for r in doc.get("configList") or []:
                out[f"{prefix}/{r.get('resourceName')}"] = Fraction(int(r.get("rdmaHcaMax") or 0))
        return out

    def sriov(self, node: Node) -> dict[str, Fraction]:
        """SR-IOV virtual functions of each SriovNetworkNodePolicy whose nodeSelector matches the node."""
        out: dict[str, Fraction] = {}
        prefix = str(
            (self.view.releases.get("network-operator") or {}).get("sriovNetworkOperator", {}).get("resourcePrefix")
            or "nvidia.com"
        )
        for policy in self.view.of("SriovNetworkNodePolicy"):
            spec = policy.get("spec") or {}
            if fits({"nodeSelector": spec.get("nodeSelector") or {}, "tolerations": [{"operator": "Exists"}]}, node):
                name = f"{prefix}/{spec.get('resourceName')}"
                out[name] = out.get(name, Fraction(0)) + int(spec.get("numVfs") or 0)
        return out

    def _plugin_runs(self, image: str, node: Node) -> bool:
        for ds in self.view.of("DaemonSet"):
            pod = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
            images = (str(c.get("image", "")).rsplit("/", 1)[-1].split(":")[0] for c in pod.get("containers") or [])
            if image in images and fits(pod, node):
                return True
        return False


@cache
def _yaml(text: str) -> Any:
    """The YAML document in `text` (None when it is not YAML), parsed once per text: callers only read it."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None


def eks_reserved(instance: catalog.InstanceType) -> dict[str, Fraction]:
    """CPU and memory an EKS AL2023 node keeps from pods.

    - kube-reserved CPU: 6% of the first core, 1% of the second, 0.5% of the next two, 0.25% of the rest;
      memory: 11 MiB per pod plus 255 MiB (awslabs/amazon-eks-ami nodeadm/internal/kubelet/config.go,
      getCPUMillicoresToReserve and getMemoryMebibytesToReserve).
    - the 100Mi memory.available hard-eviction threshold (the same file's kubelet defaults).
    - max pods at the ceiling EKS applies, 110 up to 30 vCPUs and 250 above (amazon-eks-ami
      templates/al2/runtime/max-pods-calculator.sh, MAX_POD_CEILING_FOR_*), so memory is never overstated.
    """
    milli = instance.vcpus * 1000
    cpu = Fraction(0)
    for start, end, rate in ((0, 1000, 600), (1000, 2000, 100), (2000, 4000, 50), (4000, milli, 25)):
        cpu += Fraction(max(0, min(milli, end) - start) * rate, 10_000)
    max_pods = 250 if instance.vcpus > 30 else 110
    memory_mib = 11 * max_pods + 255 + 100
    return {"cpu": cpu / 1000, "memory": Fraction(memory_mib * 2**20)}


def _catalog_cpu_memory(instance: catalog.InstanceType) -> dict[str, Fraction]:
    reserved = eks_reserved(instance)
    return {
        "cpu": instance.vcpus - reserved["cpu"],
        "memory": Fraction(instance.memory_mib * 2**20) - reserved["memory"],
    }


def _node_from_object(obj: dict[str, Any]) -> Node:
    meta = obj.get("metadata") or {}
    name = str(meta.get("name"))
    labels = {"kubernetes.io/os": "linux", HOSTNAME_LABEL: name, **(meta.get("labels") or {})}
    taints = tuple(Taint.of(t) for t in (obj.get("spec") or {}).get("taints") or [])
    return Node("plan", name, labels, taints)


def _host_slices(spec: EstateSpec, pool: str | None) -> dict[str, int]:
    """The MIG slices per GPU of a MIG pool, as the catalog gives its profile (what hosts partitioned outside the
    GPU Operator carry)."""
    if pool is None or pool not in {p.name for _, p in spec.pools()}:
        return {}
    sharing = spec.pool(pool).sharing
    profile = spec.pool_gpu_model(pool).mig_profile(sharing.mig_profile or "") if sharing.mode == "mig" else None
    return {profile.name: profile.per_gpu} if profile else {}


def cluster_nodes(spec: EstateSpec, view: ClusterView) -> list[NodeShape]:
    """Every kind of node of the cluster `view`: GPU node groups and servers, then the other nodes.

    Derived once per view and estate: every walk places its pods on the same nodes."""
    kept = view.derived.get("nodes")
    if kept is None or kept[0] is not spec:
        kept = view.derived["nodes"] = (spec, _cluster_nodes(spec, view))
    return list(kept[1])


def _cluster_nodes(spec: EstateSpec, view: ClusterView) -> list[NodeShape]:
    devices = Devices(view)
    shapes = [_group_shape(spec, view, devices, g.resource, g.autoscaled) for g in view.node_groups]
    servers = {s.hostname: s for site in spec.sites for s in kinds.of(site).servers}
    for obj in view.of("Node"):
        node = _node_from_object(obj)
        server = servers.get(node.name)
        pool = node.labels.get(POOL_LABEL)
        gpus = server.gpu_count if server else 0
        model = catalog.gpu_model(server.gpu_model) if server else None
        allocatable = {
            **devices.gpus(node, gpus, _host_slices(spec, pool)),
            **devices.rdma(node),
            **devices.sriov(node),
        }
        shapes.append(
            NodeShape(
                f"Node/{node.name}", pool, node, allocatable, 1, 1,
                uncounted=frozenset(("cpu", "memory")), uncounted_prefixes=(HUGEPAGES_PREFIX,),
                per_pod=devices.gpu_per_pod(node),
                notes=("the inventory does not state CPUs, memory or huge pages (gpufleet does not configure a "
                       "bare-metal host's kernel): not counted",),
                instance=f"server {node.name} ({gpus} x {model.id if model else 'GPU'})",
            )
        )  # fmt: skip
    stated = stated_nodes(spec, view.site or "", view.name) if not view.node_groups else None
    for n in stated.nodes() if stated else []:
        shapes.append(
            NodeShape(
                f"system_nodes/{n.name}", None, n, {}, UNBOUNDED, UNBOUNDED,
                uncounted=frozenset(NODE_RESOURCES), notes=("stated nodes: count and size not stated",),
                instance=n.name,
            )
        )  # fmt: skip
    return shapes


def _group_shape(spec: EstateSpec, view: ClusterView, devices: Devices, r: PlanResource, autoscaled: bool) -> NodeShape:
    """An EKS node group's nodes: the pool's instance type from the catalog, its devices, how many there are."""
    node = node_group_node(r)
    scaling = r.inputs.get("scalingConfig") or {}
    desired, most = int(scaling.get("desiredSize") or 0), int(scaling.get("maxSize") or 0)
    name = node.labels.get(POOL_LABEL)
    ref = f"NodeGroup/{r.name}"
    scaler = "the cluster-autoscaler" if autoscaled and "cluster-autoscaler" in view.releases else ""
    site = kinds.of(spec.site_of_pool(name)).aws_site if name else None
    pool = next((p for p in site.node_pools if p.name == name), None) if site else None
    if pool is None:  # the system node group: its instance type is the cluster component's, not a fact here
        return NodeShape(ref, None, node, {}, desired, most if scaler else desired, scaler,
                         frozenset(NODE_RESOURCES), ("system nodes: size not counted",), "system node")  # fmt: skip
    instance = pool.instance
    node = Node(node.source, node.name, {INSTANCE_TYPE_LABEL: instance.name, **node.labels}, node.taints)
    allocatable = {
        **_catalog_cpu_memory(instance),
        **devices.gpus(node, instance.gpu_count, _host_slices(spec, pool.name)),
        **devices.efa(node, instance.name, pool.fabric),
    }
    if pool.fabric:  # an EFA node: its launch template pre-allocates huge pages, which leave allocatable memory
        for name, size in efa.efa_node_hugepages().items():
            allocatable[name] = Fraction(size)
            allocatable["memory"] -= size
    notes = []
    if pool.burst:  # the group keeps a max of 1 when idle (EKS's least); the window's cap is the Cohort's quota
        most = min(most, window_nodes(view, pool.name, instance.vcpus))
        notes.append(burst_note(spec, view, desired, most if scaler else 0))
    block = pool.capacity.block if pool.capacity.type == "capacity-block" else None
    if pool.capacity.type == "capacity-block":
        end = block.end_at() if block else None
        when = f" ({block.start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC)" if block and block.start and end else ""
        notes.append(f"a capacity-block pool: its nodes run only within the block{when}")
    return NodeShape(
        ref, pool.name, node, allocatable, desired, most if scaler else desired, scaler,
        notes=tuple(notes), instance=instance.name, max_size=most, per_pod=devices.gpu_per_pod(node), burst=pool.burst,
    )  # fmt: skip


def window_nodes(view: ClusterView, pool: str, vcpus: int) -> int:
    """The open burst window's cap on `pool` in nodes: the burst Cohort's CPU quota for the pool's flavor over one
    node's vCPUs (components.hybrid.burst_queues: the window's nodes x the instance's; zero outside windows)."""
    for cohort in view.of("Cohort"):
        for group in (cohort.get("spec") or {}).get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                if flavor.get("name") != pool:
                    continue
                for r in flavor.get("resources") or []:
                    if r.get("name") == "cpu":
                        return int(resources.quantity(r.get("nominalQuota") or 0)) // vcpus
    return 0


def burst_note(spec: EstateSpec, view: ClusterView, exist: int, cap: int) -> str:
    """What a burst pool's nodes are: none without a window; with one, what AWS provisioning guarantees a gang.

    The cluster-autoscaler raises the Auto Scaling group by the nodes pending pods need; on AWS that is a plain
    increase, not all or none (AtomicIncreaseSize "is not implemented", cloudprovider/aws/aws_cloud_provider.go at
    cluster-autoscaler at the pinned tag), so EC2 starts the nodes one by one and may start only some. Kueue's
    waitForPodsReady evicts and requeues a gang whose pods do not all run in time; on the burst site that timeout
    holds the nodes' boot time (`burst.node_boot_minutes`, model.queues.pods_ready_timeout)."""
    if cap == 0:
        return "a burst pool: its nodes exist only while a burst window is open, up to the window's nodes"
    cfg = kueue.config(view)
    timeout = cfg.pods_ready_timeout if cfg is not None else None
    boot = spec.burst.node_boot_minutes if spec.burst is not None else None
    waits = (
        f"Kueue waits {timeout} for all of a gang's pods to run (waitForPodsReady, {boot} min of it for the nodes' "
        "boot: burst.node_boot_minutes), then evicts and requeues the gang"
        if timeout
        else "no waitForPodsReady timeout evicts a gang whose nodes do not all start"
    )
    return (
        f"a burst pool at {exist} nodes: the open burst window lets the cluster-autoscaler add up to {cap} for "
        f"pending pods; on AWS it adds them one by one, not all or none, and {waits}"
    )
