"""The teardown simulation as text (preview, check) and as a line of a pull-request comment."""

from __future__ import annotations

from gpufleet.engine.plan import Plan
from gpufleet.review.reality.teardown import Teardown


def summary(result: Teardown, plan: Plan) -> str:
    """One line: what the teardown deletes, keeps and leaves, and whether any deletion fails."""
    protected = sum(1 for k in result.kept if plan.get(k).protect)
    kept = f"{len(result.kept)} kept with the data ({protected} protected, {len(result.kept) - protected} they need)"
    retained = f"{len(result.retained)} retained (left in the cloud, dropped from the stack)"
    failures = f"{len(result.failures)} fail on a dependency" if result.failures else "no dependency failure"
    return f"destroy ({result.command}, simulated): {len(result.deleted)} deleted, {kept}, {retained}, {failures}"


def problems_text(result: Teardown, plan: Plan) -> str:
    """The summary line and every failure: the part of a report's summary."""
    return "\n".join([summary(result, plan), *(f"  [destroy] {f.message}" for f in result.failures)]) + "\n"


def kept_text(result: Teardown, plan: Plan) -> str:
    """What the teardown keeps that is not itself protected (empty when none): detail after the summary."""
    lines = []
    for key in result.kept:
        r = plan.get(key)
        if not r.protect:
            lines.append(f"  kept with the data: {r.type.split(':')[-1]} {r.name}\n")
    return "".join(lines)


def verdict(result: Teardown, plan: Plan) -> str:
    """One line for the head of a pull-request comment."""
    return ("✅ " if not result.failures else "❌ ") + summary(result, plan)
