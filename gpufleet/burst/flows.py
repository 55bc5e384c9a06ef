"""`gpufleet burst open|close|extend|reconcile|status|migrate`: the flows, from the burst state to the outcome.

- Opening a window checks AWS first (gpufleet/burst/preflight.py). Only then is the state recorded and a
  targeted `pulumi up` run (gpufleet/burst/stack.py, gpufleet/burst/targets.py).
- The Pulumi program alone decides sizes, from the recorded window judged at the state's `as_of`.
- One clock judges every window: AWS's (`Clock`). So a phase changes only when a burst command records it.
- Phases: `open` records a window (open). `close` moves its expiry to now (draining). `reconcile` records
  draining once a window expired, and after the grace books it and removes it (idle).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from gpufleet.burst.aws import Aws
from gpufleet.burst.driver import DriverError, OutputSink, StackDriver
from gpufleet.burst.errors import BurstError
from gpufleet.burst.preflight import BurstRequest, Preflight, check_hours, check_request, month_hours, preflight
from gpufleet.burst.stack import Settle, StackState, apply_and_up, load_state
from gpufleet.burst.targets import burst_targets
from model.burst import (
    BurstState,
    close_entry,
    cloud_site,
    drain_ends,
    hours_between,
    node_hour_price,
    spend_in_month,
    window_phase,
    window_price,
)
from model.spec import BurstLedgerEntry, BurstWindow

# Now, by the one clock every window is judged by: AWS's, the `Date` header of an EC2 response (`Aws.server_time`),
# read by the CLI and passed in. Never the clock of the laptop or runner, which may be off. Every state a command
# records carries that time as `as_of`, and the program judges the window's phase at it.
Clock = Callable[[], dt.datetime]
Booker = Callable[[StackState, BurstWindow, dt.datetime, str], BurstLedgerEntry]  # books a window closed at a time


def book_cap(s: StackState, w: BurstWindow, end: dt.datetime, closed_by: str) -> BurstLedgerEntry:
    """Every node of the cap from the window's start until `end` (the most it can have cost)."""
    return close_entry(s.spec, w, end, closed_by, through_expiry=True)


def _expired_entry(state: StackState, now: dt.datetime, closed_by: str) -> BurstLedgerEntry | None:
    w = state.window
    if w is None or now < w.expires:
        return None
    return close_entry(state.spec, w, w.expires, closed_by)


@dataclass(frozen=True)
class Outcome:
    message: str
    changes: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class OpenPlan:
    """A window that passed every check, and the burst state that opens it."""

    check: Preflight
    before: BurstState
    after: BurstState

    def done(self, summary: dict[str, int]) -> Outcome:
        w = self.check.window
        return Outcome(
            f"burst window open: {w.nodes} x {w.instance_type} in {w.availability_zone} until "
            f"{w.expires:%Y-%m-%d %H:%M} UTC (about ${self.check.price_usd:,.2f})",
            summary,
        )


def refuse_if_open(w: BurstWindow | None, stack: str, now: dt.datetime) -> None:
    if w is not None and now < w.expires:
        when = "is already open" if w.is_open(now) else f"is scheduled from {w.start:%Y-%m-%d %H:%M} UTC"
        raise BurstError(
            f"a burst window {when} on pool {w.pool} ({w.nodes} x {w.instance_type}) until "
            f"{w.expires:%Y-%m-%d %H:%M} UTC; close it first (`gpufleet burst close --stack {stack}`)"
        )


def plan_open(
    project_dir: Path,
    stack: str,
    request: BurstRequest,
    *,
    driver: StackDriver,
    aws_factory: Callable[[str], Aws],
    clock: Clock,
) -> OpenPlan:
    """Run every check for a new window; change nothing. An expired window still recorded is booked first."""
    state = load_state(project_dir, stack, driver)
    check_request(state.spec, request)  # bad input fails before any AWS call, the clock's included
    now = clock()
    refuse_if_open(state.window, stack, now)
    expired = _expired_entry(state, now, "gpufleet burst open (expired window booked)")
    ledger = (*state.ledger, *([expired] if expired else []))
    check = preflight(state.spec, ledger, request, now, aws_factory(cloud_site(state.spec).region))
    return OpenPlan(check, state.state, BurstState(check.window, ledger, now))


def apply_open(
    project_dir: Path, stack: str, plan: OpenPlan, *, driver: StackDriver, on_output: OutputSink, if_stopped: str
) -> Outcome:
    """Record the window `plan_open` checked, then run the targeted `up` that opens it."""
    summary = apply_and_up(
        driver, stack, plan.before, plan.after, on_output, targets=burst_targets(project_dir, stack),
        if_stopped=if_stopped,
    )  # fmt: skip
    return plan.done(summary)


_FINISH = "Run `gpufleet burst reconcile` (or `pulumi up`) to finish"


