"""Cross-field rules of a hybrid estate: its burst site, its MultiKueue manager and the workers it dispatches to."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from model import kinds, pricing
from model.dispatch import workers
from model.spec.aws import AwsNodePool
from model.spec.base import Problem
from model.spec.sites import AwsSite

if TYPE_CHECKING:
    from model.spec.estate import EstateSpec


def burst_problems(spec: EstateSpec) -> Iterator[Problem]:
    """Burst pools need a policy; the policy names an aws site with burst pools, a manager that is no site and sits
    in one, a burst site at the autoscaler's Kubernetes minor, and workers that serve the same frameworks."""
    burst_pools = [p for _, p in spec.pools() if isinstance(p, AwsNodePool) and p.burst]
    if spec.burst is None:
        if burst_pools:
            yield Problem("burst", f"pool {burst_pools[0].name} has burst: true; add a burst policy")
        return
    cloud = _cloud_site(spec)
    if cloud is None:  # burst_references says so; the estate's other rules are not run
        return
    if not any(p.burst for p in cloud.node_pools):
        yield Problem("burst.cloud_site", f"site {cloud.name} has no node pool with burst: true")
    yield from _burst_manager(spec)
    yield from _burst_site(spec, cloud)
    yield from _workers_serve_the_same_frameworks(spec)


def _cloud_site(spec: EstateSpec) -> AwsSite | None:
    site = next((s for s in spec.sites if spec.burst is not None and s.name == spec.burst.cloud_site), None)
    return kinds.of(site).aws_site if site is not None else None


def burst_references(spec: EstateSpec) -> Iterator[Problem]:
    """The sites a burst policy names exist: every other rule (reach, dispatch, CNI) looks them up by name."""
    if spec.burst is None:
        return
    if _cloud_site(spec) is None:
        yield Problem("burst.cloud_site", f"{spec.burst.cloud_site} must name an aws site of the estate")
    sites = [s.name for s in spec.sites]
    if spec.burst.manager.network not in sites:
        yield Problem(
            "burst.manager.network", f"{spec.burst.manager.network} is not a site of the estate ({', '.join(sites)})"
        )


def _burst_manager(spec: EstateSpec) -> Iterator[Problem]:
    assert spec.burst is not None
    manager, sites = spec.burst.manager, [s.name for s in spec.sites]
    if manager.name in sites:
        yield Problem(
            "burst.manager.name",
            f"{manager.name} is a site of the estate; the MultiKueue manager is a cluster of its own, not one of "
            "its workers (Kueue does not support a manager that is its own worker), so give it another name",
        )


def _burst_site(spec: EstateSpec, cloud: AwsSite) -> Iterator[Problem]:
    steady_pools = {p.name for p in cloud.node_pools if not p.burst}
    for j, t in enumerate(spec.tenants):
        steady = sorted(p for p, n in t.gpu_quota.items() if n > 0 and p in steady_pools)
        if t.burst and steady:
            yield Problem(
                f"tenants[{j}].gpu_quota",
                f"tenant {t.name} bursts to site {cloud.name} and also holds quota on its pools {', '.join(steady)}; "
                "on the burst site a bursting tenant's queue is its burst queue, so move that quota to another site "
                "or set burst: false",
            )


def _workers_serve_the_same_frameworks(spec: EstateSpec) -> Iterator[Problem]:
    sites = workers(spec)
    if not sites:
        return
    first = sites[0]
    want = sorted(first.kubernetes.job_frameworks)
    for s in sites[1:]:
        have = sorted(s.kubernetes.job_frameworks)
        if have != want:
            i = next(i for i, x in enumerate(spec.sites) if x.name == s.name)
            yield Problem(
                f"sites[{i}].kubernetes.job_frameworks",
                f"site {s.name} serves {', '.join(have)} but site {first.name} serves {', '.join(want)}; the "
                "MultiKueue manager watches every framework it enables on every worker, and one a worker lacks "
                "disconnects that worker, so every worker site lists the same job_frameworks",
            )


def spot_windows_unpriced(spec: EstateSpec) -> Iterator[Problem]:
    """A spot burst pool's window may run any of `burst.allowed_instance_types`; one the catalog holds on demand but
    no spot figure for (and the pool sets no `capacity.spot_discount`) would leave the window unpriced."""
    cloud = _cloud_site(spec) if spec.burst is not None else None
    if cloud is None or spec.burst is None:
        return
    for pool in (p for p in cloud.node_pools if p.burst and p.capacity.type == "spot"):
        for k, t in enumerate(spec.burst.allowed_instance_types):
            listed = t != pool.instance_type and pricing.site_price(cloud, t) is not None
            if listed and pricing.pool_rate(cloud, pool, t) is None:
                need = pricing.PriceNeed("", t, "spot", f"spot pool {pool.name}", pool=pool.name)
                yield Problem(f"burst.allowed_instance_types[{k}]", pricing.spot_unpriced(cloud, need))
