"""`gpufleet cost`: the cost envelope of a stack from dated catalog prices."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

import typer

from gpufleet.cli.errors import CommandError, refuse_json_summary
from gpufleet.cli.options import HERE, Format, FormatOpt, ProjectOpt, StackOpt, SummaryOpt, out, progress

AtOpt = Annotated[str | None, typer.Option("--at", help="ISO time burst windows are judged at (default: now, UTC).")]


def parse_time(value: str) -> dt.datetime:
    """An ISO time; UTC when it names no zone."""
    try:
        t = dt.datetime.fromisoformat(value)
    except ValueError:
        raise CommandError(f"--at: {value!r} is not an ISO time (e.g. 2026-12-01T09:00:00Z)") from None
    return t if t.tzinfo else t.replace(tzinfo=dt.UTC)


def cost(
    stack: StackOpt,
    format: FormatOpt = Format.text,
    at: AtOpt = None,
    project: ProjectOpt = HERE,
    summary: SummaryOpt = False,
) -> None:
    """Cost envelope from catalog prices: the estate's totals and budget verdict first, then per pool, site and
    tenant at min, desired and max size. --summary prints only the totals and the verdict."""
    refuse_json_summary(summary, format, "envelope")
    from gpufleet.render.cost import cost_json, cost_markdown, cost_text
    from gpufleet.review.cost.envelope import estate_cost
    from gpufleet.review.cost.usage_file import read_usage, usage_path
    from gpufleet.review.stack_file import judged
    from model.load import read_stack, stack_path

    now = parse_time(at) if at else dt.datetime.now(dt.UTC)
    with progress(f"cost {stack}: pricing from the catalog"):
        stack_file = read_stack(project, stack)
        spec, window, _ = judged(stack_file)  # as every command judges it
        # The usage profile beside the stack file (usage.<stack>.yaml), if any, prices usage-billed items.
        usage = read_usage(usage_path(stack_path(project, stack), stack), spec)
        envelope = estate_cost(spec, window, now, usage)
    match format:
        case Format.json:
            print(cost_json(envelope))
        case Format.markdown:
            print(cost_markdown(envelope, summary_only=summary), end="")
        case Format.text:
            cost_text(envelope, out, summary_only=summary)
