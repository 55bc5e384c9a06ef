"""`gpufleet burst open|close|extend|reconcile|status|migrate`: the flows, from the burst state to the outcome.

- Opening a window checks AWS first (gpufleet/burst/preflight.py). Only then is the state recorded and a
  targeted `pulumi up` run (gpufleet/burst/stack.py, gpufleet/burst/targets.py).
- The Pulumi program alone decides sizes, from the recorded window judged at the later of the state's `as_of`
  and its own clock (model.burst.judged_at); the backstop stops the capacity at expiry + grace without it.
- The commands read time from AWS (`Clock`), never from the machine they run on.
- `open` records a window (open). `close` moves its expiry to now (draining). `reconcile` records draining once
  a window expired, and after the grace books it and removes it: the bookkeeper, not the safety.
- Every command books a window by one rule (`model.burst_spend.booking`), so the figure never depends on which command
  books it, or when. Every write names the state generation it read (gpufleet/burst/stack.py).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gpufleet.burst.aws import Aws
from gpufleet.burst.driver import OutputSink, StackDriver
from gpufleet.burst.errors import BurstError
from gpufleet.burst.preflight import (
    BurstRequest,
    Preflight,
    budget_line,
    check_hours,
    check_request,
    preflight,
)
from gpufleet.burst.stack import StackState, apply_and_up, load_state, record_state
from gpufleet.burst.targets import burst_targets
from model.burst import cloud_site, drain_ends, window_phase
from model.burst_spend import (
    backstop_time,
    booking,
    close_entry,
    hours_between,
    latest_expiry,
    spend_in_month,
    stopped_by,
    window_price,
    window_usd_per_hour,
    within_budget,
    worst_case,
)
from model.burst_state import BurstState
from model.spec import BurstLedgerEntry, BurstWindow, EstateSpec

# Now, by the one clock every window is judged by: AWS's, the `Date` header of an EC2 response (`Aws.server_time`),
# read by the CLI and passed in. Never the clock of the laptop or runner, which may be off. Every state a command
# records carries that time as `as_of`, and the program judges the window's phase at it.
Clock = Callable[[], dt.datetime]
# Books a window at AWS's `now` (gpufleet/burst/ledger.py measures node-hours once the capacity has stopped): its
# ledger entries, one per calendar month where node-hours were measured.
Booker = Callable[[StackState, BurstWindow, str, dt.datetime], tuple[BurstLedgerEntry, ...]]
# In `closed_by` of a window whose node group still held instances past its backstop time when it was booked (the
# AWS-side stop failed): `reconcile` runs its `up` (which idles the group) and then fails, saying so.
STILL_RUNNING = "still running after the backstop time"


def book_cap(s: StackState, w: BurstWindow, closed_by: str, now: dt.datetime) -> tuple[BurstLedgerEntry, ...]:
    """Every node of the cap from the window's start until its backstop time (the most it can cost)."""
    return (booking(s.spec, w, closed_by),)


def booked(entries: tuple[BurstLedgerEntry, ...]) -> BurstLedgerEntry:
    """One booking's entries as one, for messages: from the first's start to the last's end, at their total."""
    first, last = entries[0], entries[-1]
    return last.model_copy(update={"start": first.start, "usd": round(sum(e.usd for e in entries), 2)})


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
    book: Booker = book_cap,
) -> OpenPlan:
    """Run every check for a new window; change nothing. An expired window still recorded is booked first."""
    state = load_state(project_dir, stack, driver)
    pool, nodes = check_request(state.spec, request)  # bad input fails before any AWS call, the clock's included
    now = clock()
    state = state.at(now)
    refuse_if_open(state.window, stack, now)
    ledger, room = _replaced(state, pool.name, nodes, now, book)
    check = preflight(state.spec, ledger, request, now, aws_factory(cloud_site(state.spec).region))
    check.window = check.window.model_copy(update=room)
    return OpenPlan(check, state.state, BurstState(check.window, ledger, now))


