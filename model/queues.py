"""What gpufleet asks of Kueue on a site, as data: flavors, topologies, ClusterQueue specs and the controller
Configuration. The Pulumi component (components/kubernetes/kueue.py) creates them; verify and review read them.

- Naming contract, which other components rely on: ResourceFlavor = pool name; ClusterQueue and LocalQueue =
  tenant name; Topology = fabric name; the cohort = the estate name (`metadata.name`).
- Kueue API facts are from kubernetes-sigs/kueue at the tag of versions.KUEUE (apis/kueue/v1beta2/*_types.go,
  pkg/webhooks). Each sits beside the code it shapes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from model import conventions, dra, kinds, nodes, provisioning
from model.frameworks import DEFAULT_FRAMEWORKS
from model.frameworks import enabled as enabled_frameworks
from model.spec import AwsNodePool, EstateSpec, NodePool, Site, Tenant

KUEUE_API = "kueue.x-k8s.io/v1beta2"  # a ClusterQueue joins a cohort through `spec.cohortName` (v1beta1: `cohort`)
MANAGED_NAMESPACE_LABEL = conventions.TENANT_LABEL
"""Tenant namespaces carry `tenant=<id>`; Kueue manages jobs without a queue name only in such namespaces."""
DEFAULT_LOCAL_QUEUE = "default"
"""Kueue (LocalQueueDefaulting, ungated in v0.19) sends jobs and pods without a queue-name label in a managed
namespace to the LocalQueue named `default` there; each tenant's points at the tenant's ClusterQueue."""
FAIR_SHARING = True
MULTIKUEUE_INCREMENTAL_DISPATCHER = "kueue.x-k8s.io/multikueue-dispatcher-incremental"
WAIT_FOR_PODS_READY_TIMEOUT = "10m"  # pods starting on nodes that exist
WAIT_FOR_PODS_RECOVERY_TIMEOUT = "3m"
# The chart default's reconciler concurrency and API client limits (charts/kueue/values.yaml at the pinned tag,
# managerConfig.controllerManagerConfigYaml), kept when gpufleet replaces that Configuration: without them every
# reconciler runs one at a time.
CHART_CONTROLLER = {
    "groupKindConcurrency": {
        "Job.batch": 5,
        "Pod": 5,
        "Workload.kueue.x-k8s.io": 10,
        "LocalQueue.kueue.x-k8s.io": 5,
        "ClusterQueue.kueue.x-k8s.io": 5,
        "ResourceFlavor.kueue.x-k8s.io": 1,
    }
}
CHART_CLIENT_CONNECTION = {"qps": 300, "burst": 500}

Pool = NodePool
Quantity = int | str


def is_burst(pool: Pool) -> bool:
    return isinstance(pool, AwsNodePool) and pool.burst


def gpu_resource_name(site: Site, pool: Pool) -> str:
    """The extended resource a pool's GPUs are advertised as: per MIG profile under mig_strategy mixed."""
    if pool.sharing.mode == "mig" and site.kubernetes.mig_strategy == "mixed":
        return f"{conventions.MIG_RESOURCE_PREFIX}{pool.sharing.mig_profile}"
    return conventions.GPU_RESOURCE


def scheduled_pools(site: Site) -> list[Pool]:
    """Pools of the site Kueue schedules onto here (burst pools belong to the MultiKueue wiring)."""
    return [p for p in site.node_pools if not is_burst(p)]


def site_gpu_quota(site: Site, tenant: Tenant) -> dict[str, int]:
    """The tenant's nominal GPU units per pool of this site (pools with a positive quota only)."""
    names = {p.name for p in scheduled_pools(site)}
    return {pool: n for pool, n in tenant.gpu_quota.items() if pool in names and n > 0}


def tenants_on_site(spec: EstateSpec, site: Site) -> list[Tenant]:
    """Tenants with GPU quota on the site: each gets a namespace, a ClusterQueue and a LocalQueue here."""
    return [t for t in spec.tenants if site_gpu_quota(site, t)]


def tenant_flavors(site: Site, tenant: Tenant) -> list[Pool]:
    """Pools a tenant's ClusterQueue lists: shared pools (a time-sliced one only if it names the tenant) and pools
    dedicated to it; untrusted: dedicated only."""
    pools = scheduled_pools(site)
    if tenant.trust == "untrusted":
        return [p for p in pools if p.dedicated_to == tenant.name]
    # A shared time-sliced pool serves only the tenants it names (sharing.shared_by), not the whole cohort.
    return [
        p
        for p in pools
        if p.dedicated_to in (None, tenant.name) and (not p.sharing.shared_by or tenant.name in p.sharing.shared_by)
    ]


