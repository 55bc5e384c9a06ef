"""A workload's journey through an estate: the types every stage shares.

A journey walks one workload, as its user wrote it, through the estate's own objects in the order real systems
judge it: `api` (the kind is served), `admission`, `queueing` (Kueue), `topology` (Kueue's topology request),
`placement` (the scheduler places every pod at once), `storage` (volumes bind and mount) and `network`. The first stage that refuses blocks it; later
stages are not walked, as on a real cluster.

Each stage is a function `(Walk) -> Stage` in its own module. It reads the cluster's objects (`ClusterView`),
may rewrite the pod sets as the real system would (LimitRange defaults, a Kueue flavor's node selectors and
tolerations), and cites the upstream file or page it follows (`Cite`).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, NamedTuple

from gpufleet.engine.plan import PlanResource

StageName = Literal["api", "admission", "queueing", "topology", "placement", "storage", "network"]
STAGES: tuple[StageName, ...] = ("api", "admission", "queueing", "topology", "placement", "storage", "network")
Verdict = Literal["runs", "blocked"]

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"  # Kueue's LocalQueue label (pkg/constants at versions.KUEUE)


@dataclass(frozen=True)
class Cite:
    """The upstream semantics a stage applied: an upstream file at the pinned tag or a documentation page."""

    what: str  # the rule, in a few words
    where: str  # an upstream file at the pinned tag (from model/versions.py) or a documentation URL

    def to_dict(self) -> dict[str, str]:
        return {"what": self.what, "where": self.where}


@dataclass
class PodSet:
    """Pods of one shape that a workload runs: a Deployment's replicas, one replicated Job of a JobSet.

    `count` pods must run at the same time (the gang Kueue admits at once). `spec` is the pod spec: the
    user's own as read, then each stage's rewrite of it (a deep copy, never the manifest itself)."""

    name: str
    count: int
    spec: dict[str, Any]
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)

    def copy(self) -> PodSet:
        return PodSet(self.name, self.count, copy.deepcopy(self.spec), dict(self.labels), dict(self.annotations))

    def containers(self) -> Iterator[dict[str, Any]]:
        """Init and regular containers (admission and quota judge both)."""
        yield from self.spec.get("initContainers") or []
        yield from self.spec.get("containers") or []


@dataclass(frozen=True)
class Workload:
    """One object a user submits (Pod, Job, JobSet, Deployment, StatefulSet, ...), read from a manifest."""

    api_version: str
    kind: str
    name: str
    namespace: str
    labels: dict[str, str]
    annotations: dict[str, str]
    pod_sets: tuple[PodSet, ...]
    manifest: dict[str, Any]
    source: str  # where it was read: "path/job.yaml, document 2"

    @property
    def id(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"

    @property
    def group(self) -> str:
        """The API group ("" for the core group)."""
        return self.api_version.rpartition("/")[0]

    @property
    def queue_name(self) -> str | None:
        return self.labels.get(QUEUE_LABEL)

    @property
    def pods(self) -> int:
        return sum(p.count for p in self.pod_sets)


@dataclass(frozen=True)
class Stage:
    """What one stage decided. `blocker` names the object that refuses (kind/namespace/name) and `unblock`
    what would let the workload through; both are empty when the stage passes."""

    name: StageName
    ok: bool
    detail: str
    blocker: str = ""
    unblock: str = ""
    cites: tuple[Cite, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.name,
            "ok": self.ok,
            "detail": self.detail,
            "blocker": self.blocker,
            "unblock": self.unblock,
            "cites": [c.to_dict() for c in self.cites],
        }


@dataclass(frozen=True)
class Placement:
    """Where the workload lands: its cluster and pool, how many nodes it takes and the Kueue flavor."""

    site: str
    pool: str
    nodes: int
    flavor: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"site": self.site, "pool": self.pool, "nodes": self.nodes, "flavor": self.flavor}


@dataclass(frozen=True)
class NodeGroup:
    """An EKS managed node group the plan creates for a cluster. `autoscaled`: its Auto Scaling group carries the
    cluster-autoscaler's discovery tags, so the autoscaler may grow it to its max."""

    resource: PlanResource
    autoscaled: bool


class _Index(NamedTuple):
    """A view's objects of one kind: the first of each name, and of each (name, namespace); those of each
    namespace, in the view's order."""

    named: dict[Any, dict[str, Any]]
    named_in: dict[tuple[Any, Any], dict[str, Any]]
    in_namespace: dict[Any, list[dict[str, Any]]]


