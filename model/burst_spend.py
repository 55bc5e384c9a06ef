"""Burst spend: what windows cost, the budget's worst case, and the ledger's one booking rule.

- Spend is booked in a ledger of past windows (the state stack's `ledger` output): the node-hours the burst group
  had in service, or every node of the cap, times the node-hour price.
- A window's capacity has stopped at the latest `stopped_by` its expiry: every worst case, booking and ceiling
  counts to that moment.
- Measured node-hours are booked one entry per calendar month; a cap booking across a month boundary counts to
  each month pro rata (`spend_in_month`).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable

from model import pricing
from model.burst import (
    AWS_STOP_LEAD,
    burst_pools,
    cloud_site,
    drain_ends,
    grace,
    minute_at_or_after,
    stop_after_expiry,
    window_phase,
)
from model.catalog import CatalogError
from model.spec import (
    BurstLedgerEntry,
    BurstWindow,
    EstateSpec,
)

MIN_WINDOW_HOURS = 1 / 60  # a minute: windows are recorded to the second, and a shorter one cannot start a node


def hours_between(start: dt.datetime, end: dt.datetime) -> float:
    return max(0.0, (end - start).total_seconds() / 3600)


def node_hour_price(spec: EstateSpec, instance_type: str) -> float:
    """One node-hour in the cloud site: the stack's own price, else the catalog's (CatalogError if neither)."""
    return pricing.node_hour_price(cloud_site(spec), instance_type)


def window_price(usd_per_hour: float, nodes: int, hours: float) -> float:
    return round(usd_per_hour * nodes * hours, 2)


def window_ceiling(spec: EstateSpec, window: BurstWindow) -> float | None:
    """The most a window can cost, as the ledger books it (`booking`): every node of the cap from its start to the
    backstop time (the AWS stop plus the lag). None: the window carries no price and the catalog holds none."""
    price = window.usd_per_hour
    if price is None:
        try:
            price = node_hour_price(spec, window.instance_type)
        except CatalogError:
            return None
    return window_price(price, window.nodes, hours_between(window.start, backstop_time(spec, window)))


def window_note(spec: EstateSpec, window: BurstWindow, now: dt.datetime) -> str:
    """What a window allows at `now` and may cost at most (cost reports)."""
    phase = window_phase(spec, window, now)
    when = (
        f"open until {window.expires.isoformat()}" if phase == "open" else f"draining until {drain_ends(spec, window)}"
    )
    ceiling = window_ceiling(spec, window)
    cost = "unpriced" if ceiling is None else f"may cost at most ${ceiling:,.2f}"
    # A spot window is judged at on demand: spot's default maximum price, the most a spot node can bill.
    spot = any(p.name == window.pool and p.capacity.type == "spot" for p in burst_pools(spec))
    bought = "on spot, priced at on demand (spot's maximum price)" if spot else "on demand"
    return f"burst window {when}: 0 to {window.nodes} × {window.instance_type} {bought} (cluster-autoscaler); {cost}"


def month_start(now: dt.datetime) -> dt.datetime:
    return now.astimezone(dt.UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)


def next_month(start: dt.datetime) -> dt.datetime:
    return start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)


def _overlap_share(start: dt.datetime, end: dt.datetime, lo: dt.datetime, hi: dt.datetime) -> float:
    total = hours_between(start, end)
    if total == 0:
        return 1.0 if lo <= start < hi else 0.0
    return hours_between(max(start, lo), min(end, hi)) / total


def spend_in_month(ledger: Iterable[BurstLedgerEntry], now: dt.datetime) -> float:
    """Spend booked in the calendar month (UTC) of `now`; windows across a month boundary count pro rata."""
    lo = month_start(now)
    hi = next_month(lo)
    return round(sum(e.usd * _overlap_share(e.start, e.end, lo, hi) for e in ledger), 2)


# How long the capacity may outlive the AWS stop's minute (`aws_stop`); worst cases, bookings, ceilings count it:
# - EventBridge Scheduler fires a one-time schedule within its minute (user guide, schedule-types.html#one-time);
# - EKS drains each node before Auto Scaling terminates it: "after 5 minutes" when a node group is deleted (EKS user
#   guide, delete-managed-node-group.html), 15 minutes for an update (managed-node-update-behavior.html). No page
#   gives the figure for a lowered desired size (unverified offline), so the longer one is taken.
RECONCILE_LAG = dt.timedelta(minutes=16)


def stop_tail(spec: EstateSpec, lag: dt.timedelta = RECONCILE_LAG) -> dt.timedelta:
    """How long after its (whole-minute) expiry a window's capacity may still run: to the AWS stop, plus the lag."""
    return stop_after_expiry(spec) + lag


