"""The first `up`, simulated: walk the plan in the order Pulumi would create it and prove that what every resource
needs exists by the time it is created.

Pulumi creates a resource once everything it depends on exists: its `depends_on`, the resources whose outputs it
takes, and its provider. The Plan records them as `dependencies` and `provider`. So what is sure to exist when a
resource is created is the closure of those (`before`).

- Each resource is checked for reach, its CRD, its namespace, a node for its workloads and its schema (CHECKS).
- An existing cluster has exactly the nodes the stack states (`system_nodes`), and no others.
- It cannot know whether an operator reconciles in time: an operator-applied CRD counts once its triggering
  object exists.
- Nor anything decided at run time: lookups, webhooks, admission policies, quotas, capacity.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from gpufleet.charts.operator_crds import CONFIG_FILE, UnknownFile, applied_objects, operator_crds
from gpufleet.charts.render import RenderedObject, RenderedRelease
from gpufleet.engine.plan import Plan, PlanResource
from gpufleet.review.reality import validate
from gpufleet.review.reality.first_up_nodes import StatedNodes, plan_node, stated_nodes
from gpufleet.review.reality.first_up_phases import vpn_phases
from gpufleet.review.reality.scheduling import Node, describe, fits, pod_spec
from model import kinds
from model.cni import K8S_PROVIDER_TYPE
from model.reach import api_clients, api_reachable_from
from model.spec import EksCluster, EstateSpec

Check = Literal["chart", "crd", "namespace", "node", "schema", "reach"]
CHECKS: tuple[Check, ...] = ("chart", "reach", "crd", "namespace", "node", "schema")
BUILTIN_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
INSTALL_HOOKS = frozenset({"", "pre-install", "post-install"})
WORKLOADS = frozenset({"Deployment", "StatefulSet", "Job"})
# A bare-metal site's Kubernetes version is not in its stack file; its objects are checked against the version an
# AWS site defaults to (EksCluster.version).
DEFAULT_VERSION: str = EksCluster.model_fields["version"].default


@dataclass(frozen=True)
class Problem:
    resource: str  # logical key of the plan resource (for a chart's object: its Release)
    name: str  # what it is, e.g. "IPPool network-operator/ib" or "Release kueue"
    check: Check
    missing: str  # what is missing, e.g. "CRD ippools.nv-ipam.nvidia.com"
    message: str


@dataclass
class FirstUp:
    problems: list[Problem] = field(default_factory=list)
    rendered: dict[str, int] = field(default_factory=dict)  # site/release -> objects it renders (CRDs included)
    checked: int = 0  # objects checked (ours and rendered)
    unchecked: list[str] = field(default_factory=list)  # CEL rules that could not be evaluated offline
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "problems": [asdict(p) for p in self.problems],
            "rendered": dict(self.rendered),
            "checked": self.checked,
            "unchecked": list(self.unchecked),
            "notes": list(self.notes),
        }

    def counts(self) -> dict[str, int]:
        return {c: sum(1 for p in self.problems if p.check == c) for c in CHECKS}


@dataclass(frozen=True)
class CrdSource:
    group: str
    kind: str
    crd: dict[str, Any]
    key: str  # the plan resource that brings it
    how: str  # e.g. "release gpu-operator (crds/)"

    @property
    def name(self) -> str:
        return str((self.crd.get("metadata") or {}).get("name", f"{self.kind}.{self.group}"))

    @property
    def namespaced(self) -> bool:
        return (self.crd.get("spec") or {}).get("scope", "Namespaced") == "Namespaced"


def _crd_source(crd: dict[str, Any], key: str, how: str) -> CrdSource:
    spec = crd.get("spec") or {}
    return CrdSource(str(spec.get("group", "")), str((spec.get("names") or {}).get("kind", "")), crd, key, how)


def group_of(api_version: str) -> str:
    return api_version.split("/")[0] if "/" in api_version else ""


def _label(manifest: dict[str, Any]) -> str:
    meta = manifest.get("metadata") or {}
    ns = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{manifest.get('kind')} {ns}{meta.get('name', '?')}"


class _Simulation:
    def __init__(self, plan: Plan, spec: EstateSpec, releases: dict[str, RenderedRelease]) -> None:
        self.plan, self.spec, self.releases = plan, spec, releases
        self.result = FirstUp()
        self._crd_sources: dict[str, list[CrdSource]] = {}
        self._namespace_sources: dict[str, dict[str, list[tuple[str, str]]]] = {}

    # -- the dependency graph --------------------------------------------------------------------------------
    @functools.cache  # noqa: B019 (one simulation object per run)
    def before(self, key: str) -> frozenset[str]:
        """Every resource guaranteed to exist when `key` is created."""
        r = self.plan.get(key)
        direct = [*r.dependencies, *([r.provider] if r.provider else [])]
        out: set[str] = set()
        for d in direct:
            if d in self.plan._by_key:
                out.add(d)
                out |= self.before(d)
                # depending on a component means depending on everything it registered
                out |= {c.key for c in self.plan.descendants(d)}
        return frozenset(out)

    def cluster(self, r: PlanResource) -> str:
        return r.provider or ""

    def site_of(self, key: str) -> str:
        for a in self.plan.ancestors(key):
            if a.type.endswith(":Site"):
                return a.name
        return ""

    def version(self, cluster: str) -> str:
        site = self.spec.site(self.site_of(cluster)) if self.site_of(cluster) else None
        version = kinds.of(site).kubernetes_version if site is not None else None
        return version or DEFAULT_VERSION

    def name(self, key: str) -> str:
        r = self.plan.get(key)
        if r.is_kubernetes_object:
            return _label(r.inputs)
        if r.type.endswith(":Release"):
            return f"Release {r.inputs.get('name', r.name)}"
        return f"{r.type.split(':')[-1]} {r.name}"

    def problem(self, key: str, name: str, check: Check, missing: str, message: str) -> None:
        self.result.problems.append(Problem(key, name, check, missing, message))

    # -- what exists in a cluster ------------------------------------------------------------------------------
    def crd_sources(self, cluster: str) -> list[CrdSource]:
        if cluster in self._crd_sources:
            return self._crd_sources[cluster]
        out: list[CrdSource] = []
        operator_charts: set[str] = set()
        for r in self.plan.helm_releases():
            if r.provider != cluster or r.key not in self.releases:
                continue
            rel = self.releases[r.key]
            operator_charts.add(rel.chart)
            for crd in rel.crds:
                out.append(_crd_source(crd.manifest, r.key, f"release {r.inputs.get('name')} ({crd.source})"))
            for obj in rel.objects:
                if obj.kind == "CustomResourceDefinition":
                    out.append(_crd_source(obj.manifest, r.key, f"release {r.inputs.get('name')} ({obj.source})"))
        for r, applied in self.file_objects():
            if r.provider == cluster and applied.get("kind") == "CustomResourceDefinition":
                out.append(_crd_source(applied, r.key, f"ConfigFile {r.name} ({r.inputs.get('file')})"))
        for r in self.plan.kubernetes_objects():
            if r.provider != cluster:
                continue
            if r.inputs.get("kind") == "CustomResourceDefinition":
                out.append(_crd_source(r.inputs, r.key, self.name(r.key)))
            for op in operator_crds():
                if (
                    op.trigger_kind == r.inputs.get("kind")
                    and op.chart in operator_charts
                    and _field(r.inputs, op.trigger_field)
                ):
                    how = (
                        f"{op.chart} operator, when it reconciles {self.name(r.key)} ({op.trigger_field}; {op.source})"
                    )
                    out.append(_crd_source(op.crd, r.key, how))
        self._crd_sources[cluster] = out
        return out

    @functools.cache  # noqa: B019 (one simulation object per run)
    def file_objects(self) -> tuple[tuple[PlanResource, dict[str, Any]], ...]:
        """Every object a ConfigFile of the plan applies, with its ConfigFile (one without an offline copy of its
        file applies nothing known: check_files reports it)."""
        out = []
        for r in self.plan.find(CONFIG_FILE):
            try:
                out += [(r, obj) for obj in applied_objects(str(r.inputs.get("file")))]
            except UnknownFile:
                continue
        return tuple(out)

    def unrendered(self, cluster: str) -> bool:
        return any(
            r.provider == cluster and not (r.key in self.releases and self.releases[r.key].rendered)
            for r in self.plan.helm_releases()
        )

    def namespace_sources(self, cluster: str) -> dict[str, list[tuple[str, str]]]:
        """namespace -> [(key that creates it, how)]."""
        if cluster in self._namespace_sources:
            return self._namespace_sources[cluster]
        out: dict[str, list[tuple[str, str]]] = {}
        for r in self.plan.kubernetes_objects():
            if r.provider == cluster and r.type == "kubernetes:core/v1:Namespace":
                out.setdefault(str((r.inputs.get("metadata") or {}).get("name")), []).append((r.key, self.name(r.key)))
        for r in self.plan.helm_releases():
            if r.provider != cluster:
                continue
            if r.inputs.get("createNamespace"):
                out.setdefault(str(r.inputs.get("namespace")), []).append(
                    (r.key, f"{self.name(r.key)} createNamespace")
                )
            for obj in self.releases[r.key].objects if r.key in self.releases else []:
                if obj.kind == "Namespace":
                    out.setdefault(obj.name, []).append((r.key, f"{self.name(r.key)} ({obj.source})"))
        self._namespace_sources[cluster] = out
        return out

    def stated_nodes(self, cluster: str) -> StatedNodes | None:
        """The nodes an existing cluster (bare metal, a Kueue manager reached by kubeconfig) has: those the stack
        states (`system_nodes`), and no others. A controller that fits none of them (Kueue's controller-manager
        and NFD's garbage collector tolerate no taint; every GPU node is tainted) is a node problem naming the
        field to state them in."""
        return stated_nodes(self.spec, self.site_of(cluster), self.plan.get(cluster).name if cluster else "")

    def nodes_before(self, key: str, cluster: str) -> list[Node]:
        stated = self.stated_nodes(cluster)
        planned = (plan_node(self.plan.get(k)) for k in self.before(key))
        return [*(stated.nodes() if stated else []), *(n for n in planned if n is not None)]

    # -- checks -------------------------------------------------------------------------------------------------
    def run(self) -> FirstUp:
        self.result.notes += [phase.note() for phase in vpn_phases(self.spec, self.plan)]
        self.check_reach()
        for r in self.plan.helm_releases():
            self.check_release(r)
        for r in self.plan.kubernetes_objects():
            self.check_object(
                r.key, self.name(r.key), r.inputs, self.cluster(r), self.before(r.key), partial=r.type.endswith("Patch")
            )
        self.check_files()
        order = {c: i for i, c in enumerate(CHECKS)}
        self.result.problems.sort(key=lambda p: (order[p.check], p.resource, p.name, p.message))
        return self.result

    def check_reach(self) -> None:
        """Everyone who must reach a site's API reaches it (model.reach): the deployer every site it
        creates Kubernetes resources in (through that site's provider), a MultiKueue manager its cloud worker."""
        providers = {self.site_of(p.key): p for p in self.plan.find(K8S_PROVIDER_TYPE) if self.site_of(p.key)}
        workers = [r for r in self.plan.kubernetes_objects() if r.inputs.get("kind") == "MultiKueueCluster"]
        for site in self.spec.sites:
            for client in api_clients(self.spec, site):
                if client.role == "deployer":
                    if site.name not in providers:
                        continue
                    key, name = providers[site.name].key, f"Kubernetes provider {providers[site.name].name}"
                    uses = "every Kubernetes resource of the site is created through it"
                else:
                    if not workers:
                        continue
                    key, name, uses = workers[0].key, self.name(workers[0].key), "MultiKueue dispatches to it"
                reach = api_reachable_from(self.spec, site, client)
                if not reach:
                    self.problem(
                        key,
                        name,
                        "reach",
                        f"a path from {client.name} to the API of site {site.name}",
                        f"{client.name} cannot reach the Kubernetes API of site {site.name} ({uses}): {reach.via}",
                    )

    def check_files(self) -> None:
        """Each ConfigFile's objects like ours; a ConfigFile whose file gpufleet holds no copy of is a problem."""
        for r in self.plan.find(CONFIG_FILE):
            url = str(r.inputs.get("file"))
            try:
                applied_objects(url)
            except UnknownFile as e:
                self.problem(r.key, f"ConfigFile {r.name}", "chart", f"an offline copy of {url}", str(e.args[0]))
        for r, obj in self.file_objects():
            self.check_object(
                r.key, f"{_label(obj)} ({r.inputs.get('file')})", obj, self.cluster(r), self.before(r.key)
            )

    def check_release(self, r: PlanResource) -> None:
        name = self.name(r.key)
        rel = self.releases.get(r.key)
        if rel is None or not rel.rendered:
            why = rel.error if rel else "not rendered"
            self.problem(
                r.key,
                name,
                "chart",
                f"chart {r.inputs.get('chart')} {r.inputs.get('version')}",
                f"{name} cannot be checked: {why}",
            )
            return
        objects = [o for o in rel.objects if set(o.hook.split(",")) & INSTALL_HOOKS or not o.hook]
        where = self.site_of(r.key) or (self.plan.get(r.provider).name if r.provider else "")
        self.result.rendered[f"{where}/{r.inputs.get('name')}"] = len(rel.crds) + len(rel.objects)
        if rel.note:
            self.result.notes.append(f"{name}: {rel.note}")
        cluster, ready = self.cluster(r), self.before(r.key)
        if not r.inputs.get("createNamespace"):
            self.need_namespace(r.key, name, str(r.inputs.get("namespace")), cluster, ready)
        own = [_crd_source(c.manifest, r.key, f"{name} ({c.source})") for c in rel.crds]
        own += [
            _crd_source(o.manifest, r.key, f"{name} ({o.source})")
            for o in rel.objects
            if o.kind == "CustomResourceDefinition"
        ]
        for crd in rel.crds:
            self.check_object(r.key, f"{_label(crd.manifest)} ({crd.source})", crd.manifest, cluster, ready, own=own)
        for obj in rel.objects:
            self.check_object(
                r.key,
                f"{_label(obj.manifest)} ({obj.source})",
                obj.manifest,
                cluster,
                ready,
                own=own,
                release_namespace=rel.namespace,
            )
        if not r.inputs.get("skipAwait"):
            self.check_nodes(r, [o for o in objects if o.kind in WORKLOADS])

    def check_nodes(self, r: PlanResource, workloads: Iterable[RenderedObject]) -> None:
        """A Helm release waits until its workloads are ready (pulumi-kubernetes `helm.v3.Release` without
        `skipAwait`, like `helm install --wait`). So each Deployment, StatefulSet or install Job it renders needs a
        node it may run on (selectors, required affinity, taints) among the node groups in its closure."""
        nodes = self.nodes_before(r.key, self.cluster(r))
        stated = self.stated_nodes(self.cluster(r))
        for w in workloads:
            if w.kind != "Job" and (w.manifest.get("spec") or {}).get("replicas", 1) == 0:
                continue
            spec = pod_spec(w.manifest)
            if spec is None or any(fits(spec, n) for n in nodes):
                continue
            have = ", ".join(sorted(n.name for n in nodes)) or "none"
            where = stated.hint() if stated else ""
            self.problem(
                r.key,
                f"{_label(w.manifest)} ({w.source})",
                "node",
                f"a node for {w.kind} {w.name}",
                f"{self.name(r.key)} waits for {w.kind} {w.name} to become ready, but no node it can run on "
                f"is guaranteed to exist by then (it needs: {describe(spec)}; nodes the release waits for: {have})"
                f"{where}",
            )

    def need_namespace(self, key: str, name: str, ns: str, cluster: str, ready: frozenset[str]) -> None:
        """A namespaced object's namespace is a built-in one, or is created by something in its closure: a
        Namespace object, a Release with `createNamespace`, a chart rendering it."""
        if ns in BUILTIN_NAMESPACES:
            return
        sources = self.namespace_sources(cluster).get(ns, [])
        if any(k in ready for k, _ in sources):
            return
        if sources:
            by = "; ".join(how for _, how in sources)
            msg = f"{name} is in namespace {ns}, created by {by}, which it does not wait for (add it to depends_on)"
        else:
            msg = f"{name} is in namespace {ns}, which nothing in the stack creates"
        self.problem(key, name, "namespace", f"namespace {ns}", msg)

    def check_object(
        self,
        key: str,
        name: str,
        manifest: dict[str, Any],
        cluster: str,
        ready: frozenset[str],
        *,
        partial: bool = False,
        own: list[CrdSource] | None = None,
        release_namespace: str | None = None,
    ) -> None:
        """Every object, ours, rendered or applied from a ConfigFile, is valid for the Kubernetes version its site
        pins and for its CRD."""
        self.result.checked += 1
        api_version, kind = str(manifest.get("apiVersion", "")), str(manifest.get("kind", ""))
        version = self.version(cluster)
        issues = validate.builtin_issues(manifest, version, partial=partial)
        namespaced = True
        if issues is None:
            source = self.find_crd(key, name, api_version, kind, cluster, ready, own or [])
            issues = validate.crd_issues(manifest, source.crd) if source else []
            namespaced = source.namespaced if source else True
        for issue in issues:
            if issue.unchecked:
                self.result.unchecked.append(f"{name}: {issue.path}: {issue.message}")
            else:
                what = f"Kubernetes {version} OpenAPI" if validate.is_builtin(api_version, kind, version) else "its CRD"
                self.problem(
                    key,
                    name,
                    "schema",
                    f"a valid {issue.path}",
                    f"{name}: {issue.path}: {issue.message} (against {what})",
                )
        ns = (manifest.get("metadata") or {}).get("namespace")
        if ns and namespaced and kind != "Namespace" and ns != release_namespace:
            self.need_namespace(key, name, str(ns), cluster, ready)

    def find_crd(
        self,
        key: str,
        name: str,
        api_version: str,
        kind: str,
        cluster: str,
        ready: frozenset[str],
        own: list[CrdSource],
    ) -> CrdSource | None:
        """A custom resource's CRD, from something in its closure: a Helm release (its `crds/` folder or
        templates), a ConfigFile (the file its URL names, kept offline by operator_crds), or an operator whose
        triggering object is there (operator_crds). A chart's own rendered objects take theirs from the chart
        itself or from a release the chart's Release waits for."""
        group = group_of(api_version)
        matching = [s for s in [*own, *self.crd_sources(cluster)] if s.group == group and s.kind == kind]
        in_time = [s for s in matching if s in own or s.key in ready]
        if in_time:
            return in_time[0]
        if matching:
            by = "; ".join(sorted({s.how for s in matching}))
            self.problem(
                key,
                name,
                "crd",
                f"CRD {matching[0].name}",
                f"{name} is created before its CRD {matching[0].name}: it comes from {by}, which "
                f"{self.name(key) if own else name.split(' (')[0]} does not wait for (add it to depends_on)",
            )
            return matching[0]
        if self.unrendered(cluster):
            return None  # a release of this cluster could not be rendered (a chart problem): its CRDs are unknown
        self.problem(
            key,
            name,
            "crd",
            f"CRD for {kind}.{group or 'core'}",
            f"{name} needs the CRD of {kind} ({api_version}), which no release or operator in this cluster installs",
        )
        return None


def _field(obj: dict[str, Any], dotted: str) -> bool:
    node: Any = obj
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return node not in (None, {}, [])


def simulate(plan: Plan, spec: EstateSpec, releases: dict[str, RenderedRelease]) -> FirstUp:
    """The first `up` of `plan`, checked: every problem found, none raised."""
    return _Simulation(plan, spec, releases).run()


def iter_problems(result: FirstUp, check: Check) -> Iterator[Problem]:
    return (p for p in result.problems if p.check == check)