@dataclass(frozen=True)
class ClusterView:
    """One Kubernetes cluster of the estate as the plan makes it: a site's cluster or the MultiKueue manager.

    `objects` holds every manifest the plan applies to it (its own Kubernetes resources) and every object its
    Helm releases render (CRDs included), as plain dicts. `site` is the stack's site name, None for the
    manager."""

    name: str
    site: str | None
    objects: tuple[dict[str, Any], ...]
    releases: dict[str, dict[str, Any]] = field(default_factory=dict)  # chart name -> the values the plan sets
    node_groups: tuple[NodeGroup, ...] = ()  # the cloud node groups the plan creates (none on an existing cluster)
    # What the stages derive from the view and read again on every walk (journeys.nodes.cluster_nodes), kept once.
    derived: dict[str, Any] = field(default_factory=dict, init=False, compare=False, repr=False)

    @cached_property
    def _by_kind(self) -> dict[Any, list[dict[str, Any]]]:
        """The objects by kind, in the view's order: every stage asks by kind, on every walk."""
        out: dict[Any, list[dict[str, Any]]] = {}
        for o in self.objects:
            out.setdefault(o.get("kind"), []).append(o)
        return out

    def of(self, kind: str, api_group: str | None = None) -> list[dict[str, Any]]:
        """Objects of `kind` (and API group, when given: "" is the core group)."""
        objects = self._by_kind.get(kind, [])
        if api_group is None:
            return list(objects)
        return [o for o in objects if str(o.get("apiVersion", "")).rpartition("/")[0] == api_group]

    @cached_property
    def _indexes(self) -> dict[str, _Index]:
        """Per kind, once asked for (`_index`): the walks look objects up by name and namespace many times."""
        return {}

    def _index(self, kind: str) -> _Index:
        if kind not in self._indexes:
            index = _Index({}, {}, {})
            for o in self._by_kind.get(kind, []):
                meta = o.get("metadata") or {}
                name, namespace = meta.get("name"), meta.get("namespace")
                with contextlib.suppress(TypeError):  # an unhashable name or namespace: no lookup finds it
                    index.named.setdefault(name, o)
                    index.named_in.setdefault((name, namespace), o)
                with contextlib.suppress(TypeError):
                    index.in_namespace.setdefault(namespace, []).append(o)
            self._indexes[kind] = index
        return self._indexes[kind]

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The first object of `kind` named `name` (in `namespace`, when given)."""
        index = self._index(kind)
        return index.named.get(name) if namespace is None else index.named_in.get((name, namespace))

    def in_namespace(self, kind: str, namespace: str) -> list[dict[str, Any]]:
        return list(self._index(kind).in_namespace.get(namespace, []))


def ref(obj: dict[str, Any]) -> str:
    """kind/namespace/name of an object (kind/name when cluster-scoped), as a blocker names it."""
    meta = obj.get("metadata") or {}
    parts = [str(obj.get("kind", "")), str(meta.get("namespace") or ""), str(meta.get("name", ""))]
    return "/".join(p for p in parts if p)


@dataclass
class Walk:
    """One workload on its way: where it is headed and the pod sets as the stages so far have left them.

    `cluster` is where the workload is submitted (on a hybrid estate the MultiKueue manager; `queueing` then
    moves it to the worker the dispatch picks). `flavors` maps each pod set to the ResourceFlavor Kueue
    assigned, `pools` to the node pools that flavor selects."""

    workload: Workload
    cluster: ClusterView
    clusters: dict[str, ClusterView]
    spec: Any  # model.spec.EstateSpec (kept loose here so stage tests can build small estates)
    pod_sets: list[PodSet] = field(default_factory=list)
    flavors: dict[str, str] = field(default_factory=dict)
    pools: dict[str, list[str]] = field(default_factory=dict)
    placement: Placement | None = None
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.pod_sets:
            self.pod_sets = [p.copy() for p in self.workload.pod_sets]


@dataclass(frozen=True)
class Journey:
    """One workload walked through an estate. `expected` is set on the estate's canonical journeys: what the
    estate promises ("runs", or "blocked" for what a tenant must be refused)."""

    workload: Workload
    stages: tuple[Stage, ...]
    placement: Placement | None = None
    expected: Verdict | None = None
    title: str = ""  # what a canonical journey proves, in a few words
    expected_stage: str | None = None  # where a promised refusal must happen; None: anywhere

    @property
    def verdict(self) -> Verdict:
        done = len(self.stages) == len(STAGES) and all(s.ok for s in self.stages)
        return "runs" if done else "blocked"

    @property
    def blocked_at(self) -> Stage | None:
        return next((s for s in self.stages if not s.ok), None)

    @property
    def as_expected(self) -> bool:
        if self.expected is None:
            return True
        stop = self.blocked_at
        at = self.expected_stage is None or (stop is not None and stop.name == self.expected_stage)
        return self.expected == self.verdict and at

    @property
    def promise(self) -> str:
        """What a canonical journey promises, in words: `runs`, `blocked`, or `blocked at <stage>`."""
        return f"{self.expected} at {self.expected_stage}" if self.expected_stage else str(self.expected)

    def to_dict(self) -> dict[str, Any]:
        stop = self.blocked_at
        out: dict[str, Any] = {
            "workload": self.workload.id,
            "source": self.workload.source,
            "verdict": self.verdict,
            "stage": stop.name if stop else None,
            "reason": stop.detail if stop else None,
            "blocker": stop.blocker if stop else None,
            "unblock": stop.unblock if stop else None,
            "placement": self.placement.to_dict() if self.placement else None,
            "stages": [s.to_dict() for s in self.stages],
        }
        if self.expected is not None:
            out["expected"] = self.expected
            out["title"] = self.title
            if self.expected_stage is not None:
                out["expected_stage"] = self.expected_stage
        return out