def _fabric_pools(site: Site, fabric: str) -> list[Pool]:
    return [p for p in scheduled_pools(site) if p.fabric == fabric]


def fabric_levels(site: Site, fabric: str) -> tuple[str, ...]:
    """The levels every node of the fabric's scheduled pools carries, widest first (the longest common prefix of
    their kinds' `pool_topology_levels`): its Topology's levels above the hostname."""
    facts = kinds.of(site)
    shared: list[str] = []
    for level in zip(*(facts.pool_topology_levels(p.name) for p in _fabric_pools(site, fabric)), strict=False):
        if len(set(level)) > 1:
            break
        shared.append(level[0])
    return tuple(shared)


def pool_topology(site: Site, pool: Pool) -> tuple[str, tuple[str, ...]] | None:
    """The Topology a fabric pool's flavor names and its levels above the hostname; None off a fabric or where
    the pool's nodes carry no network labels.

    Naming contract: the fabric's Topology (named after it) has the levels all its pools share; a pool with more
    (an NVLink clique, a rail the others lack) gets its own, `<fabric>-<pool>`."""
    if not pool.fabric:
        return None
    levels = kinds.of(site).pool_topology_levels(pool.name)
    if not levels:
        return None
    shared = fabric_levels(site, pool.fabric)
    return (pool.fabric, shared) if levels == shared else (f"{pool.fabric}-{pool.name}", levels)


def topology_fabrics(site: Site) -> list[str]:
    """Fabrics with scheduled pools on a site whose nodes carry network labels: Kueue gets a Topology each."""
    return sorted({p.fabric for p in scheduled_pools(site) if p.fabric and pool_topology(site, p)})


def schedules_by_topology(site: Site) -> bool:
    """Every scheduled flavor is topology-aware: on bare metal, and on an EKS site with a fabric pool whose nodes
    carry EKS's network labels. Its ClusterQueues are then TAS-only (`flavor_topology`)."""
    return kinds.of(site).has_topology_labels or bool(topology_fabrics(site))


# A pod template's ask to run within one domain of a level when it fits (Kueue, apis/kueue/v1beta2/
# topology_types.go at versions.KUEUE): the canonical gang sets it on fabric pools.
PREFERRED_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-preferred-topology"
HOSTS_TOPOLOGY = "gpufleet-hosts"  # hostname only: off-fabric flavors of a site that schedules by topology


def flavor_topology(site: Site, pool: Pool) -> str | None:
    """The Topology of a pool's flavor: its fabric's (`pool_topology`); on a site that schedules by topology
    `HOSTS_TOPOLOGY` off a fabric; elsewhere none, and none on a burst pool (MultiKueue's flavors).

    The CRD refuses dropping or changing a topologyName in place (`!has(oldSelf.topologyName) ||
    (has(self.topologyName) && ...)`, apis/kueue/v1beta2/resourceflavor_types.go at versions.KUEUE), so a flavor
    whose Topology changes is replaced (`flavor_replaced_on`). A bare-metal site's flavors stay TAS when its last
    fabric pool leaves its fabric; an EKS site's drop their Topology, each replaced, once it has no fabric pool
    whose nodes carry EKS's layers (`schedules_by_topology`).

    Kueue implies a topology request for a pod set only on a ClusterQueue whose flavors are all TAS; one mixing TAS
    and other flavors refuses a pod set without a request on the TAS ones ("supports only
    TopologyAwareScheduling"; kueue at versions.KUEUE, tas_flavorassigner.go checkPodSetAndFlavorMatchForTAS,
    isTASImplied). So a job written without Kueue's annotations still runs on a site that schedules by topology."""
    if is_burst(pool):
        return None
    found = pool_topology(site, pool)
    if found:
        return found[0]
    return HOSTS_TOPOLOGY if schedules_by_topology(site) else None


def topology_request(site: Site, pool: Pool) -> dict[str, str]:
    """A gang's pod-template annotations: preferred at its fabric Topology's narrowest level above single nodes, so
    Kueue packs it there and goes a level up when it does not fit (topology_aware_scheduling.md, "User-facing
    APIs"); none where the flavor names no fabric Topology."""
    found = pool_topology(site, pool)
    if found is None or flavor_topology(site, pool) is None:
        return {}
    return {PREFERRED_TOPOLOGY_ANNOTATION: found[1][-1]}


