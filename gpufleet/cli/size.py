"""`gpufleet size`: GPU capacity from workload evidence, optionally judged against a stack."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpufleet.cli.options import HERE, Format, FormatOpt, ProjectOpt

WorkloadsArg = Annotated[Path, typer.Argument(help="Workload file (see examples/workloads.yaml).")]
CompareOpt = Annotated[str | None, typer.Option("--stack", "-s", help="Compare this stack's pools with the range.")]


def size(
    workloads: WorkloadsArg, stack: CompareOpt = None, format: FormatOpt = Format.text, project: ProjectOpt = HERE
) -> None:
    """Size GPUs from workload evidence: demand, memory fit, cheapest placement, installed range, node pools."""
    from gpufleet.render.sizing import sizing_markdown, sizing_text
    from gpufleet.render.sizing_json import sizing_json
    from gpufleet.review.stack_file import judged
    from gpufleet.sizing.report import size as size_fleet
    from gpufleet.sizing.workloads import load_workloads
    from model.load import read_stack

    spec = judged(read_stack(project, stack))[0] if stack else None
    result = size_fleet(load_workloads(workloads), str(workloads), spec, stack)
    match format:
        case Format.json:
            print(sizing_json(result))
        case Format.markdown:
            print(sizing_markdown(result), end="")
        case Format.text:
            print(sizing_text(result), end="")