def _replaced(
    s: StackState, pool: str, nodes: int, now: dt.datetime, book: Booker
) -> tuple[tuple[BurstLedgerEntry, ...], dict[str, object]]:
    """The ledger once the expired window a new one replaces is booked, and what the new window must keep for
    that window's nodes when they are still in their grace: room in the node group until they stop.

    A new window of `nodes` smaller than those is refused. Kueue does not evict admitted work when quota drops
    (only `stopPolicy` does: apis/kueue/v1beta2/clusterqueue_types.go at versions.KUEUE), and the new window's
    stops replace the old window's, so the old nodes would run on under the new window, outside its budget."""
    w = s.window
    if w is None:
        return s.state.ledger, {}
    if w.overrun_since is not None:
        raise BurstError(
            f"the burst window on pool {w.pool} overran: its node group was not at zero after its backstop time, "
            f"and its nodes are booked only until {w.overrun_since:%Y-%m-%d %H:%M} UTC. A new window would take "
            "over the group and stop tracking them. Check the node group and its backstop schedule in AWS, then run "
            "`gpufleet burst reconcile` until it finds the group at zero (it then books and removes the window); "
            "open a new window after that"
        )
    ledger = (*s.state.ledger, *book(s, w, "gpufleet burst open (the window it replaced)", now))
    stops = backstop_time(s.spec, w)
    if now >= stops:
        return ledger, {}
    if w.pool != pool:
        raise BurstError(
            f"the burst window on pool {w.pool} is draining until {stops:%Y-%m-%d %H:%M} UTC (burst.grace_minutes); "
            f"a window on pool {pool} can open after that, or one on pool {w.pool} now"
        )
    held, until = w.nodes, stops
    if w.draining_until is not None and now < w.draining_until:  # it kept room for an older window's nodes
        held, until = max(held, w.draining_nodes or 0), max(until, w.draining_until)
    if nodes < held:
        raise BurstError(
            f"the burst window on pool {w.pool} is draining until {until:%Y-%m-%d %H:%M} UTC with up to {held} "
            f"nodes, and a window of {nodes} cannot hold them: Kueue keeps admitted work running when quota drops, "
            f"so they would run outside the new window's budget. Open a window of at least {held} nodes now, or "
            "any window after that"
        )
    return ledger, {"draining_nodes": held, "draining_until": until}


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
    project_dir: Path, stack: str, d: StackDriver, s: StackState, after: BurstState, on_output: OutputSink
) -> dict[str, int]:
    targets = burst_targets(project_dir, stack)
    return apply_and_up(d, stack, s.state, after, on_output, targets=targets, if_stopped=_FINISH)


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
    if s.window is None:
        return Outcome("no burst window recorded; nothing to close")
    now = clock()
    s = s.at(now)
    w = s.window
    assert w is not None
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
    return _reconcile_expired(project_dir, stack, driver, s, now, on_output, book, "gpufleet burst close")


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
    now = clock()
    s = s.at(now)
    w = s.window
    if not s.recorded:
        record_state(driver, stack, BurstState(None, (), now), on_output, read=s.state.generation)
        return Outcome(f"recorded an empty burst state (no window) in the new state stack of {stack}")
    if w is not None and now >= w.expires:
        return _reconcile_expired(project_dir, stack, driver, s, now, on_output, book, "gpufleet burst reconcile")
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
    if s.recorded_expiry is not None and w.expires < s.recorded_expiry:
        # A lowered budget moved the expiry: the stops in the estate still name the old one until an `up` moves them.
        summary = _up(project_dir, stack, driver, s, BurstState(w, s.state.ledger, now), on_output)
        return Outcome(
            f"the burst budget was lowered: the window on pool {w.pool} now expires at {w.expires:%Y-%m-%d %H:%M} "
            f"UTC (was {s.recorded_expiry:%Y-%m-%d %H:%M} UTC), and its backstop moved with it",
            summary,
        )
    return Outcome(f"burst window on pool {w.pool} is open until {w.expires:%Y-%m-%d %H:%M} UTC; nothing to do")


def _reconcile_expired(
    project_dir: Path,
    stack: str,
    d: StackDriver,
    s: StackState,
    now: dt.datetime,
    on_output: OutputSink,
    book: Booker,
    closed_by: str,
) -> Outcome:
    w = s.window
    assert w is not None
    if now < backstop_time(s.spec, w):
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
    entries = book(s, w, closed_by, now)
    ledger, entry = (*s.state.ledger, *entries), booked(entries)
    if STILL_RUNNING in entry.closed_by:  # overrun: the window stays, booked until now, till the group is at zero
        kept = w.model_copy(update={"overrun_since": entry.end})
        summary = _up(project_dir, stack, d, s, BurstState(kept, ledger, now), on_output)
        raise BurstError(
            f"{_closed(w, entry, summary).message}. The burst node group was not at zero after its backstop "
            f"time {backstop_time(s.spec, w):%Y-%m-%d %H:%M} UTC: the AWS-side stop did not empty it. The `up` set "
            "its idle bounds; check the node group and its backstop schedule in AWS. The window stays (overrun): "
            "each `gpufleet burst reconcile` books its nodes' time since the last booking until the group is at zero"
        )
    summary = _up(project_dir, stack, d, s, BurstState(None, ledger, now), on_output)
    return _closed(w, entry, summary)