def provisioned_pools(site: Site) -> list[Pool]:
    """Scheduled pools whose flavor is topology-aware and whose nodes the autoscaler adds (min < max): Kueue places
    a TAS pod set on Ready nodes only ("Capacity calculation"), so their flavors need the ProvisioningRequest check
    (model.provisioning), after which Kueue assigns the topology on the new nodes ("ClusterAutoscaler support")."""
    return [
        p
        for p in scheduled_pools(site)
        if isinstance(p, AwsNodePool) and p.autoscaled and flavor_topology(site, p) is not None
    ]


def site_topologies(site: Site) -> dict[str, dict[str, Any]]:
    """Topology name -> spec of every Topology the site's flavors name."""
    out: dict[str, dict[str, Any]] = {}
    for p in scheduled_pools(site):
        if (name := flavor_topology(site, p)) is None:
            continue
        found = pool_topology(site, p)
        out[name] = topology_spec(found[1]) if found else hosts_topology_spec()
    return dict(sorted(out.items()))


def resource_flavor_spec(site: Site, pool: Pool) -> dict[str, Any]:
    """Flavor of one pool: its pool label (and tenant label when dedicated) and tolerations for its taints.

    Kueue injects nodeLabels as a nodeSelector and adds the tolerations to every pod it admits on this flavor,
    which is what pins a dedicated tenant's pods to its tainted nodes. Kueue's fields: `nodeLabels`,
    `nodeTaints`, `tolerations` (at most 8), `topologyName` (`flavor_topology`; needs a nodeLabel).
    """
    labels = {conventions.POOL_LABEL: pool.name}
    if pool.dedicated_to:
        labels[conventions.DEDICATED_TENANT_LABEL] = pool.dedicated_to
    spec: dict[str, Any] = {
        "nodeLabels": labels,
        "tolerations": [t.toleration() for t in nodes.pool_taints(pool)],
    }
    if topology := flavor_topology(site, pool):
        spec["topologyName"] = topology
    return spec


# What the API server refuses to change on a ResourceFlavor once it has a topologyName (the CRD's
# x-kubernetes-validations, apis/kueue/v1beta2/resourceflavor_types.go at versions.KUEUE: "topologyName is
# immutable when topologyName is set", and likewise nodeLabels and tolerations). Each rule starts
# `!has(oldSelf.topologyName) ||`: a flavor without one may change anything, and gain a topologyName, in place.
FLAVOR_IMMUTABLE_WITH_TOPOLOGY = ("spec.nodeLabels", "spec.tolerations")


def flavor_replaced_on(spec: dict[str, Any]) -> list[str]:
    """The input paths whose change replaces a flavor of `spec` (resource_flavor_spec), on every site: its
    topologyName always, and while it has one its nodeLabels and tolerations. A set topologyName can neither
    change nor go in place, and Pulumi replaces on any diff of a listed path, an added or removed key included, so
    it cannot tell a flavor gaining its first topology (allowed in place) from one moving or dropping it: such a
    flavor is replaced too. A flavor that has and keeps no topology changes in place."""
    return ["spec.topologyName", *(FLAVOR_IMMUTABLE_WITH_TOPOLOGY if spec.get("topologyName") else ())]


def topology_spec(levels: Sequence[str] = conventions.TOPOLOGY_LEVELS[:-1]) -> dict[str, Any]:
    """Topology `levels[].nodeLabel`, widest first, then `kubernetes.io/hostname`: Kueue allows it only as the last
    level, and a lowest level of single nodes lets Kueue assign each pod its node."""
    return {"levels": [{"nodeLabel": label} for label in (*levels, conventions.HOSTNAME_LABEL)]}


def hosts_topology_spec() -> dict[str, Any]:
    """A Topology of single nodes (`kubernetes.io/hostname` alone), for pools whose nodes carry no rack or leaf."""
    return {"levels": [{"nodeLabel": conventions.HOSTNAME_LABEL}]}


@dataclass(frozen=True)
class Quota:
    nominal: Quantity
    borrowing_limit: Quantity | None = None
    lending_limit: Quantity | None = None

    def as_k8s(self, resource: str) -> dict[str, Any]:
        out: dict[str, Any] = {"name": resource, "nominalQuota": self.nominal}
        if self.borrowing_limit is not None:
            out["borrowingLimit"] = self.borrowing_limit
        if self.lending_limit is not None:
            out["lendingLimit"] = self.lending_limit
        return out


