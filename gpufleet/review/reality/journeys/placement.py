"""Placement: the scheduler's judgement of every pod of a workload at once.

- A pod may go only to nodes whose labels match its nodeSelector and required node affinity and whose taints it
  tolerates (`scheduling.fits`), and only where every resource it requests still fits the node's allocatable.
- A workload's pods are a gang: Kueue admitted them together, so they all run or none does. Pods are packed
  first-fit decreasing onto the nodes that exist; where an autoscaler or a burst window grows a group, onto its
  max.
- A blocked placement names the node group or servers that refuse and what would let the pods through.
- A burst pool grows only inside a window, to its cap, and on AWS not all or none (nodes.burst_note); outside one
  its group is stopped (model.conventions.BURST_STOPPED_TAINT).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from gpufleet.review.reality.journeys.core import Cite, Placement, PodSet, Stage, Walk
from gpufleet.review.reality.journeys.nodes import NodeShape, cluster_nodes, pod_requests
from gpufleet.review.reality.scheduling import Node, describe, fits
from model import versions
from model.conventions import BURST_STOPPED_TAINT, POOL_LABEL, Taint
from model.nodes import pool_taints
from model.rdma import HUGEPAGES_PREFIX

CITES = (
    Cite(
        "nodeSelector and required node affinity match node labels",
        "https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/",
    ),
    Cite(
        "a NoSchedule or NoExecute taint repels every pod that does not tolerate it",
        "https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/",
    ),
    Cite(
        "a pod fits a node when the sum of its requests fits the node's allocatable, extended resources included",
        "https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/",
    ),
)

BURST_CITES = (
    Cite(
        "cluster-autoscaler on AWS has no atomic scale-up: AtomicIncreaseSize is not implemented",
        f"kubernetes/autoscaler@cluster-autoscaler-{versions.CLUSTER_AUTOSCALER_APP} "
        "cluster-autoscaler/cloudprovider/aws/aws_cloud_provider.go",
    ),
    Cite(
        "waitForPodsReady evicts and requeues a workload whose pods are not all ready within the timeout",
        "https://kueue.sigs.k8s.io/docs/tasks/manage/setup_wait_for_pods_ready/",
    ),
)

STOPPED = (BURST_STOPPED_TAINT.key, BURST_STOPPED_TAINT.value, BURST_STOPPED_TAINT.effect)
STOPPED_CITES = (
    Cite(
        "the autoscaler builds an empty managed node group's node with the group's taints, so a pod that does not "
        "tolerate them gives it no reason to grow the group",
        f"kubernetes/autoscaler@cluster-autoscaler-{versions.CLUSTER_AUTOSCALER_APP} "
        "cluster-autoscaler/cloudprovider/aws/aws_manager.go",
    ),
)


@dataclass
class _Open:
    """One node of a shape with what is left of it."""

    shape: NodeShape
    left: dict[str, Fraction] = field(default_factory=dict)

    def room(self, request: dict[str, Fraction]) -> bool:
        return all(self.shape.offers(r) is None or self.left.get(r, Fraction(0)) >= n for r, n in request.items())

    def take(self, request: dict[str, Fraction]) -> None:
        for r, n in request.items():
            if self.shape.offers(r) is not None:
                self.left[r] = self.left.get(r, Fraction(0)) - n


def _size(request: dict[str, Fraction]) -> tuple[Fraction, ...]:
    """Largest first: extended resources (GPUs, devices), then CPU and memory."""
    extended = sum((v for k, v in request.items() if "/" in k), Fraction(0))
    return (extended, request.get("cpu", Fraction(0)), request.get("memory", Fraction(0)))


def pack(pods: list[tuple[str, dict[str, Fraction], list[NodeShape]]], limit: dict[str, int]) -> list[_Open] | None:
    """First-fit decreasing: every pod (name, request, the shapes it may use) onto nodes, at most `limit[ref]`
    nodes of each shape. The nodes used, or None when some pod finds no room."""
    opened: dict[str, list[_Open]] = {}
    for _, request, shapes in sorted(pods, key=lambda p: _size(p[1]), reverse=True):
        placed = False
        for shape in shapes:
            nodes = opened.setdefault(shape.ref, [])
            target = next((n for n in nodes if n.room(request)), None)
            if target is None and len(nodes) < limit.get(shape.ref, 0):
                target = _Open(shape, dict(shape.allocatable))
                if not target.room(request):
                    continue
                nodes.append(target)
            if target is not None:
                target.take(request)
                placed = True
                break
        if not placed:
            return None
    return [n for nodes in opened.values() for n in nodes]


def _untolerated(spec: dict[str, object], node: Node) -> list[Taint]:
    return [t for t in node.taints if t.effect in ("NoSchedule", "NoExecute") and not fits(spec, _only(node, t))]


def _only(node: Node, taint: Taint) -> Node:
    return Node(node.source, node.name, node.labels, (taint,))


def _labels_match(spec: dict[str, object], node: Node) -> bool:
    return fits({k: v for k, v in spec.items() if k != "tolerations"} | {"tolerations": [{"operator": "Exists"}]}, node)


def _group(shapes: list[NodeShape]) -> str:
    """How a message names a set of shapes: a node group, or the servers of a pool."""
    refs = [s.ref for s in shapes]
    return refs[0] if len(refs) == 1 else ", ".join(refs[:3]) + (f" and {len(refs) - 3} more" if len(refs) > 3 else "")


def _by_pool(shapes: list[NodeShape]) -> dict[str, list[NodeShape]]:
    out: dict[str, list[NodeShape]] = {}
    for s in shapes:
        out.setdefault(s.pool or "system nodes", []).append(s)
    return out


def _gpufleet_taint(walk: Walk, pool: str, taint: Taint) -> bool:
    """A taint gpufleet puts on the pool's nodes (model.nodes.pool_taints), which its Kueue flavor must tolerate."""
    return any(
        (t.key, t.value, t.effect) == (taint.key, taint.value, taint.effect) for t in pool_taints(walk.spec.pool(pool))
    )


