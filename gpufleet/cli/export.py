"""`gpufleet export`: the plan's Kubernetes objects and Helm releases as YAML files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpufleet.cli.errors import output_directory
from gpufleet.cli.options import HERE, ChartCacheOpt, ProjectOpt, StackOpt, out

OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Directory to write YAML into.")]
RenderOpt = Annotated[
    bool, typer.Option("--render", help="Also write every object each Helm release renders to (for scanners).")
]


def export(
    stack: StackOpt,
    out_dir: OutOpt,
    project: ProjectOpt = HERE,
    render: RenderOpt = False,
    chart_cache: ChartCacheOpt = None,
) -> None:
    """Write every Kubernetes object (one YAML file each) and every Helm release's chart and values; with
    --render, also what each release renders to (CRDs and templates, as Helm applies them)."""
    from gpufleet.engine.synth import synth
    from gpufleet.render.export import export as write
    from gpufleet.render.export import export_rendered

    output_directory(out_dir, "--out")
    plan = synth(project, stack)  # synthesize first: bad input writes nothing
    written = write(plan, out_dir)
    if render:
        from gpufleet.charts.cache import ChartCache
        from gpufleet.review.reality import checks as reality

        written += export_rendered(plan, reality.render(plan, ChartCache(chart_cache)), out_dir)
    out.print(f"wrote {len(written)} files under {out_dir}")