def stopped_by(spec: EstateSpec, expires: dt.datetime, lag: dt.timedelta = RECONCILE_LAG) -> dt.datetime:
    """When the capacity of a window expiring at `expires` has stopped at the latest: the AWS stop's minute
    (`aws_stop`; the grace and AWS_STOP_LEAD are whole minutes) plus the lag. The one rule every worst case,
    booking and ceiling counts to."""
    return minute_at_or_after(expires) + stop_tail(spec, lag)


def backstop_time(spec: EstateSpec, window: BurstWindow, lag: dt.timedelta = RECONCILE_LAG) -> dt.datetime:
    """When the window's capacity has stopped at the latest (`stopped_by` its expiry)."""
    return stopped_by(spec, window.expires, lag)


def window_start(now: dt.datetime) -> dt.datetime:
    """The start `open` records: the whole UTC minute at or before `now`. Its expiry is then a whole minute too, so
    the AWS stop falls exactly grace (or AWS_STOP_LEAD) after it, as the worst case shows; the window counts from
    up to a minute before it opened, never after."""
    return now.astimezone(dt.UTC).replace(second=0, microsecond=0)


def window_usd_per_hour(spec: EstateSpec, window: BurstWindow) -> float:
    """One node-hour of the window: the price it was opened at, else the stack's or the catalog's."""
    return window.usd_per_hour if window.usd_per_hour is not None else node_hour_price(spec, window.instance_type)


def latest_expiry(
    spec: EstateSpec,
    ledger: Iterable[BurstLedgerEntry],
    nodes: int,
    usd_per_hour: float,
    start: dt.datetime,
    expires: dt.datetime,
    lag: dt.timedelta = RECONCILE_LAG,
) -> dt.datetime | None:
    """The latest expiry, `expires` or a whole number of minutes from `start` before it, at which the window's
    worst case fits the budget; None when no minute fits.

    Worst case: every node of the cap in service from `start` until `stopped_by` the expiry. Each month it
    touches must hold its part on top of what the ledger books there (`spend_in_month`)."""
    assert spec.burst is not None
    budget, ledger = spec.burst.budget_usd, list(ledger)
    rate = usd_per_hour * nodes

    def fits(expiry: dt.datetime) -> bool:
        spans = month_spans(start, stopped_by(spec, expiry, lag))
        return all(rate * hours_between(lo, hi) <= budget - spend_in_month(ledger, lo) + 1e-6 for lo, hi in spans)

    if fits(expires):
        return expires
    lo, hi = 0, math.ceil((expires - start).total_seconds() / 60) - 1  # whole minutes; the worst case grows with them
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(start + dt.timedelta(minutes=mid)) else (lo, mid - 1)
    return start + dt.timedelta(minutes=lo) if lo >= 1 and fits(start + dt.timedelta(minutes=lo)) else None


def hours_text(hours: float) -> str:
    """Hours as messages show them: `7.5 h`, or `1 h 19 min` (`16 min` under an hour) when not a round figure."""
    if round(hours, 2) == hours:
        return f"{hours:g} h"
    minutes = f"{round(hours % 1 * 60)} min"
    return minutes if hours < 1 else f"{int(hours)} h {minutes}"


def worst_case(
    spec: EstateSpec,
    nodes: int,
    usd_per_hour: float,
    start: dt.datetime,
    expires: dt.datetime,
    lag: dt.timedelta = RECONCILE_LAG,
) -> str:
    """The worst-case arithmetic of a window from `start` to `expires`, as messages show it: every node of the cap
    until `stopped_by` the expiry."""
    end = stopped_by(spec, expires, lag)
    hours, lag_h = hours_between(start, expires), lag.total_seconds() / 3600
    tail = hours_between(expires, end) - lag_h
    until = "grace" if grace(spec) >= AWS_STOP_LEAD else "to the AWS stop"
    usd = window_price(usd_per_hour, nodes, hours_between(start, end))
    return (
        f"${usd:,.2f} at worst ({nodes} x ${usd_per_hour:,.2f}/h x ({hours_text(hours)} + {hours_text(tail)} {until} + "
        f"{hours_text(lag_h)} stop lag))"
    )


