"""`gpufleet check`: the policy packs over the stack's plan, as `pulumi preview --policy-pack` runs them."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpufleet.cli.errors import CommandError, output_directory
from gpufleet.cli.options import (
    HERE,
    ChartCacheOpt,
    CheckFormat,
    CheckFormatOpt,
    ProjectOpt,
    StackOpt,
    SummaryOpt,
    out,
    progress,
)

WriteConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--write-config",
        help="Write one --policy-pack-config file per pack (<dir>/<pack>.json) for `pulumi preview` and stop.",
    ),
]


def check(
    stack: StackOpt,
    format: CheckFormatOpt = CheckFormat.text,
    write_config: WriteConfigOpt = None,
    project: ProjectOpt = HERE,
    chart_cache: ChartCacheOpt = None,
    summary: SummaryOpt = False,
) -> None:
    """Evaluate the policy packs, simulate the first `up` and the teardown, and walk the canonical journeys
    offline; exit 1 on a mandatory violation, a first-up problem, a teardown deletion that fails on a dependency
    or a journey that does not answer as promised. The verdicts come first with what fails them; --summary
    leaves out the advisory findings, first-up notes and what the teardown keeps."""
    if summary and format is CheckFormat.json:
        raise CommandError("--summary: only for text (json carries every finding; select with jq)")
    from gpufleet.review import check as checker

    if write_config is not None:
        output_directory(write_config, "--write-config")
        for path in checker.write_configs(checker.load_spec(project, stack), write_config):
            out.print(f"pulumi preview -s {stack} --policy-pack policies/{path.stem} --policy-pack-config {path}")
        return

    from gpufleet.render.preview import check_json, check_text
    from gpufleet.review.review import build

    with progress(f"check {stack}: synthesizing offline, running the policy packs and the reality checks"):
        review = build(project, stack, chart_cache=chart_cache)
    match format:
        case CheckFormat.json:
            print(check_json(review))
        case CheckFormat.text:
            check_text(review, out, summary_only=summary)
    if (
        (review.findings is not None and not review.findings.passed)
        or (review.first_up and review.first_up.problems)
        or review.journeys_failed()
        or (review.teardown and review.teardown.failures)
    ):
        raise typer.Exit(1)
