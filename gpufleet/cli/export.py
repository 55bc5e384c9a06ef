"""`gpufleet export`: the plan's Kubernetes objects and Helm releases as YAML files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpufleet.cli.errors import CommandError, output_directory
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
    --render, also what each release renders to (CRDs and templates, as Helm applies them).

    A release Helm cannot render is the answer no (exit 1), as `check` counts it a first-up problem: the other
    files are still written, for scanners, and the message names each failed release's ERROR.txt."""
    from gpufleet.engine.synth import synth_stack
    from gpufleet.render.export import ERROR_FILE, export_rendered
    from gpufleet.render.export import export as write
    from gpufleet.review.stack_file import judged
    from model.load import read_stack

    output_directory(out_dir, "--out")
    stack_file = read_stack(project, stack)
    judged(stack_file)  # the stack file judged as every command judges it, then synthesized: bad input writes nothing
    plan = synth_stack(project.resolve(), stack, stack_file)
    written = write(plan, out_dir)
    if render:
        from gpufleet.charts.cache import ChartCache
        from gpufleet.review.reality import checks as reality

        written += export_rendered(plan, reality.render(plan, ChartCache(chart_cache)), out_dir)
    out.print(f"wrote {len(written)} files under {out_dir}")
    if failed := [p for p in written if p.name == ERROR_FILE]:
        first = failed[0].read_text().strip().splitlines()[0][:200]
        raise CommandError(
            f"--render: {len(failed)} Helm release(s) could not be rendered: "
            f"{', '.join(str(p.parent.relative_to(out_dir)) for p in failed)}; the first says: {first}; each "
            f"folder's {ERROR_FILE} says why",
            exit_code=1,
        )