def _no_node(walk: Walk, pod_set: PodSet, shapes: list[NodeShape]) -> Stage:
    """No node takes the pod set at all: say which pool comes closest and what keeps it out."""
    spec = pod_set.spec
    wanted = [s for s in shapes if s.pool and s.pool in {p for ps in walk.pools.values() for p in ps}] or shapes
    near = [s for s in wanted if _labels_match(spec, s.node)]
    if near:
        shape = near[0]
        taint = _untolerated(spec, shape.node)[0]
        flavor = walk.flavors.get(pod_set.name)
        said = str(taint)
        pools = sorted(_by_pool(near))
        where = f"pool {pools[0]} ({_group(near)})" if len(pools) == 1 else f"pools {', '.join(pools)}"
        detail = (
            f"pod set {pod_set.name}: the nodes of {where} carry taint {said}, which the pods do not tolerate "
            f"({describe(spec)})"
        )
        if shape.burst and (taint.key, taint.value, taint.effect) == STOPPED:
            detail = (
                f"pod set {pod_set.name}: pool {shape.pool} is stopped: {_group(near)} carries taint {said}, set with "
                "its idle bounds while no burst window holds it, and no pod tolerates it"
            )
            return Stage("placement", False, detail, shape.ref, f"open a burst window for pool {shape.pool}",
                         CITES + STOPPED_CITES)  # fmt: skip
        if flavor and shape.pool and _gpufleet_taint(walk, shape.pool, taint):
            unblock = (
                f"estate defect: ResourceFlavor/{flavor} selects pool {shape.pool} but does not add a toleration for "
                f"{said}; users' manifests should not need gpufleet's taints"
            )
            return _blocked(detail, f"ResourceFlavor/{flavor}", unblock)
        unblock = (
            f"submit it through the tenant's LocalQueue (Kueue's flavor adds the toleration), or add a toleration "
            f"for {said}"
        )
        return _blocked(detail, shape.ref, unblock)
    pools = sorted({s.pool for s in shapes if s.pool})
    detail = f"pod set {pod_set.name}: no node of cluster {walk.cluster.name} matches {describe(spec)}"
    unblock = f"select a pool's nodes ({POOL_LABEL} in {', '.join(pools)})" if pools else "add nodes"
    return _blocked(detail, f"cluster/{walk.cluster.name}", unblock)


