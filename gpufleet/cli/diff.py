"""`gpufleet diff`: a stack at a git revision against the working tree."""

from __future__ import annotations

from typing import Annotated

import typer

from gpufleet.cli.errors import refuse_json_summary
from gpufleet.cli.options import HERE, Format, FormatOpt, ProjectOpt, StackOpt, SummaryOpt, out, progress

BaseOpt = Annotated[str, typer.Option("--base", "-b", help="Git revision to compare with, e.g. origin/main.")]


def diff(
    stack: StackOpt,
    base: BaseOpt,
    format: FormatOpt = Format.text,
    project: ProjectOpt = HERE,
    summary: SummaryOpt = False,
) -> None:
    """Compare a stack at a git revision with the working tree: the summary first (changes, replacements, cost
    delta, findings), then each change. --summary prints only the summary."""
    refuse_json_summary(summary, format, "diff")
    from gpufleet.render.diff import diff_json, diff_markdown, diff_text
    from gpufleet.review.diff.revision import diff_revision

    with progress(f"diff {stack}: reviewing {base} and the working tree"):
        result = diff_revision(project, stack, base)
    match format:
        case Format.json:
            print(diff_json(result))
        case Format.markdown:
            print(diff_markdown(result, summary_only=summary), end="")
        case Format.text:
            diff_text(result, out, summary_only=summary)
