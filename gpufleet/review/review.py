"""The review of one stack, built once: spec, burst window, plan, cost envelope and policy findings.

`gpufleet preview` and `gpufleet check` render one; `gpufleet diff` compares the documents two revisions' own code
print for it (`python -m gpufleet.review.document`). `build` reads the stack file once, synthesizes the program
offline, prices the estate and evaluates the policy packs; renderers in gpufleet/render/ turn the result into text.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from gpufleet.engine.plan import Plan
from gpufleet.engine.synth import synth_stack
from gpufleet.review.cost.envelope import EstateCost, estate_cost
from gpufleet.review.cost.usage_file import read_usage, usage_path
from gpufleet.review.findings import Findings
from gpufleet.review.reality.first_up import FirstUp
from gpufleet.review.reality.journeys.core import Journey
from gpufleet.review.reality.teardown import Teardown
from gpufleet.review.reality.teardown import simulate as simulate_teardown
from gpufleet.review.stack_file import judged, policy_check
from model import catalog, clock
from model.burst import Backstop, backstop
from model.burst_state import BurstState
from model.load import StackFile, read_stack, stack_path
from model.spec import BurstWindow, EstateSpec
from model.tenant_s3 import tenant_s3_access


@dataclass(frozen=True)
class Review:
    """Everything the offline review knows about one stack at one moment (`cost.now`)."""

    spec: EstateSpec
    window: BurstWindow | None
    plan: Plan
    cost: EstateCost
    findings: Findings | None  # None: this code has no policy packs to evaluate (gpufleet.review.check absent)
    scope: str = ""  # what the policy check covered, e.g. "41 rules in 4 packs"
    # The simulated first `up` (charts rendered by Helm, objects against the real schemas, creation order):
    # None when not asked for (the `gpufleet diff` document).
    first_up: FirstUp | None = None
    # The estate's canonical journeys walked through its objects (None with first_up).
    journeys: list[Journey] | None = None
    # The documented teardown (`pulumi destroy --exclude-protected`) simulated over the plan (None with first_up).
    teardown: Teardown | None = None

    def journeys_failed(self) -> list[Journey]:
        """Canonical journeys whose verdict is not what the estate promises."""
        return [j for j in self.journeys or [] if not j.as_expected]

    @property
    def backstop(self) -> Backstop | None:
        """When the window's capacity stops by itself (None: no window holds capacity now)."""
        return None if self.window is None else backstop(self.spec, self.window, self.cost.now)

    def document(self) -> dict[str, Any]:
        """Plan, cost and findings as JSON-able data: what `gpufleet diff` reads from each revision."""
        return {
            "plan": self.plan.to_dict(),
            "cost": self.cost.to_dict(),
            "findings": None if self.findings is None else [f.to_dict() for f in self.findings],
        }


def build(
    project_dir: Path | str,
    stack: str,
    now: dt.datetime | None = None,
    *,
    chart_cache: Path | None = None,
    simulate: bool = True,
    stack_file: StackFile | None = None,
    window: BurstWindow | None = None,
) -> Review:
    """Read `stacks/Pulumi.<stack>.yaml` once (or take `stack_file`, that stack's file already read), then
    synthesize, price and check it at `now`, and (`simulate`) run the reality checks with charts from
    `chart_cache` (default: the configured chart cache). `window`: a what-if burst window in place of the stack
    file's (`gpufleet preview --burst-window`).

    Bad input (the stack file, its estate or window, an unknown rule id in its enforcement overrides, its usage
    profile) raises SpecError before anything is synthesized.
    """
    project_dir = Path(project_dir).resolve()
    stack_file = read_stack(project_dir, stack) if stack_file is None else stack_file
    spec, stack_window, ledger = judged(stack_file)
    what_if = window is not None
    window = window if what_if else stack_window
    check = policy_check()
    usage = read_usage(usage_path(stack_path(project_dir, stack), stack), spec)
    now = now or clock.now()
    state = BurstState(window, tuple(ledger), now).outputs() if what_if else None
    plan = synth_stack(project_dir, stack, stack_file, burst_state=state, now=now)
    cost = estate_cost(spec, window, now, usage)
    first_up, journeys = _reality(plan, spec, window, chart_cache) if simulate else (None, None)
    if first_up is not None and (stale := stale_s3_ranges(spec, now)) is not None:
        first_up.notes.append(stale)
    return Review(
        spec=spec,
        window=window,
        plan=plan,
        cost=cost,
        # The budget rule judges the envelope's max: one figure in the budget line and the finding.
        findings=None if check is None else cast(Findings, check.evaluate(plan, spec, cost.budget_hour())),
        scope="" if check is None else check.scope(),
        first_up=first_up,
        journeys=journeys,
        teardown=simulate_teardown(plan) if simulate else None,
    )


def stale_s3_ranges(spec: EstateSpec, now: dt.datetime) -> str | None:
    """A note when tenants' S3 egress is built from a copy of AWS's S3 ranges older than S3_RANGES_STALE_DAYS."""
    age = catalog.s3_ranges_age_days(now)
    if age <= catalog.S3_RANGES_STALE_DAYS or not any(
        tenant_s3_access(spec, s, t) for s in spec.sites for t in spec.tenants
    ):
        return None
    return (
        f"s3-ranges: the S3 ranges tenants' allow-s3 NetworkPolicies open were published {age} days ago "
        f"({catalog.s3_ranges_dated()}), more than {catalog.S3_RANGES_STALE_DAYS}; S3 traffic to a newer range would be "
        "blocked. Run `gpufleet catalog s3-ranges` and commit model/catalog/aws_s3_ranges.json"
    )


def _reality(
    plan: Plan, spec: EstateSpec, window: BurstWindow | None, chart_cache: Path | None
) -> tuple[FirstUp, list[Journey]]:
    from gpufleet.charts.cache import ChartCache
    from gpufleet.review.reality import checks as reality

    return reality.run(plan, spec, window, ChartCache(chart_cache))
