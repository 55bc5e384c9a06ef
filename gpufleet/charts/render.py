"""Render a plan's Helm releases with a real Helm engine, offline, exactly as `helm install` would template them.

The engine is `helm-python-sdk` (PyPI, Apache-2.0): Python bindings over `libhelm_c`, a C ABI around Helm's own
Go SDK (helm.sh/helm/v4), shipped inside the wheel. `Chart.render` is Helm's install-time rendering (no cluster:
`lookup` returns nothing, capabilities are Helm's defaults). After rendering, the chart holds only the subcharts
whose `condition` the values enable (Helm's dependency processing), so its `crds` are the CRDs Helm would install
from `crds/` folders.

What a release renders to: its CRDs (applied first by Helm), its templates' objects (NOTES.txt dropped, test hooks
dropped since `helm install` does not run them), each tagged with the template it came from.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from gpufleet.charts.cache import CachedChart, ChartCache, ChartCacheError, chart_for
from gpufleet.engine.plan import Plan, PlanResource
from model import yaml_text

INSTALL_HINT = "pip install 'gpufleet[render]'"
# Built-in kinds that are not namespaced (`kubectl api-resources --namespaced=false` on Kubernetes 1.34; API reference
# https://kubernetes.io/docs/reference/kubernetes-api/). Helm puts every other object without a namespace into the
# release namespace when it applies it.
CLUSTER_SCOPED_BUILTINS = frozenset(
    {
        "APIService",
        "CertificateSigningRequest",
        "ClusterRole",
        "ClusterRoleBinding",
        "ComponentStatus",
        "CSIDriver",
        "CSINode",
        "CustomResourceDefinition",
        "DeviceClass",
        "FlowSchema",
        "IngressClass",
        "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding",
        "MutatingWebhookConfiguration",
        "Namespace",
        "Node",
        "PersistentVolume",
        "PriorityClass",
        "PriorityLevelConfiguration",
        "RuntimeClass",
        "SelfSubjectAccessReview",
        "SelfSubjectReview",
        "SelfSubjectRulesReview",
        "StorageClass",
        "SubjectAccessReview",
        "TokenReview",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ValidatingWebhookConfiguration",
        "VolumeAttachment",
        "VolumeAttributesClass",
    }
)
TEST_HOOKS = {"test", "test-success", "test-failure"}


class RenderError(Exception):
    """A release could not be rendered (engine missing, chart missing or a template error)."""


@dataclass(frozen=True)
class RenderedObject:
    source: str  # template path inside the chart, e.g. kueue/templates/prometheus/monitor.yaml
    manifest: dict[str, Any]
    hook: str = ""  # helm.sh/hook annotation, if any

    @property
    def kind(self) -> str:
        return str(self.manifest.get("kind", ""))

    @property
    def api_version(self) -> str:
        return str(self.manifest.get("apiVersion", ""))

    @property
    def name(self) -> str:
        return str((self.manifest.get("metadata") or {}).get("name", ""))

    @property
    def namespace(self) -> str | None:
        ns = (self.manifest.get("metadata") or {}).get("namespace")
        return str(ns) if ns else None


@dataclass
class RenderedRelease:
    release: str  # logical key of the Release resource
    chart: str
    version: str
    namespace: str
    crds: list[RenderedObject] = field(default_factory=list)  # from crds/ folders, installed before templates
    objects: list[RenderedObject] = field(default_factory=list)  # from templates/
    note: str = ""
    error: str = ""  # why it could not be rendered; empty when rendered

    @property
    def rendered(self) -> bool:
        return not self.error

    def all_objects(self) -> list[RenderedObject]:
        return [*self.crds, *self.objects]


def cluster_scoped_kinds(releases: Iterable[RenderedRelease], extra_crds: Iterable[dict[str, Any]] = ()) -> set[str]:
    """Kinds that take no namespace: the built-in ones and every CRD of scope Cluster among `releases`' CRDs."""
    crds = [o.manifest for r in releases for o in r.all_objects() if o.kind == "CustomResourceDefinition"]
    out = set(CLUSTER_SCOPED_BUILTINS)
    for crd in [*crds, *extra_crds]:
        spec = crd.get("spec") or {}
        if spec.get("scope") == "Cluster":
            out.add(str((spec.get("names") or {}).get("kind")))
    return out


