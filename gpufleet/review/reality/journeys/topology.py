"""Stage `topology`: what Kueue's topology-aware scheduling asks of each pod set Kueue admitted on a TAS flavor.

- A pod set asks with an annotation on its pod template: required or preferred at a level, or unconstrained
  (site/content/en/docs/concepts/topology_aware_scheduling.md at versions.KUEUE, "User-facing APIs").
- Without one, on a ClusterQueue whose every flavor has a Topology, Kueue implies an unconstrained request at the
  lowest level (pkg/scheduler/flavorassigner/tas_flavorassigner.go isTASImplied; pkg/cache/scheduler/
  tas_flavor_snapshot.go levelKeyWithImpliedFallback). gpufleet's sites are TAS-only where they schedule by
  topology (model.queues.flavor_topology).
- Kueue assigns topology against Ready nodes before any pod exists ("Capacity calculation"): a pod set its pools'
  minimum nodes cannot hold is blocked unless a ProvisioningRequest check guards the flavor. Behind that check
  Kueue assigns the topology after provisioning ("ClusterAutoscaler support"; tas_flavorassigner.go
  podSetTopologyRequest), for a pod set the check's config manages (`_provisioned`).
- A required level must hold the pod set in one domain: counted where the inventory names the domains.
"""

from __future__ import annotations

from typing import Any

from gpufleet.review.reality.journeys import kueue, queueing
from gpufleet.review.reality.journeys.core import Cite, PodSet, Stage, Walk
from gpufleet.review.reality.journeys.resources import pod_requests
from model import conventions, kinds, nodes, provisioning

