"""The reality checks of one plan in one call: render its charts with Helm, validate everything, simulate the
first `up` (gpufleet/review/reality/first_up.py) and walk the estate's canonical journeys through what it
makes (gpufleet/review/reality/journeys/). Nothing here raises on a finding: every finding is a Problem or a
blocked journey."""

from __future__ import annotations

from gpufleet.charts.cache import ChartCache
from gpufleet.charts.render import INSTALL_HINT, RenderedRelease, RenderError, render_plan
from gpufleet.engine.plan import Plan
from gpufleet.review.reality.first_up import FirstUp, Problem, simulate
from gpufleet.review.reality.journeys.canonical import promised
from gpufleet.review.reality.journeys.core import Journey
from gpufleet.review.reality.journeys.estate import clusters
from model.aws_account import quota_notes
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
    return _simulate(plan, spec, render(plan, cache or ChartCache()))


def run(
    plan: Plan, spec: EstateSpec, window: BurstWindow | None, cache: ChartCache | None = None
) -> tuple[FirstUp, list[Journey]]:
    """The first `up` simulated and the canonical journeys walked, over one rendering of the charts."""
    releases = render(plan, cache or ChartCache())
    return _simulate(plan, spec, releases), promised(spec, window, clusters(plan, releases))


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
