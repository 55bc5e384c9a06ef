"""`gpufleet burst open|close|status|reconcile`: the typer sub-app (registered in gpufleet/cli/app.py).

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
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from components.model.catalog import CatalogError
from components.model.load import SpecError
from gpufleet.burst import commands as burst
from gpufleet.burst.driver import AutomationDriver, StackDriver

burst_app = typer.Typer(
    help="Open, close, show and expire cloud burst windows of a hybrid estate.", no_args_is_help=True
)
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

# Seams for tests: how the command reaches Pulumi, AWS and the clock.
make_driver: Callable[[Path], StackDriver] = AutomationDriver
make_aws: Callable[[str], burst.Aws] = burst.Aws


def clock() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


StackOpt = Annotated[str, typer.Option("--stack", "-s", help="Stack name: stacks/Pulumi.<stack>.yaml.")]
ProjectOpt = Annotated[
    Path, typer.Option("--project", "-C", help="Project directory (holds Pulumi.yaml).", show_default=False)
]


def _fail(e: Exception) -> typer.Exit:
    if isinstance(e, SpecError):
        for problem in e.problems:
            err.print(f"[red]error:[/red] {escape(problem)}")
        return typer.Exit(2)
    lines = str(e).strip("'\"").splitlines()
    err.print(f"[red]error:[/red] {escape(lines[0])}")
    for line in lines[1:]:
        err.print(f"  {line}", markup=False)
    return typer.Exit(e.exit_code if isinstance(e, burst.BurstError) else 1)


def _stream(line: str) -> None:
    out.print(line.rstrip("\n"), markup=False)


def _summary(changes: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(changes.items())) or "no changes"


@burst_app.command("open")
def open_cmd(
    stack: StackOpt,
    gpus: Annotated[int, typer.Option("--gpus", help="GPUs wanted in the cloud.", min=1)],
    hours: Annotated[float, typer.Option("--hours", help="How long the window stays open.")],
    instance_type: Annotated[
        str | None, typer.Option("--instance-type", help="Instance type (picks the burst pool running it).")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Run the checks only; change nothing.")] = False,
    project: ProjectOpt = Path("."),
) -> None:
    """Check AWS and the budget, then write a burst window into the stack and run `pulumi up`."""
    request = burst.BurstRequest(gpus=gpus, hours=hours, instance_type=instance_type)
    try:
        with out.status("checking AWS: offerings, quota, price against the budget ..."):
            plan = burst.plan_open(project, stack, request, aws_factory=make_aws, now=clock())
        for line in plan.check.checks:
            out.print(f"[green]ok[/green] {line}")
        if dry_run:
            out.print("dry run: nothing was changed")
            return
        out.print(f"writing the window to stack {stack} and running pulumi up ...")
        outcome = plan.done(burst.apply_and_up(make_driver(project), stack, plan.changes, _stream))
    except (SpecError, burst.BurstError, CatalogError) as e:
        raise _fail(e) from None
    out.print(f"[green]{outcome.message}[/green] ({_summary(outcome.changes)})")


@burst_app.command("close")
def close_cmd(stack: StackOpt, project: ProjectOpt = Path(".")) -> None:
    """Remove the burst window, book it in the ledger and run `pulumi up` (the cloud pools shrink to zero)."""
    try:
        outcome = burst.close_window(
            project, stack, driver=lambda: make_driver(project), now=clock(), on_output=_stream
        )
    except (SpecError, burst.BurstError, CatalogError) as e:
        raise _fail(e) from None
    out.print(f"{outcome.message}" + (f" ({_summary(outcome.changes)})" if outcome.changes else ""))


@burst_app.command("reconcile")
def reconcile_cmd(stack: StackOpt, project: ProjectOpt = Path(".")) -> None:
    """Close a window that has expired (for a scheduled job); leave an open one alone."""
    try:
        outcome = burst.reconcile(project, stack, driver=lambda: make_driver(project), now=clock(), on_output=_stream)
    except (SpecError, burst.BurstError, CatalogError) as e:
        raise _fail(e) from None
    out.print(f"{outcome.message}" + (f" ({_summary(outcome.changes)})" if outcome.changes else ""))


@burst_app.command("status")
def status_cmd(stack: StackOpt, project: ProjectOpt = Path(".")) -> None:
    """Show the window (open or expired), time left, spend so far this month and the budget left."""
    now = clock()
    try:
        s = burst.status(project, stack, now)
    except (SpecError, burst.BurstError, CatalogError) as e:
        raise _fail(e) from None
    table = Table(title=f"burst status of {stack} ({now:%Y-%m-%d %H:%M} UTC)", show_header=False)
    w = s.window
    if w is None:
        table.add_row("window", "none")
    else:
        state = "open" if s.open else ("expired" if now >= w.expires else "not started")
        table.add_row("window", f"{state}: {w.nodes} x {w.instance_type} on pool {w.pool} in {w.availability_zone}")
        table.add_row("expires", f"{w.expires:%Y-%m-%d %H:%M} UTC")
        if s.time_left is not None:
            table.add_row("time left", f"{s.time_left.total_seconds() / 3600:.1f} h")
        if not s.open and now >= w.expires:
            table.add_row("note", "expired: the next `up` shrinks the pools; `gpufleet burst reconcile` books it")
    table.add_row("spent this month", f"${s.spend_usd:,.2f}")
    if s.committed_usd:
        table.add_row("committed (to expiry)", f"${s.committed_usd:,.2f}")
    table.add_row("budget", f"${s.budget_usd:,.2f}")
    table.add_row("budget left", f"${s.budget_left_usd:,.2f}")
    out.print(table)