def _too_big(pod_set: PodSet, request: dict[str, Fraction], shapes: list[NodeShape]) -> Stage:
    """Nodes take the pod set but none is large enough for one pod: name the resource and the most a node has."""
    for resource, need in sorted(request.items()):
        offers = [(s.offers(resource), s) for s in shapes if s.offers(resource) is not None]
        if not offers or any(o is not None and o >= need for o, _ in offers):
            continue
        most, shape = max(offers, key=lambda x: x[0] or 0)
        have = _amount(resource, most or Fraction(0))
        detail = (
            f"pod set {pod_set.name}: each pod requests {_amount(resource, need)} {resource}, but no node of pool "
            f"{shape.pool or 'system nodes'} offers that much ({shape.instance} has {have} allocatable)"
        )
        unblock = f"request at most {have} {resource} per pod: {shape.instance} has {have}"
        if most == 0:
            unblock = f"select a pool whose nodes offer {resource}; {shape.ref} offers none"
        if most == 0 and resource.startswith(HUGEPAGES_PREFIX):
            unblock = (f"pre-allocate {resource} on the nodes of pool {shape.pool} (vm.nr_hugepages, or the kernel's "
                       "hugepages= boot parameter; gpufleet does it only on EFA pools), or drop the request")  # fmt: skip
        return _blocked(detail, shape.ref, unblock)
    return _blocked(f"pod set {pod_set.name}: no node has room for one pod", _group(shapes), "request less")


def _over_cap(pod_set: PodSet, shapes: list[NodeShape]) -> Stage | None:
    """A container asking for more of a resource than the device plugin hands one container on every node."""
    for c in pod_set.containers():
        for resource, need in pod_requests({"containers": [c]}).items():
            caps = [s for s in shapes if resource in s.per_pod]
            if caps and len(caps) == len(shapes) and all(need > s.per_pod[resource] for s in caps):
                shape = caps[0]
                cap = shape.per_pod[resource]
                detail = (
                    f"pod set {pod_set.name}: container {c.get('name')} requests {_amount(resource, need)} {resource}, "
                    f"but the device plugin of pool {shape.pool} gives one container at most {cap}"
                )
                return _blocked(detail, shape.ref, f"request at most {cap} {resource} per container")
    return None


def _amount(resource: str, n: Fraction) -> str:
    if resource == "memory" or resource.startswith(HUGEPAGES_PREFIX):
        return f"{float(n) / 2**30:.1f}Gi"
    return str(int(n)) if n.denominator == 1 else f"{float(n):.2f}"


def _offers(shape: NodeShape) -> str:
    return ", ".join(f"{_amount(r, n)} {r}" for r, n in sorted(shape.allocatable.items())) or "nothing counted"


def _blocked(detail: str, blocker: str, unblock: str) -> Stage:
    return Stage("placement", False, detail, blocker, unblock, CITES)


def _gang_too_large(pods: list[tuple[str, dict[str, Fraction], list[NodeShape]]], walk: Walk) -> Stage:
    """The pods fit one by one but not all at once: say how many nodes the gang needs and how many there are."""
    unbounded = pack(pods, {s.ref: 10_000 for _, _, shapes in pods for s in shapes})
    need = _by_pool([n.shape for n in unbounded or []])
    pool, used = max(need.items(), key=lambda kv: len(kv[1])) if need else ("", [])
    shapes = [s for _, _, ss in pods for s in ss if (s.pool or "system nodes") == pool]
    shapes = list({s.ref: s for s in shapes}.values())
    exist = sum(s.exist for s in shapes)
    most = sum(s.most for s in shapes)
    count = len(used)
    group = _group(shapes)
    if shapes and shapes[0].ref.startswith("NodeGroup/"):
        shape = shapes[0]
        if shape.burst:
            have = f"at most {most} (the open burst window's cap)"
            first = "" if walk.spec.pool(pool).scaling.max >= count else f", after raising its max to {count}"
            unblock = f"open a burst window of {count} nodes on pool {pool}{first}"
        elif shape.grows:
            have = f"at most {most} (its max, which {shape.grows} grows it to)"
            unblock = f"raise max of pool {pool} to {count}"
        else:
            have = f"{exist} (its desired size; nothing scales it, so its max of {shape.max_size} is never reached)"
            unblock = f"raise the desired size of pool {pool} to {count}, or scale it with an autoscaler"
            if shape.max_size < count:
                unblock = f"raise max and desired size of pool {pool} to {count}"
        detail = f"the gang of {walk.workload.pods} pods needs {count} nodes of pool {pool}; {group} has {have}"
        notes = [n for s in shapes for n in s.notes]
        if notes:
            detail += "; " + notes[0]
        return Stage("placement", False, detail, group, unblock, CITES + BURST_CITES if shape.burst else CITES)
    detail = (
        f"the gang of {walk.workload.pods} pods needs {count} nodes of pool {pool}; it has {exist} "
        f"({group}); all of its pods must run at once"
    )
    return _blocked(detail, group, f"add {count - exist} servers to pool {pool}, or run fewer pods at once")