def _up(
    project_dir: Path,
    stack: str,
    d: StackDriver,
    s: StackState,
    after: BurstState,
    on_output: OutputSink,
    settle: Settle | None = None,
) -> dict[str, int]:
    targets = burst_targets(project_dir, stack)
    return apply_and_up(d, stack, s.state, after, on_output, targets=targets, if_stopped=_FINISH, settle=settle)


def close_window(
    project_dir: Path,
    stack: str,
    *,
    driver: StackDriver,
    clock: Clock,
    on_output: OutputSink,
    book: Booker = book_cap,
) -> Outcome:
    """Close the window: one not started yet is cancelled; an open one expires now and drains for the grace (the
    pool empties, and the window is booked, at the first `reconcile` after it); one past its grace is booked and
    removed at once."""
    s = load_state(project_dir, stack, driver)
    w = s.window
    if w is None:
        return Outcome("no burst window recorded; nothing to close")
    now = clock()
    if now <= w.start:
        summary = _up(project_dir, stack, driver, s, BurstState(None, s.state.ledger, now), on_output)
        return Outcome(f"burst window on pool {w.pool} cancelled before its start; nothing booked", summary)
    if now < w.expires:
        closed = w.model_copy(update={"expires": now})
        summary = _up(project_dir, stack, driver, s, BurstState(closed, s.state.ledger, now), on_output)
        return Outcome(
            f"burst window on pool {w.pool} closed at {now:%Y-%m-%d %H:%M} UTC: nothing new is admitted, running "
            f"work has until {drain_ends(s.spec, closed):%Y-%m-%d %H:%M} UTC (burst.grace_minutes); then "
            "`gpufleet burst reconcile` empties the pool and books the window",
            summary,
        )
    return _reconcile_expired(project_dir, stack, driver, s, now, clock, on_output, book, "gpufleet burst close")


def reconcile(
    project_dir: Path,
    stack: str,
    *,
    driver: StackDriver,
    clock: Clock,
    on_output: OutputSink,
    book: Booker = book_cap,
) -> Outcome:
    """Move the recorded phase on to AWS's now: record draining once a window expired, book and remove it after
    the grace; run an `up` a previous command left unfinished (unsettled); create the state stack if missing."""
    s = load_state(project_dir, stack, driver)
    w = s.window
    now = clock()
    if not s.recorded:
        try:
            driver.write_state(stack, BurstState(None, (), now).outputs(), on_output)
        except DriverError as err:
            raise BurstError(f"{err}; nothing was changed") from None
        return Outcome(f"recorded an empty burst state (no window) in the new state stack of {stack}")
    if w is not None and now >= w.expires:
        return _reconcile_expired(
            project_dir, stack, driver, s, now, clock, on_output, book, "gpufleet burst reconcile"
        )
    if not s.state.settled:
        summary = _up(project_dir, stack, driver, s, s.state, on_output)
        return Outcome("the last burst command's `up` had not finished; ran it again", summary)
    if w is None:
        return Outcome("no burst window; nothing to reconcile")
    if now < w.start:
        return Outcome(
            f"burst window on pool {w.pool} starts at {w.start:%Y-%m-%d %H:%M} UTC (until "
            f"{w.expires:%Y-%m-%d %H:%M} UTC); nothing to do"
        )
    if window_phase(s.spec, w, s.state.as_of) != "open":  # recorded before its start: the program holds it shut
        summary = _up(project_dir, stack, driver, s, BurstState(w, s.state.ledger, now), on_output)
        return Outcome(f"burst window on pool {w.pool} opened (until {w.expires:%Y-%m-%d %H:%M} UTC)", summary)
    return Outcome(f"burst window on pool {w.pool} is open until {w.expires:%Y-%m-%d %H:%M} UTC; nothing to do")


def _reconcile_expired(
    project_dir: Path,
    stack: str,
    d: StackDriver,
    s: StackState,
    now: dt.datetime,
    clock: Clock,
    on_output: OutputSink,
    book: Booker,
    closed_by: str,
) -> Outcome:
    w = s.window
    assert w is not None
    if window_phase(s.spec, w, now) == "draining":
        # Expired but inside the grace: the window stays (its nodes keep running the admitted work); the state
        # records the draining phase and an `up` stops the cloud queues' admissions. The pool empties at the
        # first reconcile after the grace.
        ends = drain_ends(s.spec, w)
        recorded = window_phase(s.spec, w, s.state.as_of)
        summary: dict[str, int] = {}
        if recorded != "draining" or not s.state.settled:
            summary = _up(project_dir, stack, d, s, BurstState(w, s.state.ledger, now), on_output)
        return Outcome(
            f"burst window on pool {w.pool} expired at {w.expires:%Y-%m-%d %H:%M} UTC; admission stopped, running "
            f"work has until {ends:%Y-%m-%d %H:%M} UTC (burst.grace_minutes), then the pool empties",
            summary,
        )
    return _close_and_book(project_dir, stack, d, s, w, now, clock, on_output, book, closed_by)