def as_applied(obj: RenderedObject, release_namespace: str, cluster_scoped: set[str]) -> dict[str, Any]:
    """The manifest as Helm applies it: a namespaced object without a namespace goes into the release's."""
    if obj.namespace or obj.kind in cluster_scoped:
        return obj.manifest
    manifest = copy.deepcopy(obj.manifest)
    manifest.setdefault("metadata", {})["namespace"] = release_namespace
    return manifest


def _documents(source: str, text: str) -> Iterable[RenderedObject]:
    for doc in yaml_text.manifests(text):
        if not isinstance(doc, dict) or not doc:
            continue
        hook = str(((doc.get("metadata") or {}).get("annotations") or {}).get("helm.sh/hook", ""))
        yield RenderedObject(source=source, manifest=doc, hook=hook)


def _helm() -> Any:
    try:
        import helm_python
    except ImportError as e:  # the engine is an optional extra
        raise RenderError(f"the Helm engine is not installed ({INSTALL_HINT}): {e}") from None
    return helm_python


def render_chart(cached: CachedChart, values: dict[str, Any], *, name: str, namespace: str) -> RenderedRelease:
    """Render one cached chart with `values` as release `name` in `namespace` (memoised per process)."""
    key = (str(cached.path), json.dumps(values, sort_keys=True), name, namespace)
    if key not in _RENDERED:
        _RENDERED[key] = _render(cached, values, name=name, namespace=namespace)
    return copy.deepcopy(_RENDERED[key])


_RENDERED: dict[tuple[str, str, str, str], RenderedRelease] = {}


def _render(cached: CachedChart, values: dict[str, Any], *, name: str, namespace: str) -> RenderedRelease:
    helm = _helm()
    out = RenderedRelease(release=name, chart=cached.chart.name, version=cached.chart.version, namespace=namespace)
    out.note = cached.note
    try:
        with helm.Chart.load(str(cached.path)) as chart:
            manifests: dict[str, str] = chart.render(values, name=name, namespace=namespace, is_install=True)
            crds = chart.crds  # read after render: disabled subcharts are gone by now, as in `helm install`
    except helm.HelmError as e:
        raise RenderError(f"{cached.chart.name} {cached.chart.version}: {e}") from None
    for source, text in sorted(manifests.items()):
        if source.endswith("NOTES.txt"):
            continue
        for obj in _documents(source, text):
            if not set(obj.hook.split(",")) & TEST_HOOKS:
                out.objects.append(obj)
    for crd in crds:
        out.crds.extend(_documents(crd["filename"], crd["data"]))
    return out


def release_values(r: PlanResource) -> tuple[str, str, str, str, dict[str, Any]]:
    """(chart reference, version, release name, namespace, values) of a Release in a plan."""
    i = r.inputs
    return (
        str(i.get("chart", "")),
        str(i.get("version", "")),
        str(i.get("name", r.name)),
        str(i.get("namespace") or "default"),
        dict(i.get("values") or {}),
    )


def render_release(r: PlanResource, cache: ChartCache) -> RenderedRelease:
    """Render a plan's Release at its pinned version with exactly the values the plan passes.

    A release that cannot be rendered comes back with `error` set (the chart is not pinned, not cached, or the
    templates fail); a missing engine raises RenderError, since nothing could be rendered at all.
    """
    reference, version, name, namespace, values = release_values(r)
    chart = chart_for(reference, version)
    blank = RenderedRelease(release=r.key, chart=reference, version=version, namespace=namespace)
    if chart is None:
        blank.error = f"chart {reference} {version} is not pinned in model/versions.py"
        return blank
    try:
        cached = cache.locate(chart)
    except ChartCacheError as e:
        blank.error = str(e)
        return blank
    try:
        out = render_chart(cached, values, name=name, namespace=namespace)
    except RenderError as e:
        if "not installed" in str(e):
            raise
        blank.error = f"rendering failed: {e}"
        return blank
    out.release = r.key
    return out


def render_plan(plan: Plan, cache: ChartCache) -> dict[str, RenderedRelease]:
    """Every Helm release of a plan, rendered, by the release's logical key."""
    return {r.key: render_release(r, cache) for r in plan.helm_releases()}