@dataclass(frozen=True)
class FlavorQuotas:
    flavor: str
    resources: Mapping[str, Quota] = field(default_factory=dict)


def covered_resources(gpu_resources: Sequence[str]) -> list[str]:
    """cpu, memory, nvidia.com/gpu, then MIG resource names (sorted); Kueue wants this order in every flavor."""
    migs = sorted({r for r in gpu_resources if r != conventions.GPU_RESOURCE})
    return ["cpu", "memory", conventions.GPU_RESOURCE, *migs]


def cluster_queue_spec(
    *,
    namespace: str | None,
    cohort: str,
    covered: Sequence[str],
    flavors: Sequence[FlavorQuotas],
    admission_checks: Mapping[str, Sequence[str]] | None = None,
    fair_sharing: bool = FAIR_SHARING,
    borrow_preempt_max_priority: int | None = None,
    stop_policy: str | None = None,
) -> dict[str, Any]:
    """A ClusterQueue spec: one resource group over `covered`, the flavors in order of preference. Tenant and
    MultiKueue burst queues are both built here.

    `namespace` pins the queue to one namespace (None admits from every namespace, for MultiKueue workers); an
    empty `cohort` leaves the queue out of every cohort. `stop_policy` Hold stops new admissions and lets admitted
    workloads run; HoldAndDrain also evicts them (apis/kueue/v1beta2/clusterqueue_types.go, StopPolicy).
    A resource a flavor does not list gets a nominal quota of 0. Preemption: reclaim lent quota from any
    workload in the cohort, preempt lower priorities inside the queue, and (classical preemption only) let a
    borrowing workload preempt lower-priority work elsewhere in the cohort, up to
    `borrow_preempt_max_priority` (e.g. the batch priority value) when given.

    Kueue's rules: `coveredResources` and each flavor's `resources[]` list the same resources in the same order; a
    flavor appears in one resource group only; `lendingLimit` must not exceed `nominalQuota`; borrowing and
    lending limits need a cohort. `preemption.borrowWithinCohort` is classical preemption only: with fair sharing
    on, Kueue ignores it (pkg/scheduler/preemption/preemption.go getTargets; site docs concepts/preemption.md), so
    it is set only when fair sharing is off. `admission_checks`: check name -> its `onFlavors` (model.provisioning).
    """
    preemption: dict[str, Any] = {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    if not fair_sharing:
        borrow: dict[str, Any] = {"policy": "LowerPriority"}
        if borrow_preempt_max_priority is not None:
            borrow["maxPriorityThreshold"] = borrow_preempt_max_priority
        preemption["borrowWithinCohort"] = borrow
    spec: dict[str, Any] = {
        **({"cohortName": cohort} if cohort else {}),
        "namespaceSelector": {"matchLabels": {conventions.NAMESPACE_NAME_LABEL: namespace}} if namespace else {},
        "queueingStrategy": "BestEffortFIFO",
        "resourceGroups": [
            {
                "coveredResources": list(covered),
                "flavors": [
                    {
                        "name": f.flavor,
                        "resources": [f.resources.get(r, Quota(0)).as_k8s(r) for r in covered],
                    }
                    for f in flavors
                ],
            }
        ],
        "preemption": preemption,
    }
    if admission_checks:
        spec["admissionChecksStrategy"] = provisioning.strategy(admission_checks)
    if stop_policy is not None:
        spec["stopPolicy"] = stop_policy
    return spec


def tenant_cluster_queue_spec(
    spec: EstateSpec, site: Site, tenant: Tenant, closed: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """The tenant's ClusterQueue on a site, its GPU quota per flavor from `tenant.gpu_quota`.

    GPUs: nominal = the tenant's quota on the pool (0 on shared pools it may only borrow on), borrowingLimit =
    `tenant.borrowing_limit`, lendingLimit = `tenant.lending_limit` capped at the nominal quota (Kueue rejects
    more), all per flavor and counted in the pool's own units (MIG slices, time-sliced replicas).
    CPU and memory are covered so that Kueue admits pods requesting them: each flavor allows up to the
    tenant's totals without borrowing or lending; the namespace ResourceQuota enforces the totals across
    flavors. A `closed` flavor (a capacity block past its admission stop, model.blocks) gets no GPU quota at all,
    so Kueue admits nothing more to it while what runs drains. The ProvisioningRequest check runs on the flavors of
    `provisioned_pools` only (`onFlavors`).
    """
    quota = {k: v for k, v in site_gpu_quota(site, tenant).items() if k not in closed}
    pools = tenant_flavors(site, tenant)
    resources = [gpu_resource_name(site, p) for p in pools]
    channels = bool(dra.rack_scale_pools(site))
    flavors = []
    for p in pools:
        nominal = quota.get(p.name, 0)
        borrowing = 0 if p.name in closed else tenant.borrowing_limit
        lending = None if tenant.lending_limit is None else min(tenant.lending_limit, nominal)
        gpus = Quota(nominal, borrowing, lending)
        per_flavor = {
            "cpu": Quota(tenant.cpu_quota, 0, 0),
            "memory": Quota(f"{tenant.memory_quota_gib}Gi", 0, 0),
            gpu_resource_name(site, p): gpus,
        }
        if channels:
            # Every pod holding an IMEX channel holds a GPU of the pool, so channels follow the GPU quota.
            per_flavor[dra.IMEX_CHANNEL_RESOURCE] = gpus if dra.rack_scale(p) else Quota(0)
        flavors.append(FlavorQuotas(p.name, per_flavor))
    covered = covered_resources(resources)
    guarded = [p.name for p in provisioned_pools(site) if p in pools]
    return cluster_queue_spec(
        namespace=tenant.name,
        cohort=spec.metadata.name,
        covered=[*covered, dra.IMEX_CHANNEL_RESOURCE] if channels else covered,
        flavors=flavors,
        admission_checks={provisioning.TOPOLOGY_CHECK: guarded} if guarded else None,
    )


def multikueue_config() -> dict[str, Any]:
    """The `multiKueue` section of a manager's Configuration: the incremental dispatcher, one cluster per round,
    so clusters are tried in the order of each MultiKueueConfig (kueue site/content/en/docs/concepts/multikueue.md
    at the pinned tag, "prioritizing clusters for cost-optimized spillover"). The feature gates it needs,
    MultiKueueIncrementalDispatcherConfig and MultiKueueIncrementalDispatcherRespectConfigOrder, are beta and on
    by default at that tag (pkg/features/kube_features.go), so none is set."""
    return {
        "dispatcherName": MULTIKUEUE_INCREMENTAL_DISPATCHER,
        "incrementalDispatcherConfig": {"stepSize": 1},
    }


def pods_ready_timeout(spec: EstateSpec, site: Site) -> str:
    """The site's waitForPodsReady timeout. On a burst site a gang is admitted before its nodes exist: the
    ProvisioningRequest check passes once the scale-up is requested (cluster-autoscaler FAQ, "Supported
    ProvisioningClasses", at versions.CLUSTER_AUTOSCALER_APP). So its pods get the cold nodes' boot time
    (`burst.node_boot_minutes`) on top of the usual timeout."""
    if spec.burst is None or site.name != spec.burst.cloud_site:
        return WAIT_FOR_PODS_READY_TIMEOUT
    return f"{int(WAIT_FOR_PODS_READY_TIMEOUT.removesuffix('m')) + spec.burst.node_boot_minutes}m"


def _resources(excluded: Sequence[str], device_classes: bool) -> dict[str, Any]:
    """The Configuration's `resources` section, when it has anything to say."""
    resources: dict[str, Any] = {}
    if excluded:
        resources["excludeResourcePrefixes"] = list(excluded)
    if device_classes:
        resources["deviceClassMappings"] = dra.device_class_mappings()
    return {"resources": resources} if resources else {}


def controller_config(
    cluster_queue_metrics: bool = False,
    frameworks: Sequence[str] = enabled_frameworks(DEFAULT_FRAMEWORKS),
    multikueue: bool = False,
    excluded_resources: Sequence[str] = (),
    ready_timeout: str = WAIT_FOR_PODS_READY_TIMEOUT,
    device_classes: bool = False,
) -> dict[str, Any]:
    """The Kueue Configuration (config.kueue.x-k8s.io/v1beta2) the chart mounts; replaces the chart default.

    The chart's `managerConfig.controllerManagerConfigYaml` is the whole Configuration (charts/kueue/values.yaml),
    so the chart default's `controller` and `clientConnection` are carried over (CHART_CONTROLLER,
    CHART_CLIENT_CONNECTION).

    - manageJobsWithoutQueueName: Kueue manages jobs (and, through the pod integrations, bare pods,
      Deployments, StatefulSets) in tenant namespaces even without `kueue.x-k8s.io/queue-name`; they go to the
      namespace's `default` LocalQueue, so nothing bypasses quota or flavor pinning. The
      managedJobsNamespaceSelector limits this to namespaces labelled `tenant`: system namespaces are never
      touched.
    - waitForPodsReady: all-or-nothing admission of gangs; a workload whose pods are not all ready within the
      timeout (`ready_timeout`, from `pods_ready_timeout`) is evicted and requeued with backoff, so half-started gangs do not hold GPUs.
    - fairSharing: preemption-based fair sharing of borrowed quota inside the cohort; the key's presence enables
      it (cmd/kueue/main.go).
    - integrations: the site's `job_frameworks` (model.frameworks), nothing a cluster cannot serve.
    - resources.deviceClassMappings (`device_classes`: a cluster with rack-scale pools): DRA claims counted as
      quota (model.dra.device_class_mappings).
    - multiKueue (a MultiKueue manager only): `multikueue_config`; a manager runs no pods, so waitForPodsReady is
      left to its workers (the manager must not evict a dispatched job whose nodes are still starting).
    """
    config: dict[str, Any] = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443", "enableClusterQueueResources": cluster_queue_metrics},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": CHART_CONTROLLER,
        "clientConnection": CHART_CLIENT_CONNECTION,
        "manageJobsWithoutQueueName": True,
        "managedJobsNamespaceSelector": {"matchExpressions": [{"key": MANAGED_NAMESPACE_LABEL, "operator": "Exists"}]},
        "waitForPodsReady": {
            "timeout": ready_timeout,
            "recoveryTimeout": WAIT_FOR_PODS_RECOVERY_TIMEOUT,
            "blockAdmission": False,
            "requeuingStrategy": {
                "timestamp": "Eviction",
                "backoffLimitCount": 5,
                "backoffBaseSeconds": 60,
                "backoffMaxSeconds": 3600,
            },
        },
        "integrations": {"frameworks": list(frameworks)},
        # Node devices beside GPUs (model.rdma.node_device_prefixes): left to the scheduler, so a gang asking for
        # its fabric is admissible (Kueue blocks a resource no ClusterQueue covers).
        **_resources(excluded_resources, device_classes),
        "fairSharing": {"preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]},
    }
    if multikueue:
        config["multiKueue"] = multikueue_config()
        del config["waitForPodsReady"]  # pods run on the workers, whose Kueue applies it to them
    return config


def cpu_memory_ceiling(site: Site, tenant: Tenant) -> tuple[int, int]:
    """(vCPUs, memory GiB) the tenant's pods may request at once on the site: its own `cpu_quota` and
    `memory_quota_gib`, and for a tenant with `burst: true` every burst pool of the site at its max (catalog vCPUs and
    memory per node), as `gpu_quota_ceiling` counts their GPUs. A burst gang's pods would otherwise be refused by
    the namespace quota after the autoscaler had started their nodes."""
    cpu, memory = tenant.cpu_quota, tenant.memory_quota_gib
    for p in site.node_pools:
        if isinstance(p, AwsNodePool) and p.burst and tenant.burst:
            inst = p.instance
            cpu += p.scaling.max * inst.vcpus
            memory += p.scaling.max * inst.memory_mib // 1024
    return cpu, memory


def gpu_quota_ceiling(spec: EstateSpec, site: Site, tenant: Tenant) -> dict[str, int]:
    """GPU units per advertised resource the tenant's pods may request at once on the site.

    Kueue decides what runs within the nominal quota plus what the tenant may borrow; the namespace quota is
    the hard ceiling behind it, so it allows nominal + borrowing_limit on each flavor the tenant's
    ClusterQueue lists. On a burst pool (a MultiKueue worker's), a tenant with `burst: true` may use up to the
    pool's size at max and any other tenant nothing; the open window's quota is Kueue's to enforce. Every GPU
    resource the site advertises is listed (0 where the tenant has none), so no GPU kind is outside the quota.
    """
    quota = site_gpu_quota(site, tenant)
    ceiling = {gpu_resource_name(site, p): 0 for p in site.node_pools}
    for p in tenant_flavors(site, tenant):
        ceiling[gpu_resource_name(site, p)] += quota.get(p.name, 0) + tenant.borrowing_limit
    for p in site.node_pools:
        if is_burst(p) and tenant.burst:
            ceiling[gpu_resource_name(site, p)] += spec.pool_gpu_units(p.name)
    return ceiling