def check(walk: Walk) -> Stage:
    """Place every pod of every pod set at once on the cluster's nodes (`walk.placement` is set when they fit)."""
    shapes = cluster_nodes(walk.spec, walk.cluster)
    pods: list[tuple[str, dict[str, Fraction], list[NodeShape]]] = []
    for pod_set in walk.pod_sets:
        request = pod_requests(pod_set.spec)
        fitting = [s for s in shapes if fits(pod_set.spec, s.node) and s.most > 0]
        if not fitting:
            fitting_any = [s for s in shapes if fits(pod_set.spec, s.node)]
            if fitting_any:
                return _no_capacity(walk, pod_set, fitting_any)
            return _no_node(walk, pod_set, shapes)
        capped = _over_cap(pod_set, fitting)
        if capped is not None:
            return capped
        roomy = [s for s in fitting if _Open(s, dict(s.allocatable)).room(request)]
        if not roomy:
            elsewhere = [s for s in shapes if s.most > 0 and _Open(s, dict(s.allocatable)).room(request)]
            if not any(s.pool for s in fitting) and any(s.pool for s in elsewhere):
                return _no_node(walk, pod_set, [s for s in elsewhere if s.pool])
            return _too_big(pod_set, request, fitting)
        pods.extend((pod_set.name, request, roomy) for _ in range(pod_set.count))
    nodes = pack(pods, {s.ref: s.exist for s in shapes})
    grown = ""
    if nodes is None:
        nodes = pack(pods, {s.ref: s.most for s in shapes})
        if nodes is None:
            return _gang_too_large(pods, walk)
        growers = sorted({n.shape.grows for n in nodes if n.shape.grows})
        grown = f"; more nodes than run now: {' and '.join(growers)} must add them for the pending pods"
    used = _by_pool([n.shape for n in nodes])
    pool = ", ".join(sorted(used))
    flavor = ", ".join(sorted(set(walk.flavors.values())))
    walk.placement = Placement(walk.cluster.name, pool, len(nodes), flavor)
    notes = sorted({note for n in nodes for note in n.shape.notes})
    offers = {n.shape.ref: n.shape for n in nodes}.values()
    each = "; ".join(f"{s.ref} offers {_offers(s)} per node" for s in offers)
    detail = f"{walk.workload.pods} pods on {len(nodes)} nodes of pool {pool}{grown}; {each}"
    if notes:
        detail += "; " + "; ".join(notes)
    burst = any(n.shape.burst for n in nodes)
    return Stage("placement", True, detail, cites=CITES + BURST_CITES if burst else CITES)


def _no_capacity(walk: Walk, pod_set: PodSet, shapes: list[NodeShape]) -> Stage:
    """The pods match nodes that do not exist now: a burst pool outside a window, a group at size zero."""
    shape = shapes[0]
    detail = f"pod set {pod_set.name}: pool {shape.pool} matches but has no nodes ({shape.ref} at max size 0)"
    if shape.notes:
        detail += "; " + shape.notes[0]
    unblock = f"open a burst window for pool {shape.pool}" if shape.grows else f"raise max of pool {shape.pool}"
    return _blocked(detail, shape.ref, unblock)
