"""Stage `topology`: what Kueue's topology-aware scheduling asks of each pod set Kueue admitted on a TAS flavor.

- A pod set asks with an annotation on its pod template: required or preferred at a level, or unconstrained
  (site/content/en/docs/concepts/topology_aware_scheduling.md at versions.KUEUE, "User-facing APIs").
- Without one, on a ClusterQueue whose every flavor has a Topology, Kueue implies an unconstrained request at the
  lowest level (pkg/scheduler/flavorassigner/tas_flavorassigner.go isTASImplied; pkg/cache/scheduler/
  tas_flavor_snapshot.go levelKeyWithImpliedFallback). gpufleet's sites are TAS-only where they schedule by
  topology (model.queues.flavor_topology).
- A required level must hold the whole pod set in one domain. Where the inventory names every node's domain (rack,
  leaf, hostname on bare metal) the stage counts the nodes; EKS's layer values come from EC2 at launch, so there
  the stage says so.
"""

from __future__ import annotations

from gpufleet.review.reality.journeys import kueue, queueing
from gpufleet.review.reality.journeys.core import Cite, PodSet, Stage, Walk
from gpufleet.review.reality.journeys.resources import pod_requests
from model import conventions, kinds, nodes

REQUIRED, PREFERRED, UNCONSTRAINED = queueing.TOPOLOGY_ANNOTATIONS
DOC = Cite(
    "topology requests: required, preferred, unconstrained; implied on a TAS-only ClusterQueue",
    f"{kueue.TAG} site/content/en/docs/concepts/topology_aware_scheduling.md",
)
IMPLIED = Cite(
    "no annotation on a TAS-only ClusterQueue: unconstrained at the lowest level",
    f"{kueue.TAG} pkg/cache/scheduler/tas_flavor_snapshot.go",
)


def request(ps: PodSet, levels: list[str]) -> tuple[str, str | None]:
    """The pod set's topology request: (kind, level), the kind `required`, `preferred`, `unconstrained` or
    `implied` (no annotation: Kueue takes the lowest level)."""
    if REQUIRED in ps.annotations:
        return "required", ps.annotations[REQUIRED]
    if PREFERRED in ps.annotations:
        return "preferred", ps.annotations[PREFERRED]
    lowest = levels[-1] if levels else None
    return ("unconstrained", lowest) if UNCONSTRAINED in ps.annotations else ("implied", lowest)


def _domains(walk: Walk, pools: list[str], levels: list[str], level: str) -> dict[tuple[str, ...], int] | None:
    """Nodes per domain of `level` across the pools' servers, keyed by the labels of every level down to it; None
    where the inventory does not name them (EKS's layers, the NVLink clique)."""
    site = next((s for s in walk.spec.sites if s.name == walk.cluster.site), None)
    if site is None or not kinds.of(site).has_topology_labels:
        return None
    depth = levels.index(level) + 1
    out: dict[tuple[str, ...], int] = {}
    for pool in pools:
        for server in kinds.of(site).selected_servers(pool):
            labels = {**nodes.server_topology_labels(server), conventions.HOSTNAME_LABEL: server.hostname}
            if any(lv not in labels for lv in levels[:depth]):
                return None
            key = tuple(labels[lv] for lv in levels[:depth])
            out[key] = out.get(key, 0) + 1
    return out


def _judge(walk: Walk, ps: PodSet) -> tuple[bool, str]:
    flavor = walk.cluster.get("ResourceFlavor", walk.flavors.get(ps.name, ""))
    name = ((flavor or {}).get("spec") or {}).get("topologyName")
    if not name:
        return True, f"pod set {ps.name}: flavor {walk.flavors.get(ps.name)} has no Topology, no topology assignment"
    topology = walk.cluster.get("Topology", str(name)) or {}
    levels = [str(lv.get("nodeLabel")) for lv in (topology.get("spec") or {}).get("levels") or []]
    kind, level = request(ps, levels)
    asked = f"{kind} at {level}" if kind != "implied" else f"none, so Kueue implies unconstrained at {level}"
    head = f"pod set {ps.name} ({ps.count} pods) on Topology {name} ({' > '.join(levels)}): request {asked}"
    if kind != "required" or level is None or level not in levels:
        return True, head
    domains = _domains(walk, walk.pools.get(ps.name, []), levels, level)
    if domains is None:
        return True, f"{head}; the level's domains are known once the nodes run, so Kueue judges the fit then"
    per_node = _pods_per_node(walk, ps)
    largest = max(domains.values(), default=0)
    if per_node is None or largest * per_node >= ps.count:
        return True, f"{head}; the largest {level} domain has {largest} nodes"
    return False, (f"{head}, but the largest {level} domain of its pools has {largest} nodes of {per_node} such "
                   "pods each: it never fits")  # fmt: skip


def _pods_per_node(walk: Walk, ps: PodSet) -> int | None:
    """How many of the pod set's pods a node of its pools holds by whole GPUs; None when it asks for none."""
    gpus = pod_requests(ps.spec).get(conventions.GPU_RESOURCE, 0)
    pools = walk.pools.get(ps.name, [])
    if not gpus or not pools:
        return None
    return int(min(walk.spec.pool_gpus_per_node(p) for p in pools) // gpus)


def check(walk: Walk) -> Stage:
    if not walk.flavors:
        return Stage("topology", True, "Kueue assigned no flavor here: no topology assignment")
    results = [_judge(walk, ps) for ps in walk.pod_sets if ps.name in walk.flavors]
    detail = "; ".join(d for _, d in results)
    cites = (DOC, IMPLIED) if "implies" in detail else (DOC,)
    if all(ok for ok, _ in results):
        return Stage("topology", True, detail, cites=cites)
    return Stage(
        "topology",
        False,
        detail,
        f"ResourceFlavor/{next(iter(walk.flavors.values()))}",
        f"ask for a wider level with {PREFERRED}, or for fewer pods",
        cites,
    )
