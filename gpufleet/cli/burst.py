"""`gpufleet burst open|close|extend|status|reconcile|migrate` (registered in gpufleet/cli/app.py).

Exit codes: 0 done (or nothing to do), 1 the burst cannot go ahead (AWS capacity, quota, throttling, budget, a
locked stack, no Pulumi CLI, a failed `up`), 2 bad input (stack file, options, a burst state that does not fit).
Nothing changes unless every check passed; an `up` that cannot start puts the previous burst state back.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from gpufleet.burst.aws import Aws
from gpufleet.burst.driver import AutomationDriver, DriverError, StackDriver
from gpufleet.burst.errors import BurstError
from gpufleet.burst.flows import (
    BurstRequest,
    apply_open,
    close_window,
    extend,
    plan_open,
    reconcile,
    refuse_if_open,
    status,
)
from gpufleet.burst.ledger import burst_group_tags, measured_booker
from gpufleet.burst.preflight import check_hours, offline_check
from gpufleet.burst.stack import legacy_keys, load_spec, load_state, record_state
from gpufleet.cli.options import HERE, ProjectOpt, StackOpt, out
from model.burst import cloud_site
from model.burst_state import BurstState, state_stack_name
from model.spec import EstateSpec

# Seams for tests: how the command reaches Pulumi and AWS.
make_driver: Callable[[Path], StackDriver] = AutomationDriver
make_aws: Callable[[str], Aws] = Aws


def clock(region: str) -> dt.datetime:
    """Now by AWS's clock in the cloud site's region (the Date of an EC2 response), never the runner's: an opener
    whose clock runs fast must not stamp a window that a correct clock sees as not started."""
    return make_aws(region).server_time()


def _clock(project: Path, stack: str) -> Callable[[], dt.datetime]:
    region = cloud_site(load_spec(project, stack)).region
    return lambda: clock(region)


_UNDO_OPEN = "Run `gpufleet burst reconcile` to finish, or `gpufleet burst close` to shrink the pool and book what ran"


GpusOpt = Annotated[int, typer.Option("--gpus", help="GPUs wanted in the cloud.", min=1)]
HoursOpt = Annotated[float, typer.Option("--hours", help="How long the window stays open.")]
InstanceTypeOpt = Annotated[
    str | None, typer.Option("--instance-type", help="Instance type (picks the burst pool running it).")
]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Run the checks only; change nothing.")]
OfflineOpt = Annotated[
    bool,
    typer.Option(
        "--offline",
        help="With --dry-run: the budget arithmetic only, without AWS (quota, offerings and capacity unchecked).",
    ),
]


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
    offline: OfflineOpt = False,
    project: ProjectOpt = HERE,
) -> None:
    """Check AWS and the budget, then record a burst window in the state stack and run a targeted `pulumi up`."""
    check_hours(hours)  # before anything runs; the policy's own limit once the stack is read
    request = BurstRequest(gpus=gpus, hours=hours, instance_type=instance_type)
    if offline:
        if not dry_run:
            raise BurstError("--offline checks without AWS, so it only goes with --dry-run", 2)
        _offline_dry_run(project, stack, request)
        return
    driver = make_driver(project)
    with out.status("checking AWS: offerings, quota, price against the budget ..."):
        plan = plan_open(
            project, stack, request, driver=driver, aws_factory=make_aws, clock=_clock(project, stack),
            book=measured_booker(make_aws),
        )  # fmt: skip
    for line in plan.check.checks:
        out.print(f"[green]ok[/green] {line}")
    if dry_run:
        out.print("dry run: nothing was changed")
        return
    _collect_group_metrics(plan.check.region, load_spec(project, stack), plan.check.window.pool)
    out.print(f"recording the window in stack {state_stack_name(stack)} and running pulumi up on {stack} ...")
    outcome = apply_open(project, stack, plan, driver=driver, on_output=_stream, if_stopped=_UNDO_OPEN)
    out.print(f"[green]{outcome.message}[/green] ({_summary(outcome.changes)})")


def _collect_group_metrics(region: str, spec: EstateSpec, pool: str) -> None:
    """Turn on the burst group's in-service metric, which `close`/`reconcile` book the window by; without it they
    book the cap (said, not fatal)."""
    aws = make_aws(region)
    try:
        group = aws.group_by_tags(burst_group_tags(spec, pool))
        if group is not None:
            aws.enable_group_metrics(group)
            return
        why = "no Auto Scaling group carries the burst pool's tags yet"
    except BurstError as err:
        why = str(err)
    out.print(f"note: node-hours will not be measured ({why}); the window will be booked at its cap", markup=False)


def _offline_dry_run(project: Path, stack: str, request: BurstRequest) -> None:
    """Budget arithmetic without AWS. The ledger comes from the state stack when the Pulumi backend answers, else
    from the stack file's what-if keys; the time is this machine's (AWS's clock needs AWS)."""
    now = dt.datetime.now(dt.UTC)
    spec = load_spec(project, stack)
    try:
        state = load_state(project, stack, make_driver(project)).at(now).state
        source = f"the ledger of stack {state_stack_name(stack)}"
    except BurstError as err:
        if err.exit_code == 2:
            raise
        from model.load import read_stack

        sf = read_stack(project, stack)
        state = BurstState(sf.window(), tuple(sf.ledger()), now)
        source = f"{sf.path} (the state stack could not be read: {err})"
    refuse_if_open(state.window, stack, now)
    check = offline_check(spec, state.ledger, request, now)
    out.print(f"dry run without AWS, by this machine's clock ({now:%Y-%m-%d %H:%M} UTC); spend so far from {source}")
    for line in check.checks:
        mark = "[yellow]--[/yellow]" if line.startswith("not checked") else "[green]ok[/green]"
        out.print(f"{mark} {line}", markup=True, highlight=False)
    out.print("dry run: nothing was changed")


def close_cmd(stack: StackOpt, project: ProjectOpt = HERE) -> None:
    """Close the burst window: nothing new is admitted and the pool empties after the grace (`reconcile` books it)."""
    outcome = close_window(
        project, stack, driver=make_driver(project), clock=_clock(project, stack), on_output=_stream,
        book=measured_booker(make_aws),
    )  # fmt: skip
    out.print(f"{outcome.message}" + (f" ({_summary(outcome.changes)})" if outcome.changes else ""))


ExtendHoursOpt = Annotated[float, typer.Option("--hours", help="How many hours later the window expires.")]


def extend_cmd(stack: StackOpt, hours: ExtendHoursOpt, project: ProjectOpt = HERE) -> None:
    """Move the open window's expiry later, within max_window_hours and the budget (records the state only)."""
    check_hours(hours)
    outcome = extend(
        project, stack, hours, driver=make_driver(project), clock=_clock(project, stack), on_output=_stream,
        book=measured_booker(make_aws),
    )  # fmt: skip
    out.print(outcome.message)


def reconcile_cmd(stack: StackOpt, project: ProjectOpt = HERE) -> None:
    """Move an expired window on (draining, then booked and removed); finish an interrupted `up` (scheduled job).
    An estate without a burst policy has nothing to reconcile (exit 0, so deploy.yml runs it for every stack)."""
    from model.load import read_stack

    if read_stack(project, stack).estate().burst is None:
        out.print(f"stack {stack} has no burst policy; nothing to reconcile")
        return
    outcome = reconcile(
        project, stack, driver=make_driver(project), clock=_clock(project, stack), on_output=_stream,
        book=measured_booker(make_aws),
    )  # fmt: skip
    out.print(f"{outcome.message}" + (f" ({_summary(outcome.changes)})" if outcome.changes else ""))


def status_cmd(stack: StackOpt, project: ProjectOpt = HERE) -> None:
    """Show the window (open or expired), time left, spend so far this month and the budget left. Works offline:
    without AWS it tells the time by this machine's clock, without the state stack it shows the stack file's
    what-if keys, and it says which it could not read."""
    from gpufleet.render.burst import status_table
    from model.load import read_stack

    spec = load_spec(project, stack)
    notes = []
    try:
        now = clock(cloud_site(spec).region)
    except BurstError as err:
        now = dt.datetime.now(dt.UTC)
        notes.append(f"AWS's clock could not be read ({err}); times are judged by this machine's clock")
    try:
        state = load_state(project, stack, make_driver(project)).state
    except BurstError as err:
        if err.exit_code == 2:
            raise
        sf = read_stack(project, stack)
        state = BurstState(sf.window(), tuple(sf.ledger()), now)
        notes.append(
            f"the state stack {state_stack_name(stack)} could not be read ({err}); the window and ledger shown are "
            f"{sf.path}'s what-if keys, if any"
        )
    out.print(status_table(stack, status(spec, state, now), now))
    for note in notes:
        out.print(f"note: {note}", markup=False)


def migrate_cmd(stack: StackOpt, project: ProjectOpt = HERE) -> None:
    """Move the window and ledger a stack file keeps (`gpufleet:burstWindow`, `gpufleet:burstLedger`) into the
    state stack `<stack>-burst`, which `up` reads; never over a state stack that already exists."""
    from model.load import read_stack

    spec = load_spec(project, stack)
    sf = read_stack(project, stack)
    driver = make_driver(project)
    try:
        existing = driver.read_state(stack)
    except DriverError as err:
        raise BurstError(f"{err}; nothing was changed") from None
    keys = legacy_keys(project, stack)
    if existing is not None:
        note = f"; delete {', '.join(keys)} from {sf.path}: `up` does not read them" if keys else ""
        out.print(f"the state stack {state_stack_name(stack)} exists already; nothing migrated{note}")
        return
    from model.load import check_window

    window = sf.window()
    check_window(spec, window, str(sf.path))
    now = _clock(project, stack)()
    state = BurstState(window, tuple(sf.ledger()), now, settled=False)  # the next reconcile runs the `up`
    record_state(driver, stack, state, _stream, read=0)  # refused if another command created it meanwhile
    what = f"window on pool {window.pool} and " if window is not None else ""
    out.print(
        f"recorded the {what}{len(state.ledger)} ledger entries in the state stack {state_stack_name(stack)}; now "
        f"delete {', '.join(keys) or 'nothing'} from {sf.path} and run `gpufleet burst reconcile --stack {stack}`"
    )
