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


def manager_topology_levels(spec: EstateSpec) -> tuple[str, ...] | None:
    """The levels of the manager's dispatch Topology above the hostname: every level of every worker's Topologies,
    each worker's order kept (widest first), so a pod set asking for any worker's level passes the manager. None
    where no worker schedules by topology (the manager's flavor is then no TAS flavor).

    Kueue refuses on the manager a pod set whose requested level the flavor's Topology lacks ("does not contain the
    requested level"): it looks the level up in the Topology's levels only (kubernetes-sigs/kueue at
    versions.KUEUE, pkg/scheduler/flavorassigner/tas_flavorassigner.go checkPodSetAndFlavorMatchForTAS;
    pkg/cache/scheduler/tas_flavor_snapshot.go HasLevel), then leaves the assignment to the worker ("Delay TAS
    when MultiKueue is used", podSetTopologyRequest). So levels the manager's own nodes lack are fine there.
    Kueue allows at most 16 levels (apis/kueue/v1beta2/topology_types.go)."""
    orders = [
        tuple(lv["nodeLabel"] for lv in topology["levels"] if lv["nodeLabel"] != conventions.HOSTNAME_LABEL)
        for site in workers(spec)
        for topology in queues.site_topologies(site).values()
    ]
    if not orders:
        return None
    return _merge(orders)


def _merge(orders: list[tuple[str, ...]]) -> tuple[str, ...]:
    """The union of `orders` with each one's order kept: a level goes after every level any order puts above it,
    else by first appearance (bare metal's rack and leaf and EKS's network layers share no label)."""
    first = list(dict.fromkeys(lv for order in orders for lv in order))
    above = {lv: {o[j] for o in orders for i, x in enumerate(o) if x == lv for j in range(i)} for lv in first}
    out: list[str] = []
    while len(out) < len(first):
        ready = [lv for lv in first if lv not in out and above[lv] <= set(out)]
        out.append(ready[0] if ready else next(lv for lv in first if lv not in out))  # orders that disagree
    return tuple(out)
