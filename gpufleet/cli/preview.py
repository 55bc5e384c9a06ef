"""`gpufleet preview`: the stack synthesized offline, priced and checked (its Review), as text, Markdown or JSON."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated

import typer

from gpufleet.cli.errors import CommandError, refuse_json_summary
from gpufleet.cli.options import (
    HERE,
    ChartCacheOpt,
    Format,
    FormatOpt,
    ProjectOpt,
    StackOpt,
    SummaryOpt,
    out,
    progress,
)
from model.spec import BurstWindow

BurstWindowOpt = Annotated[
    str | None,
    typer.Option(
        "--burst-window",
        metavar="GPUS:HOURS",
        help="Preview as if a burst window of GPUS for HOURS opened now (hybrid stacks; offline, no state written).",
    ),
]


def parse_burst_window(value: str) -> tuple[int, float]:
    """`GPUS:HOURS` -> (gpus, hours); CommandError (exit 2) naming the option otherwise."""
    gpus, sep, hours = value.partition(":")
    try:
        parsed = (int(gpus), float(hours))
    except ValueError:
        parsed = None
    if not sep or parsed is None or parsed[0] < 1 or not parsed[1] > 0 or parsed[1] == float("inf"):
        raise CommandError(
            f"--burst-window: {value!r} is not GPUS:HOURS (a whole number of GPUs of at least 1, and hours more "
            "than 0), e.g. 16:8"
        )
    return parsed


def what_if_window(project: Path, stack: str, value: str, now: dt.datetime) -> BurstWindow:
    """The window `gpufleet burst open --gpus GPUS --hours HOURS` would record now, offline: the budget arithmetic
    against the stack file's ledger (shortened as `open` shortens it), the pool's own zone, else the site's first."""
    from gpufleet.burst.errors import BurstError
    from gpufleet.burst.preflight import BurstRequest, offline_check
    from model.load import read_stack

    gpus, hours = parse_burst_window(value)
    stack_file = read_stack(project, stack)
    spec = stack_file.estate(priced=False)
    try:
        return offline_check(spec, stack_file.ledger(), BurstRequest(gpus=gpus, hours=hours), now).window
    except BurstError as err:
        raise CommandError(f"--burst-window {value}: {err}", err.exit_code) from None


def preview(
    stack: StackOpt,
    format: FormatOpt = Format.text,
    project: ProjectOpt = HERE,
    chart_cache: ChartCacheOpt = None,
    summary: SummaryOpt = False,
    burst_window: BurstWindowOpt = None,
) -> None:
    """Synthesize a stack offline: the summary first (policy and first-up verdicts, cost headline, warnings),
    then the details (findings, cost envelope, resource tree by component, resources by type).

    Needs no credentials and no Pulumi CLI. Exits 1 when a mandatory policy rule is violated (first-up problems
    are shown; `gpufleet check` fails on them). --summary prints only the summary. --burst-window GPUS:HOURS
    previews the estate as if that window opened now, with its backstop (when the capacity stops by itself).
    """
    refuse_json_summary(summary, format, "plan")
    from gpufleet.render.preview import preview_json, preview_markdown, preview_text
    from gpufleet.review.review import build

    now = dt.datetime.now(dt.UTC)
    what_if = None if burst_window is None else what_if_window(project, stack, burst_window, now)
    with progress(f"preview {stack}: synthesizing offline, pricing and checking"):
        review = build(project, stack, now, chart_cache=chart_cache, window=what_if)
    match format:
        case Format.json:
            print(preview_json(review))
        case Format.markdown:
            print(preview_markdown(review, summary_only=summary), end="")
        case Format.text:
            preview_text(review, out, summary_only=summary)
    if review.findings is not None and not review.findings.passed:
        raise typer.Exit(1)
