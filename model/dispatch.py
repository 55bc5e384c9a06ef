"""Where a hybrid estate's work goes: the MultiKueue manager's workers, and each tenant's order of preference.

Pure functions over the spec, shared by the MultiKueue components, the schema rules and the review.

Tenants submit to the manager. Each tenant's ClusterQueue there carries a MultiKueue admission check whose
MultiKueueConfig lists, in order, the sites where the tenant has GPU quota (spec order: on-prem first in every
example), then the burst site when the tenant bursts. The manager runs the incremental dispatcher with a step of
one (kueue site/content/en/docs/concepts/multikueue.md at the pinned tag (versions.KUEUE), "prioritizing clusters for cost-optimized
spillover"): a job is offered to the first site; if no site offered so far admits it within the dispatcher's
round (five minutes), the next site is added, and the first site that admits it runs it.
"""

from __future__ import annotations

from model import conventions, queues
from model.frameworks import FrameworkName, enabled
from model.spec import AwsNodePool, EstateSpec, Site, Tenant


def hosts(site: Site, tenant: Tenant) -> bool:
    """The tenant has GPU quota on one of the site's always-on (non-burst) pools."""
    pools = {p.name for p in site.node_pools if not (isinstance(p, AwsNodePool) and p.burst)}
    return any(n > 0 for pool, n in tenant.gpu_quota.items() if pool in pools)


def tenant_workers(spec: EstateSpec, tenant: Tenant) -> list[Site]:
    """The sites the manager offers the tenant's jobs to, most preferred first."""
    if spec.burst is None:
        return []
    order = [s for s in spec.sites if hosts(s, tenant)]
    cloud = spec.site(spec.burst.cloud_site)
    if tenant.burst and cloud not in order:
        order.append(cloud)
    return order


def dispatched_tenants(spec: EstateSpec) -> list[Tenant]:
    """Tenants with somewhere to run: each gets a namespace and queues on the manager."""
    return [t for t in spec.tenants if tenant_workers(spec, t)]


def workers(spec: EstateSpec) -> list[Site]:
    """Every site the manager dispatches to (a MultiKueueCluster each), in spec order."""
    used = {s.name for t in spec.tenants for s in tenant_workers(spec, t)}
    return [s for s in spec.sites if s.name in used]


def dispatch_orders(spec: EstateSpec) -> dict[tuple[str, ...], list[Tenant]]:
    """Each distinct order of sites (one MultiKueueConfig and AdmissionCheck each) and the tenants using it."""
    out: dict[tuple[str, ...], list[Tenant]] = {}
    for t in dispatched_tenants(spec):
        out.setdefault(tuple(s.name for s in tenant_workers(spec, t)), []).append(t)
    return out


def order_name(spec: EstateSpec, order: tuple[str, ...]) -> str:
    """Name of the MultiKueueConfig and AdmissionCheck for one order: `<estate>-<site>-<site>...`."""
    return "-".join((spec.metadata.name, *order))


def manager_frameworks(spec: EstateSpec) -> list[FrameworkName]:
    """The integrations the manager enables: those its workers serve (the schema makes every worker list the
    same ones), with what they run through."""
    sites = workers(spec)
    if not sites:
        return enabled(spec.sites[0].kubernetes.job_frameworks)
    return enabled(sites[0].kubernetes.job_frameworks)


# The levels of the manager's dispatch Topology above the hostname: every level label a worker's Topology can
# have, whatever the workers are (model/kinds: bare metal's rack, NVLink clique and leaf in its order; EKS's network
# layers, widest first). Kueue allows at most 16 unique levels, `kubernetes.io/hostname` only as the last
# (kubernetes-sigs/kueue at versions.KUEUE, apis/kueue/v1beta2/topology_types.go).
MANAGER_TOPOLOGY_LEVELS = (
    conventions.RACK_LABEL,
    conventions.GPU_CLIQUE_LABEL,
    conventions.LEAF_LABEL,
    *conventions.EKS_NETWORK_LAYER_LABELS,
)


def manager_topology_levels(spec: EstateSpec) -> tuple[str, ...] | None:
    """The levels of the manager's dispatch Topology above the hostname: the fixed `MANAGER_TOPOLOGY_LEVELS`, so a
    pod set asking for any level a worker can have passes the manager, and the Topology (immutable levels), its
    flavor and the manager's ClusterQueues are not replaced when a worker gains or loses a level. None where no
    worker schedules by topology (the manager's flavor is then no TAS flavor).

    Kueue refuses on the manager a pod set whose requested level the flavor's Topology lacks ("does not contain the
    requested level"): it looks the level up in the Topology's levels only (kubernetes-sigs/kueue at
    versions.KUEUE, pkg/scheduler/flavorassigner/tas_flavorassigner.go checkPodSetAndFlavorMatchForTAS;
    pkg/cache/scheduler/tas_flavor_snapshot.go HasLevel), then leaves the assignment to the worker ("Delay TAS
    when MultiKueue is used", podSetTopologyRequest). So levels no worker has, and levels the manager's own nodes
    lack, are fine there."""
    if not any(queues.site_topologies(site) for site in workers(spec)):
        return None
    return MANAGER_TOPOLOGY_LEVELS