def _close_and_book(
    project_dir: Path,
    stack: str,
    d: StackDriver,
    s: StackState,
    w: BurstWindow,
    now: dt.datetime,
    clock: Clock,
    on_output: OutputSink,
    book: Booker,
    closed_by: str,
) -> Outcome:
    """Book `w` until `now`, remove it and run `up`; then move the booking's end to when that `up` finished by the
    same clock: the nodes ran until the update that removes them was done."""
    entry = book(s, w, now, closed_by)
    booked = [entry]
    notes: list[str] = []

    def settle(after: BurstState) -> BurstState:
        try:
            done = book(s, w, clock(), closed_by)
        except BurstError as err:
            notes.append(f"; the booking ends when the command started, not when `up` finished ({err})")
            return after
        if done.end <= entry.end:
            return after
        booked.append(done)
        return replace(after, ledger=(*s.state.ledger, done))

    after = BurstState(None, (*s.state.ledger, entry), now)
    summary = _up(project_dir, stack, d, s, after, on_output, settle)
    return _closed(w, booked[-1], summary, "".join(notes))


def _closed(w: BurstWindow, entry: BurstLedgerEntry, summary: dict[str, int], note: str) -> Outcome:
    return Outcome(
        f"burst window on pool {w.pool} closed (expired {w.expires:%Y-%m-%d %H:%M} UTC, {entry.nodes} x "
        f"{entry.instance_type} for {hours_between(entry.start, entry.end):.1f} h until {entry.end:%Y-%m-%d %H:%M} "
        f"UTC booked at ${entry.usd:,.2f}){note}",
        summary,
    )


@dataclass(frozen=True)
class Status:
    window: BurstWindow | None
    open: bool
    time_left: dt.timedelta | None
    spend_usd: float  # this month: the ledger plus the current window so far
    committed_usd: float  # the current window's remaining hours, if it runs to expiry
    budget_usd: float

    @property
    def budget_left_usd(self) -> float:
        return round(self.budget_usd - self.spend_usd - self.committed_usd, 2)


def status(project_dir: Path, stack: str, driver: StackDriver, now: dt.datetime) -> Status:
    state = load_state(project_dir, stack, driver)
    assert state.spec.burst is not None
    ledger = list(state.ledger)
    w = state.window
    committed = 0.0
    is_open = w is not None and w.is_open(now)
    if w is not None and now >= w.start:
        ledger.append(close_entry(state.spec, w, now, "so far"))
        if is_open:
            price = w.usd_per_hour if w.usd_per_hour is not None else node_hour_price(state.spec, w.instance_type)
            committed = window_price(price, w.nodes, hours_between(now, w.expires))
    return Status(
        window=w,
        open=is_open,
        time_left=(w.expires - now) if w is not None and is_open else None,
        spend_usd=spend_in_month(ledger, now),
        committed_usd=committed,
        budget_usd=state.spec.burst.budget_usd,
    )


def extend(
    project_dir: Path, stack: str, hours: float, *, driver: StackDriver, clock: Clock, on_output: OutputSink
) -> Outcome:
    """Move an open window's expiry `hours` later, within the policy's max_window_hours from its start and what
    the month's budget leaves (the ledger, the window so far and its remaining hours). The window's phase does not
    change, so only the state is recorded: no `up`."""
    s = load_state(project_dir, stack, driver)
    policy = s.spec.burst
    assert policy is not None
    w = s.window
    now = clock()
    if w is None or not w.is_open(now):
        raise BurstError(f"no open burst window to extend; open one (`gpufleet burst open --stack {stack}`)")
    check_hours(hours)
    expires = w.expires + dt.timedelta(hours=hours)
    if hours_between(w.start, expires) > policy.max_window_hours:
        raise BurstError(
            f"the window would last {hours_between(w.start, expires):g} h from its start, more than the burst "
            f"policy's max_window_hours ({policy.max_window_hours}); close it and open a new one"
        )
    price = w.usd_per_hour if w.usd_per_hour is not None else node_hour_price(s.spec, w.instance_type)
    so_far = close_entry(s.spec, w, w.expires, "committed")  # the window as it stands, to its current expiry
    extra = window_price(price, w.nodes, hours)
    for month, part_hours in month_hours(w.expires, expires):
        part = window_price(price, w.nodes, part_hours)
        left = round(policy.budget_usd - spend_in_month([*s.ledger, so_far], month), 2)
        if part > left:
            raise BurstError(
                f"{hours:g} more hours of {w.nodes} x {w.instance_type} cost ${part:,.2f} in {month:%B %Y}, but "
                f"only ${left:,.2f} of the ${policy.budget_usd:,.2f} monthly burst budget is left after the window "
                "as it stands"
            )
    after = BurstState(w.model_copy(update={"expires": expires}), s.state.ledger, now, s.state.settled)
    try:
        driver.write_state(stack, after.outputs(), on_output)
    except DriverError as err:
        raise BurstError(f"{err}\nthe state stack keeps its previous outputs; nothing was changed") from None
    return Outcome(f"burst window on pool {w.pool} extended to {expires:%Y-%m-%d %H:%M} UTC (about ${extra:,.2f} more)")
