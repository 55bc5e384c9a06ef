"""`gpufleet burst open|close|reconcile|status`: the flows, from the stack's burst state to the outcome.

Opening a window checks AWS first (gpufleet/burst/preflight.py); only then is config written and `pulumi up` run.
The Pulumi program alone decides sizes: an expired window sizes the burst pools and quotas to zero at the next
`up` whoever runs it; `close` and `reconcile` book it in the ledger, until the `up` that removed it finished.

One clock judges every window: AWS's, the `Date` header of an EC2 response (`Aws.server_time`), read by the CLI
and passed in here; never the clock of the laptop or runner, which may be off.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from components.model.load import LEDGER_KEY, WINDOW_KEY
from components.model.spec import BurstLedgerEntry, BurstWindow
from components.model.windows import (
    close_entry,
    cloud_site,
    drain_ends,
    hours_between,
    node_hour_price,
    spend_in_month,
    window_phase,
    window_price,
)
from gpufleet.burst.aws import Aws
from gpufleet.burst.driver import DriverError, OutputSink, StackDriver
from gpufleet.burst.errors import BurstError
from gpufleet.burst.preflight import BurstRequest, Preflight, check_request, preflight
from gpufleet.burst.stack import Change, StackState, apply_and_up, ledger_json, load_state, window_json

Clock = Callable[[], dt.datetime]  # now by the one clock windows are judged by (see the module docstring)


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
    """A window that passed every check, and the config changes that open it."""

    check: Preflight
    changes: list[Change]

    def done(self, summary: dict[str, int]) -> Outcome:
        w = self.check.window
        return Outcome(
            f"burst window open: {w.nodes} x {w.instance_type} in {w.availability_zone} until "
            f"{w.expires:%Y-%m-%d %H:%M} UTC (about ${self.check.price_usd:,.2f})",
            summary,
        )


def plan_open(
    project_dir: Path, stack: str, request: BurstRequest, *, aws_factory: Callable[[str], Aws], clock: Clock
) -> OpenPlan:
    """Run every check for a new window; change nothing. An expired window still in config is booked first."""
    state = load_state(project_dir, stack)
    check_request(state.spec, request)  # bad input fails before any AWS call, the clock's included
    now = clock()
    w = state.window
    if w is not None and now < w.expires:
        when = "is already open" if w.is_open(now) else f"is scheduled from {w.start:%Y-%m-%d %H:%M} UTC"
        raise BurstError(
            f"a burst window {when} on pool {w.pool} ({w.nodes} x {w.instance_type}) until "
            f"{w.expires:%Y-%m-%d %H:%M} UTC; close it first (`gpufleet burst close --stack {stack}`)"
        )
    expired = _expired_entry(state, now, "gpufleet burst open (expired window booked)")
    ledger = [*state.ledger, *([expired] if expired else [])]
    check = preflight(state.spec, ledger, request, now, aws_factory(cloud_site(state.spec).region))
    changes: list[Change] = [(WINDOW_KEY, window_json(check.window))]
    if expired:
        changes.append((LEDGER_KEY, ledger_json(ledger)))
    return OpenPlan(check, changes)


def close_window(
    project_dir: Path, stack: str, *, driver: Callable[[], StackDriver], clock: Clock, on_output: OutputSink
) -> Outcome:
    """Remove the window and run `up`; book it until that `up` finished (its nodes ran until then)."""
    state = load_state(project_dir, stack)
    w = state.window
    if w is None:
        return Outcome("no burst window in the stack config; nothing to close")
    now = clock()
    if now < w.start:
        summary = apply_and_up(driver(), stack, [(WINDOW_KEY, None)], on_output, if_stopped=_FINISH)
        return Outcome(f"burst window on pool {w.pool} cancelled before its start; nothing booked", summary)
    return _close_and_book(state, w, stack, driver(), clock, now, "gpufleet burst close", on_output)


def reconcile(
    project_dir: Path, stack: str, *, driver: Callable[[], StackDriver], clock: Clock, on_output: OutputSink
) -> Outcome:
    """Close a window that has expired (book it, remove it, `up` so the pools shrink); leave an open one alone."""
    state = load_state(project_dir, stack)
    w = state.window
    if w is None:
        return Outcome("no burst window; nothing to reconcile")
    now = clock()
    if now < w.start:
        return Outcome(
            f"burst window on pool {w.pool} starts at {w.start:%Y-%m-%d %H:%M} UTC (until "
            f"{w.expires:%Y-%m-%d %H:%M} UTC); nothing to do"
        )
    if now < w.expires:
        return Outcome(f"burst window on pool {w.pool} is open until {w.expires:%Y-%m-%d %H:%M} UTC; nothing to do")
    if window_phase(state.spec, w, now) == "draining":
        # Expired but inside the grace: the window stays (its nodes keep running the admitted work); an `up` makes
        # the program stop the cloud queues' admissions. The pool empties at the first reconcile after the grace.
        ends = drain_ends(state.spec, w)
        apply_and_up(driver(), stack, [], on_output, if_stopped=_FINISH)
        return Outcome(
            f"burst window on pool {w.pool} expired at {w.expires:%Y-%m-%d %H:%M} UTC; admission stopped, running "
            f"work has until {ends:%Y-%m-%d %H:%M} UTC (burst.grace_minutes), then the pool empties"
        )
    return _close_and_book(state, w, stack, driver(), clock, now, "gpufleet burst reconcile", on_output)


_FINISH = "Run `pulumi up` (or the same command) again to finish"


def _close_and_book(
    state: StackState,
    w: BurstWindow,
    stack: str,
    d: StackDriver,
    clock: Clock,
    now: dt.datetime,
    closed_by: str,
    on_output: OutputSink,
) -> Outcome:
    """Book `w` until `now`, remove it and run `up`; then move the booking's end to when that `up` finished by the
    same clock: the nodes ran until the update that removes them was done, past the expiry if it came later."""
    entry = close_entry(state.spec, w, now, closed_by, through_expiry=True)
    changes: list[Change] = [(WINDOW_KEY, None), (LEDGER_KEY, ledger_json([*state.ledger, entry]))]
    summary = apply_and_up(d, stack, changes, on_output, if_stopped=_FINISH)
    note = ""
    try:
        done = close_entry(state.spec, w, clock(), closed_by, through_expiry=True)
        if done.end > entry.end:
            d.set_config(LEDGER_KEY, ledger_json([*state.ledger, done]))
            entry = done
    except (BurstError, DriverError) as err:
        note = f"; the booking ends when the command started, not when `up` finished ({err})"
    expired = f"expired {w.expires:%Y-%m-%d %H:%M} UTC, " if now >= w.expires else ""
    return Outcome(
        f"burst window on pool {w.pool} closed ({expired}{entry.nodes} x {entry.instance_type} for "
        f"{hours_between(entry.start, entry.end):.1f} h until {entry.end:%Y-%m-%d %H:%M} UTC booked at "
        f"${entry.usd:,.2f}){note}",
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


def status(project_dir: Path, stack: str, now: dt.datetime) -> Status:
    state = load_state(project_dir, stack)
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
