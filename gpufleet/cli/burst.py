"""`gpufleet burst open|close|status|reconcile` (registered in gpufleet/cli/app.py).

Exit codes: 0 done (or nothing to do), 1 the burst cannot go ahead (AWS capacity, quota, throttling, budget, a
locked stack, no Pulumi CLI, a failed `up`), 2 bad input (stack file, options). Nothing changes unless every
check passed; a failed `up` puts the previous config back.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from components.model.windows import cloud_site
from gpufleet.burst.aws import Aws
from gpufleet.burst.driver import AutomationDriver, StackDriver
from gpufleet.burst.flows import BurstRequest, close_window, plan_open, reconcile, status
from gpufleet.burst.stack import apply_and_up, load_state
from gpufleet.cli.options import HERE, ProjectOpt, StackOpt, out

# Seams for tests: how the command reaches Pulumi and AWS.
make_driver: Callable[[Path], StackDriver] = AutomationDriver
make_aws: Callable[[str], Aws] = Aws


def clock(region: str) -> dt.datetime:
    """Now by AWS's clock in the cloud site's region (the Date of an EC2 response), never the runner's: an opener
    whose clock runs fast must not stamp a window that a correct clock sees as not started."""
    return make_aws(region).server_time()


def _clock(project: Path, stack: str) -> Callable[[], dt.datetime]:
    region = cloud_site(load_state(project, stack).spec).region
    return lambda: clock(region)


_UNDO_OPEN = "Run `pulumi up` again to finish, or `gpufleet burst close` to shrink the pool and book what ran"


GpusOpt = Annotated[int, typer.Option("--gpus", help="GPUs wanted in the cloud.", min=1)]
HoursOpt = Annotated[float, typer.Option("--hours", help="How long the window stays open.")]
InstanceTypeOpt = Annotated[
    str | None, typer.Option("--instance-type", help="Instance type (picks the burst pool running it).")
]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Run the checks only; change nothing.")]


def _stream(line: str) -> None:
    out.print(line.rstrip("\n"), markup=False)


def _summary(changes: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(changes.items())) or "no changes"


def open_cmd(
    stack: StackOpt,
    gpus: GpusOpt,
    hours: HoursOpt,
    instance_type: InstanceTypeOpt = None,
    dry_run: DryRunOpt = False,
    project: ProjectOpt = HERE,
) -> None:
    """Check AWS and the budget, then write a burst window into the stack and run `pulumi up`."""
    request = BurstRequest(gpus=gpus, hours=hours, instance_type=instance_type)
    with out.status("checking AWS: offerings, quota, price against the budget ..."):
        plan = plan_open(project, stack, request, aws_factory=make_aws, clock=_clock(project, stack))
    for line in plan.check.checks:
        out.print(f"[green]ok[/green] {line}")
    if dry_run:
        out.print("dry run: nothing was changed")
        return
    out.print(f"writing the window to stack {stack} and running pulumi up ...")
    outcome = plan.done(apply_and_up(make_driver(project), stack, plan.changes, _stream, if_stopped=_UNDO_OPEN))
    out.print(f"[green]{outcome.message}[/green] ({_summary(outcome.changes)})")


def close_cmd(stack: StackOpt, project: ProjectOpt = HERE) -> None:
    """Remove the burst window, book it in the ledger and run `pulumi up` (the cloud pools shrink to zero)."""
    outcome = close_window(
        project, stack, driver=lambda: make_driver(project), clock=_clock(project, stack), on_output=_stream
    )
    out.print(f"{outcome.message}" + (f" ({_summary(outcome.changes)})" if outcome.changes else ""))


def reconcile_cmd(stack: StackOpt, project: ProjectOpt = HERE) -> None:
    """Close a window that has expired (for a scheduled job); leave an open one alone."""
    outcome = reconcile(
        project, stack, driver=lambda: make_driver(project), clock=_clock(project, stack), on_output=_stream
    )
    out.print(f"{outcome.message}" + (f" ({_summary(outcome.changes)})" if outcome.changes else ""))


def status_cmd(stack: StackOpt, project: ProjectOpt = HERE) -> None:
    """Show the window (open or expired), time left, spend so far this month and the budget left."""
    from gpufleet.render.burst import status_table

    now = _clock(project, stack)()
    out.print(status_table(stack, status(project, stack, now), now))
