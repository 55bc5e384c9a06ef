"""`gpufleet preview`: the stack synthesized offline, priced and checked (its Review), as text, Markdown or JSON."""

from __future__ import annotations

import typer

from gpufleet.cli.errors import refuse_json_summary
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


def preview(
    stack: StackOpt,
    format: FormatOpt = Format.text,
    project: ProjectOpt = HERE,
    chart_cache: ChartCacheOpt = None,
    summary: SummaryOpt = False,
) -> None:
    """Synthesize a stack offline: the summary first (policy and first-up verdicts, cost headline, warnings),
    then the details (findings, cost envelope, resource tree by component, resources by type).

    Needs no credentials and no Pulumi CLI. Exits 1 when a mandatory policy rule is violated (first-up problems
    are shown; `gpufleet check` fails on them). --summary prints only the summary.
    """
    refuse_json_summary(summary, format, "plan")
    from gpufleet.render.preview import preview_json, preview_markdown, preview_text
    from gpufleet.review.review import build

    with progress(f"preview {stack}: synthesizing offline, pricing and checking"):
        review = build(project, stack, chart_cache=chart_cache)
    match format:
        case Format.json:
            print(preview_json(review))
        case Format.markdown:
            print(preview_markdown(review, summary_only=summary), end="")
        case Format.text:
            preview_text(review, out, summary_only=summary)
    if review.findings is not None and not review.findings.passed:
        raise typer.Exit(1)
