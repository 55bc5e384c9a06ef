"""`gpufleet export`: the plan's Kubernetes objects and Helm releases as YAML files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpufleet.cli.options import HERE, ProjectOpt, StackOpt, out

OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Directory to write YAML into.")]


def export(stack: StackOpt, out_dir: OutOpt, project: ProjectOpt = HERE) -> None:
    """Write every Kubernetes object (one YAML file each) and every Helm release's chart and values."""
    from gpufleet.engine.synth import synth
    from gpufleet.render.export import export as write

    plan = synth(project, stack)  # synthesize first: bad input writes nothing
    written = write(plan, out_dir)
    out.print(f"wrote {len(written)} files under {out_dir}")
