"""The reality checks of one plan in one call: render its charts with Helm, validate everything, simulate the
first `up` (gpufleet/review/reality/first_up.py) and walk the estate's canonical journeys through what it
makes (gpufleet/review/reality/journeys/). Nothing here raises on a finding: every finding is a Problem or a
blocked journey."""

from __future__ import annotations

from gpufleet.charts.cache import ChartCache, ChartCacheError, chart_for
from gpufleet.charts.kube_version import kube_version, supports
from gpufleet.charts.render import INSTALL_HINT, RenderedRelease, RenderError, release_values, render_plan
from gpufleet.engine.plan import Plan
from gpufleet.review.reality.first_up import FirstUp, Problem, simulate
from gpufleet.review.reality.journeys.canonical import promised
from gpufleet.review.reality.journeys.core import Journey
from gpufleet.review.reality.journeys.estate import clusters
from model import kinds
from model.aws_account import quota_notes
from model.cni import k8s_provider_name
from model.spec import BurstWindow, EstateSpec


def render(plan: Plan, cache: ChartCache) -> dict[str, RenderedRelease]:
    """Every release rendered; without the Helm engine each release carries the reason instead."""
    try:
        return render_plan(plan, cache)
    except RenderError as e:
        out = {}
        for r in plan.helm_releases():
            rel = RenderedRelease(r.key, str(r.inputs.get("chart")), str(r.inputs.get("version")), "")
            rel.error = str(e)
            out[r.key] = rel
        return out


def first_up(plan: Plan, spec: EstateSpec, cache: ChartCache | None = None) -> FirstUp:
    """The first `up` of `plan`, simulated against charts from `cache` (default: the configured chart cache).

    Without the `render` extra (schemas, CEL) the result is one problem saying so, never a silent pass."""
    cache = cache or ChartCache()
    return _with_kube_versions(_simulate(plan, spec, render(plan, cache)), plan, spec, cache)


def run(
    plan: Plan, spec: EstateSpec, window: BurstWindow | None, cache: ChartCache | None = None
) -> tuple[FirstUp, list[Journey]]:
    """The first `up` simulated and the canonical journeys walked, over one rendering of the charts."""
    cache = cache or ChartCache()
    releases = render(plan, cache)
    up = _with_kube_versions(_simulate(plan, spec, releases), plan, spec, cache)
    return up, promised(spec, window, clusters(plan, releases))


def kube_version_problems(plan: Plan, spec: EstateSpec, cache: ChartCache) -> list[Problem]:
    """A Release on a cluster with a minor the stack sets (an EKS cluster) whose chart's `kubeVersion` excludes the cluster's minor: Helm refuses to
    install it (gpufleet.charts.kube_version). Charts that state no range, or are not cached, are judged elsewhere."""
    known = ((k8s_provider_name(s.name), kinds.of(s).kubernetes_version) for s in spec.sites)
    minors = {provider: minor for provider, minor in known if minor is not None}
    out = []
    for r in plan.helm_releases():
        provider = (r.provider or "").rsplit("::", 1)[-1]
        if provider not in minors:
            continue
        reference, version, name, _, _ = release_values(r)
        chart = chart_for(reference, version)
        try:
            folder = cache.locate(chart).path if chart is not None else None
        except ChartCacheError:
            folder = None
        constraint = kube_version(folder) if folder is not None else None
        if constraint and supports(constraint, minors[provider]) is False:
            out.append(
                Problem(
                    r.key,
                    f"Release {name}",
                    "chart",
                    f"Kubernetes {minors[provider]} in its kubeVersion",
                    f"chart {reference} {version} states kubeVersion {constraint!r}, which Kubernetes "
                    f"{minors[provider]} does not meet: Helm refuses to install it; pin a chart for that minor",
                )
            )
    return out


def _with_kube_versions(up: FirstUp, plan: Plan, spec: EstateSpec, cache: ChartCache) -> FirstUp:
    up.problems.extend(kube_version_problems(plan, spec, cache))
    return up


def _simulate(plan: Plan, spec: EstateSpec, releases: dict[str, RenderedRelease]) -> FirstUp:
    """The simulation, noting the EC2 vCPU quota each GPU pool launches under (model.quotas): a quota is decided
    at run time, so offline it is what to request, never a problem."""
    try:
        result = simulate(plan, spec, releases)
    except ImportError as e:
        missing = f"the reality checks need the render extra ({INSTALL_HINT}): {e}"
        result = FirstUp(problems=[Problem("", "reality checks", "chart", "the render extra", missing)])
    result.notes += quota_notes(spec)
    return result