def _closed(w: BurstWindow, entry: BurstLedgerEntry, summary: dict[str, int]) -> Outcome:
    return Outcome(
        f"burst window on pool {w.pool} closed (expired {w.expires:%Y-%m-%d %H:%M} UTC, {entry.nodes} x "
        f"{entry.instance_type} from {entry.start:%Y-%m-%d %H:%M} until {entry.end:%Y-%m-%d %H:%M} UTC booked at "
        f"${entry.usd:,.2f}: {entry.closed_by})",
        summary,
    )


@dataclass(frozen=True)
class Status:
    window: BurstWindow | None
    open: bool
    time_left: dt.timedelta | None
    spend_usd: float  # this month: the ledger plus the current window so far
    committed_usd: float  # the rest of the current window's worst case, until its backstop time
    budget_usd: float

    @property
    def budget_left_usd(self) -> float:
        return round(self.budget_usd - self.spend_usd - self.committed_usd, 2)


def status(spec: EstateSpec, state: BurstState, now: dt.datetime) -> Status:
    """Where the window and the month's budget stand at `now` (the window as `within_budget` leaves it)."""
    assert spec.burst is not None
    ledger = list(state.ledger)
    w = state.window
    committed = 0.0
    if w is not None:
        w = within_budget(spec, w, ledger, now)
    is_open = w is not None and w.is_open(now)
    if w is not None and w.overrun_since is not None:
        # Booked until `overrun_since`; since then its nodes run unbooked, at most every node of the cap.
        ledger.append(booking(spec, w, "so far", now=max(now, w.overrun_since)))
    elif w is not None and now >= w.start:
        so_far = close_entry(spec, w, min(now, backstop_time(spec, w)), "so far", through_expiry=True)
        ledger.append(so_far)
        committed = max(0.0, round(booking(spec, w, "worst case").usd - so_far.usd, 2))
    return Status(
        window=w,
        open=is_open,
        time_left=(w.expires - now) if w is not None and is_open else None,
        spend_usd=spend_in_month(ledger, now),
        committed_usd=committed,
        budget_usd=spec.burst.budget_usd,
    )


def extend(
    project_dir: Path,
    stack: str,
    hours: float,
    *,
    driver: StackDriver,
    clock: Clock,
    on_output: OutputSink,
    book: Booker = book_cap,
) -> Outcome:
    """Move an open window's expiry `hours` later, within the policy's max_window_hours from its start and the
    month's budget: the window's worst case to the new expiry (cap x (hours + grace + lag)) on top of the ledger.
    The targeted `up` moves the backstop with it: its schedule and CronJobs would otherwise stop the capacity at
    the old expiry, while the ledger books the new one."""
    s = load_state(project_dir, stack, driver)
    policy = s.spec.burst
    assert policy is not None
    now = clock()
    s = s.at(now)
    w = s.window
    if w is not None and now >= w.expires:
        entry = booked(book(s, w, "", now))  # the figure every command books it at; closed_by says how it was found
        raise BurstError(
            f"the burst window on pool {w.pool} expired at {w.expires:%Y-%m-%d %H:%M} UTC, so it cannot be extended; "
            f"`gpufleet burst reconcile` books it at ${entry.usd:,.2f}{entry.closed_by}; then open a new one"
        )
    if w is None or not w.is_open(now):
        raise BurstError(f"no open burst window to extend; open one (`gpufleet burst open --stack {stack}`)")
    check_hours(hours)
    expires = w.expires + dt.timedelta(hours=hours)
    total = hours_between(w.start, expires)
    if total > policy.max_window_hours:
        raise BurstError(
            f"the window would last {total:g} h from its start, more than the burst policy's max_window_hours "
            f"({policy.max_window_hours}); close it and open a new one"
        )
    price = window_usd_per_hour(s.spec, w)
    fits = latest_expiry(s.spec, s.ledger, w.nodes, price, w.start, expires)
    if fits is None or fits < expires:
        most = (
            "no later expiry fits" if fits is None or fits <= w.expires else f"it fits until {fits:%Y-%m-%d %H:%M} UTC"
        )
        end = stopped_by(s.spec, expires)
        raise BurstError(
            f"extended, the window ({w.nodes} x {w.instance_type} for {total:g} h from its start) costs "
            f"{worst_case(s.spec, w.nodes, price, w.start, expires)}, but only "
            f"{budget_line(s.spec, s.ledger, w.start, end)}; "
            f"{most}"
        )
    after = BurstState(w.model_copy(update={"expires": expires}), s.state.ledger, now)
    summary = _up(project_dir, stack, driver, s, after, on_output)
    extra = window_price(price, w.nodes, hours)
    return Outcome(
        f"burst window on pool {w.pool} extended to {expires:%Y-%m-%d %H:%M} UTC (about ${extra:,.2f} more)", summary
    )
