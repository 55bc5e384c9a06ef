"""`gpufleet diff`: a stack at a git revision against the working tree."""

from __future__ import annotations

from typing import Annotated

import typer

from gpufleet.cli.options import HERE, Format, FormatOpt, ProjectOpt, StackOpt, out

BaseOpt = Annotated[str, typer.Option("--base", "-b", help="Git revision to compare with, e.g. origin/main.")]


def diff(stack: StackOpt, base: BaseOpt, format: FormatOpt = Format.text, project: ProjectOpt = HERE) -> None:
    """Compare a stack at a git revision with the working tree: resources, replacements, cost and findings."""
    from gpufleet.render.diff import diff_json, diff_markdown, diff_text
    from gpufleet.review.revision import diff_revision

    result = diff_revision(project, stack, base)
    match format:
        case Format.json:
            print(diff_json(result))
        case Format.markdown:
            print(diff_markdown(result), end="")
        case Format.text:
            diff_text(result, out)