REQUIRED, PREFERRED, UNCONSTRAINED = queueing.TOPOLOGY_ANNOTATIONS
DOC = Cite(
    "topology requests: required, preferred, unconstrained; implied on a TAS-only ClusterQueue",
    f"{kueue.TAG} site/content/en/docs/concepts/topology_aware_scheduling.md",
)
PROVISIONING_CONTROLLER = provisioning.CONTROLLER
PROVISIONED = Cite(
    "behind a ProvisioningRequest check on the flavor, the topology waits for the check, then fits the new nodes",
    f"{kueue.TAG} pkg/scheduler/flavorassigner/tas_flavorassigner.go",
)
READY_NODES = Cite(
    "TAS counts Ready nodes; with the autoscaler only behind a ProvisioningRequest check",
    f"{kueue.TAG} site/content/en/docs/concepts/topology_aware_scheduling.md",
)
NO_REQUEST = Cite(
    "a pod set using none of the config's managedResources gets no ProvisioningRequest: the check is Ready at once",
    f"{kueue.TAG} pkg/controller/admissionchecks/provisioning/controller.go",
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


def _provisioning_configs(walk: Walk, flavor: str) -> list[dict[str, Any]]:
    """The ProvisioningRequestConfig specs of the ProvisioningRequest checks the workload's ClusterQueue here runs
    on `flavor` (no onFlavors: every flavor); a missing config as an empty spec."""
    w = walk.workload
    lq = walk.cluster.get("LocalQueue", w.queue_name or "default", w.namespace) or {}
    cq = walk.cluster.get("ClusterQueue", str((lq.get("spec") or {}).get("clusterQueue", ""))) or {}
    out = []
    for c in ((cq.get("spec") or {}).get("admissionChecksStrategy") or {}).get("admissionChecks") or []:
        check = (walk.cluster.get("AdmissionCheck", str(c.get("name"))) or {}).get("spec") or {}
        on = c.get("onFlavors") or []
        if check.get("controllerName") == PROVISIONING_CONTROLLER and (not on or flavor in on):
            name = str((check.get("parameters") or {}).get("name", ""))
            out.append((walk.cluster.get("ProvisioningRequestConfig", name) or {}).get("spec") or {})
    return out


def _provisioned(walk: Walk, flavor: str, ps: PodSet) -> tuple[bool, list[str]]:
    """(a ProvisioningRequest check guards `flavor`, the resources its configs manage when none asks the autoscaler
    for `ps`): a config asks for a pod set using one of its managedResources, or any pod set when it lists none
    (pkg/controller/admissionchecks/provisioning/controller.go reqIsNeeded, requiredPodSets). A pod set it does not
    manage gets no request, the check turns Ready ("NoRequestNeeded"), and Kueue places it on Ready nodes as if no
    check guarded the flavor."""
    configs = _provisioning_configs(walk, flavor)
    used = set(pod_requests(ps.spec))
    managed = [list(c.get("managedResources") or []) for c in configs]
    if any(not m or used & set(m) for m in managed):
        return True, []
    return bool(configs), sorted({r for m in managed for r in m})


def _floor_nodes(walk: Walk, pools: list[str]) -> int:
    """Nodes the pools run whatever the demand (an autoscaled pool's min; every server on bare metal)."""
    spec = walk.spec
    return sum(
        kinds.of(spec.site_of_pool(p)).pool_floor_gpus(spec, p) // max(spec.pool_gpus_per_node(p), 1) for p in pools
    )


Verdict = tuple[bool, str, str]


def _judge(walk: Walk, ps: PodSet) -> Verdict:
    flavor_name = walk.flavors.get(ps.name, "")
    flavor = walk.cluster.get("ResourceFlavor", flavor_name)
    name = ((flavor or {}).get("spec") or {}).get("topologyName")
    if not name:
        return True, f"pod set {ps.name}: flavor {flavor_name} has no Topology, no topology assignment", ""
    topology = walk.cluster.get("Topology", str(name)) or {}
    levels = [str(lv.get("nodeLabel")) for lv in (topology.get("spec") or {}).get("levels") or []]
    kind, level = request(ps, levels)
    asked = f"{kind} at {level}" if kind != "implied" else f"none, so Kueue implies unconstrained at {level}"
    head = f"pod set {ps.name} ({ps.count} pods) on Topology {name} ({' > '.join(levels)}): request {asked}"
    per_node = _pods_per_node(walk, ps)
    pools = walk.pools.get(ps.name, [])
    floor = _floor_nodes(walk, pools) if pools else None
    guarded, unmanaged = _provisioned(walk, flavor_name, ps)
    if guarded and not unmanaged:
        # podSetTopologyRequest: no topology on the first pass (DelayedTopologyRequest Pending); NeedsSecondPass
        # (pkg/workload/workload.go) once every check is Ready, retried with backoff until the pod set fits.
        head += ("; a ProvisioningRequest check guards the flavor: Kueue reserves quota without a topology, the "
                 "autoscaler adds the nodes, then Kueue assigns the topology on them (topology assigned after "
                 "provisioning)")  # fmt: skip
    elif guarded and per_node is None and floor == 0:
        # A pod set asking for no GPU: reqIsNeeded false, the check Ready with NoRequestNeeded, and the second pass
        # (needsSecondPassForDelayedAssignment) retried on no Ready node for as long as the pool stays at 0. The
        # pods keep Kueue's scheduling gate, so the autoscaler never sees them.
        return False, (f"{head}; the flavor's ProvisioningRequest check manages {', '.join(unmanaged)} only, which "
                       f"pod set {ps.name} does not request: Kueue makes no ProvisioningRequest for it (check Ready, "
                       f"NoRequestNeeded) and waits for Ready nodes, but its pools have 0 minimum nodes and no pod is "
                       "created, so the autoscaler never adds one"), (
                       "let the ProvisioningRequestConfig manage every resource (no managedResources), or send the "
                       "job to a pool with running nodes (its nodeSelector)")  # fmt: skip
    elif per_node and floor is not None and floor * per_node < ps.count:
        need = -(-ps.count // per_node)
        return False, (f"{head}, but Kueue assigns the topology against Ready nodes before any pod exists, and its pools' "
                       f"{floor} minimum nodes hold {floor * per_node} of {ps.count} pods: no pod is created, so the "
                       "autoscaler never adds nodes"), (
                       f"guard flavor {flavor_name} with a ProvisioningRequest admission check, or raise its pool's "
                       f"scaling.min to {need} nodes")  # fmt: skip
    if kind != "required" or level is None or level not in levels:
        return True, head, ""
    domains = _domains(walk, pools, levels, level)
    if domains is None:
        return (
            True,
            f"{head}; the inventory does not name the level's domains, so Kueue judges the Ready nodes' labels",
            "",
        )
    largest = max(domains.values(), default=0)
    if per_node is None or largest * per_node >= ps.count:
        return True, f"{head}; the largest {level} domain has {largest} nodes", ""
    return False, (f"{head}, but the largest {level} domain of its pools has {largest} nodes of {per_node} such "
                   "pods each: it never fits"), f"ask for a wider level with {PREFERRED}, or for fewer pods"  # fmt: skip


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
    detail = "; ".join(d for _, d, _ in results)
    cites = (DOC, IMPLIED) if "implies" in detail else (DOC,)
    if "Ready nodes" in detail:
        cites = (*cites, READY_NODES)
    if "after provisioning" in detail:
        cites = (*cites, PROVISIONED)
    if "NoRequestNeeded" in detail:
        cites = (*cites, NO_REQUEST)
    if all(ok for ok, _, _ in results):
        return Stage("topology", True, detail, cites=cites)
    unblock = next(u for ok, _, u in results if not ok)
    return Stage("topology", False, detail, f"ResourceFlavor/{next(iter(walk.flavors.values()))}", unblock, cites)