def within_budget(
    spec: EstateSpec,
    window: BurstWindow,
    ledger: Iterable[BurstLedgerEntry],
    now: dt.datetime,
    lag: dt.timedelta = RECONCILE_LAG,
) -> BurstWindow:
    """The window as the budget allows it at `now`: its expiry moved earlier when its worst case no longer fits a
    lowered `burst.budget_usd`, but never before `now` (nor its start). The program and the burst commands both
    judge the window through this.

    Never before `now`: the estate's stops still name the old expiry until an `up` applies the new one, so what
    ran until then ran; an expiry moved into the past would book the cap to a stop that never happened.
    The expiry moves, never the cap: a smaller cap would change the node group's bounds mid-window, and EKS would
    then receive the old desired size (see `burst_group_size`)."""
    try:
        price = window_usd_per_hour(spec, window)
    except CatalogError:
        return window  # unpriced: `gpufleet burst` refuses to open such a window, so there is nothing to cap
    fits = latest_expiry(spec, ledger, window.nodes, price, window.start, window.expires, lag)
    expires = max(fits if fits is not None else window.start + dt.timedelta(seconds=1), now)
    return window if expires >= window.expires else window.model_copy(update={"expires": expires})


def booking(
    spec: EstateSpec,
    window: BurstWindow,
    closed_by: str,
    node_hours: float | None = None,
    now: dt.datetime | None = None,
) -> BurstLedgerEntry:
    """The one booking rule, whichever command books a window: the node-hours measured in service (until the
    backstop time, plus any AWS saw after it: gpufleet/burst/ledger.py) where AWS knows them, else every node of the
    cap until the backstop time (expiry + grace + lag), the most it can have cost. So a window is booked at the same
    figure by `open`, `close`, `reconcile` and any later command, however late it runs. An overrun window
    (`overrun_since`) is booked until then already: its next entry is the interval from there to `now` alone, by
    the same rule, so no entry is ever rewritten."""
    start = window.overrun_since or window.start
    end = max(start, now if window.overrun_since and now else backstop_time(spec, window))
    price = window_usd_per_hour(spec, window)
    usd = window_price(price, window.nodes, hours_between(start, end)) if node_hours is None else price * node_hours
    return _entry(window, start, end, round(usd, 2), closed_by)


def measured_entries(
    spec: EstateSpec, window: BurstWindow, closed_by: str, months: list[tuple[dt.datetime, dt.datetime, float]]
) -> tuple[BurstLedgerEntry, ...]:
    """A booking of measured node-hours, one entry per calendar month (UTC) they fall in: `months` holds each
    month's (from, to, node-hours). The month's budget then holds what ran in it, not a share by time
    (`spend_in_month` splits an entry across months by time, which is exact only at the cap)."""
    price = window_usd_per_hour(spec, window)
    many = len(months) > 1
    return tuple(
        _entry(window, lo, hi, round(price * hours, 2), f"{closed_by}{f', {lo:%B %Y} part' if many else ''}")
        for lo, hi, hours in months
    )


def month_spans(start: dt.datetime, end: dt.datetime) -> list[tuple[dt.datetime, dt.datetime]]:
    """[start, end) cut at each calendar month's start (UTC): one (from, to) per month it touches, in order."""
    spans, lo = [], start
    while lo < end:
        hi = min(end, next_month(month_start(lo)))
        spans.append((lo, hi))
        lo = hi
    return spans


def _entry(window: BurstWindow, start: dt.datetime, end: dt.datetime, usd: float, closed_by: str) -> BurstLedgerEntry:
    return BurstLedgerEntry(
        pool=window.pool, instance_type=window.instance_type, nodes=window.nodes, start=start, end=end, usd=usd,
        closed_by=closed_by,
    )  # fmt: skip


def close_entry(
    spec: EstateSpec, window: BurstWindow, end: dt.datetime, closed_by: str, *, through_expiry: bool = False
) -> BurstLedgerEntry:
    """The ledger entry for `window` closed at `end` (never before its start; never later than its expiry unless
    `through_expiry`: nodes run past the expiry until the `up` that removes them has finished)."""
    end = max(window.start, end if through_expiry else min(end, window.expires))
    usd = window_price(window_usd_per_hour(spec, window), window.nodes, hours_between(window.start, end))
    return _entry(window, window.start, end, usd, closed_by)
