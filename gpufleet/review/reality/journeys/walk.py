"""Walk a workload through the estate: the stages in order, stopping at the first that refuses.

Where a workload is submitted: on a hybrid estate, the MultiKueue manager (queueing moves it to a worker); else
the site the caller names, the only site, or the one site whose namespaces hold the workload's namespace.
"""

from __future__ import annotations

from typing import Any

from gpufleet.review.reality.journeys import admission, api, network, placement, queueing, storage, topology
from gpufleet.review.reality.journeys.core import ClusterView, Journey, Stage, Walk, Workload
from gpufleet.review.reality.journeys.estate import MANAGER

STAGES = (api, admission, queueing, topology, placement, storage, network)


class TargetError(Exception):
    """The cluster a workload goes to cannot be told (several sites, no --site, none holds its namespace)."""


def target(workload: Workload, clusters: dict[str, ClusterView], site: str | None = None) -> ClusterView:
    """The cluster `workload` is submitted to."""
    if MANAGER in clusters:
        return clusters[MANAGER]
    if site is not None:
        if site not in clusters:
            raise TargetError(f"--site {site}: no such site (sites: {', '.join(sorted(clusters))})")
        return clusters[site]
    if len(clusters) == 1:
        return next(iter(clusters.values()))
    holding = [c for c in clusters.values() if c.get("Namespace", workload.namespace) is not None]
    if len(holding) == 1:
        return holding[0]
    raise TargetError(
        f"{workload.source}: {workload.id} could go to several sites ({', '.join(sorted(clusters))}): "
        "choose one with --site"
    )


def walk(workload: Workload, clusters: dict[str, ClusterView], spec: Any, site: str | None = None) -> Journey:
    """`workload`'s journey through `clusters` (estate.clusters) of the estate `spec`."""
    w = Walk(workload, target(workload, clusters, site), clusters, spec)
    stages: list[Stage] = []
    for stage in STAGES:
        result = stage.check(w)
        stages.append(result)
        if not result.ok:
            break
    return Journey(workload, tuple(stages), w.placement)
