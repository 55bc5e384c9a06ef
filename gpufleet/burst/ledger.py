"""What a closed window is booked at: the node-hours its burst node group actually had in service, measured by
AWS, not the cap.

The burst node group's Auto Scaling group is found by the tags the cluster autoscaler discovers it by
(components/aws/autoscaler.py, `discovery_tags`); its instances over the window, booting and draining ones
included, come from CloudWatch's `AWS/AutoScaling` `GroupTotalInstances` (collected once `gpufleet burst open`
enabled group metrics; a minute without a datapoint counts at the cap). Where AWS
cannot say (no group, no datapoints, an API refusing), or cannot say yet (the capacity may still run: before the
backstop time), the window is booked at its cap until the backstop time, the most it can have cost, and the
ledger entry says so. Either way by the one rule, `model.burst_spend.booking`.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
from collections.abc import Callable

from gpufleet.burst.aws import TOTAL_INSTANCES, Aws
from gpufleet.burst.errors import BurstError
from gpufleet.burst.flows import STILL_RUNNING, Booker
from gpufleet.burst.stack import StackState
from model.burst import cloud_site
from model.burst_spend import backstop_time, booking, measured_entries, month_spans, month_start
from model.kinds.aws import cluster_name, discovery_tags
from model.spec import BurstLedgerEntry, BurstWindow, EstateSpec
from model.tags import Tags


def burst_group_tags(spec: EstateSpec, pool: str) -> dict[str, str]:
    return discovery_tags(cluster_name(Tags.from_spec(spec), cloud_site(spec)), pool)


# Past the backstop time only what CloudWatch saw counts (a minute without a datapoint there is the idle group's, not
# the cap's), so the same history is booked at the same figure however late. One-minute datapoints are kept 15 days
# (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch_concepts.html#metrics-retention).
RETAINED = dt.timedelta(days=15)


Pieces = list[tuple[dt.datetime, dt.datetime, float]]  # (from, to, node-hours)


def pieces(aws: Aws, group: str, start: dt.datetime, end: dt.datetime, stops: dt.datetime, cap: int) -> Pieces | None:
    """Node-hours of the group in [start, end), cut at each calendar month (UTC) and at `stops` (the backstop
    time). A minute with no datapoint counts every node of the cap before `stops`, none after. None: CloudWatch
    holds no datapoint in the whole span."""
    cuts = sorted({t for span in month_spans(start, end) for t in span} | ({stops} if start < stops < end else set()))
    out: Pieces = []
    seen = False
    for lo, hi in itertools.pairwise(cuts):
        gap = cap if hi <= stops else 0
        hours = aws.node_hours(group, lo, hi, gap_nodes=gap)
        seen = seen or hours is not None
        out.append((lo, hi, hours if hours is not None else math.ceil((hi - lo).total_seconds() / 60) * gap / 60))
    return out if seen else None


def by_month(found: Pieces) -> Pieces:
    """The pieces joined per calendar month (UTC)."""
    months: dict[dt.datetime, tuple[dt.datetime, dt.datetime, float]] = {}
    for lo, hi, hours in found:
        first = months.get(month_start(lo), (lo, hi, 0.0))
        months[month_start(lo)] = (first[0], hi, first[2] + hours)
    return [(lo, hi, round(h, 4)) for lo, hi, h in months.values()]


def measured(
    aws: Aws, spec: EstateSpec, w: BurstWindow, stops: dt.datetime, now: dt.datetime
) -> tuple[Pieces | None, tuple[int, int], str]:
    """(node-hours in service from the window's start until `now`, at most RETAINED past `stops`, in pieces, or
    None; the group's desired size and instances now; why None)."""
    try:
        group = aws.group_by_tags(burst_group_tags(spec, w.pool))
        if group is None:
            return None, (0, 0), "no Auto Scaling group carries the burst pool's tags"
        found = pieces(aws, group, w.start, max(stops, min(now, stops + RETAINED)), stops, w.nodes)
        if found is None:
            return None, (0, 0), f"CloudWatch has no {TOTAL_INSTANCES} datapoints for {group}"
        return found, aws.group_size(group), ""
    except BurstError as err:
        return None, (0, 0), str(err)


def overrun(aws: Aws, spec: EstateSpec, w: BurstWindow, now: dt.datetime) -> tuple[Pieces | None, tuple[int, int], str]:
    """(node-hours seen since the window was last booked, `overrun_since`, until `now`, per month, or None; the
    group's desired size and instances now; why None). A group gone holds nothing."""
    assert w.overrun_since is not None
    try:
        group = aws.group_by_tags(burst_group_tags(spec, w.pool))
        if group is None:
            return None, (0, 0), "no Auto Scaling group carries the burst pool's tags"
        found = pieces(aws, group, w.overrun_since, now, w.overrun_since, 0) or [(w.overrun_since, now, 0.0)]
        return by_month(found), aws.group_size(group), ""
    except BurstError as err:  # nothing says the group stopped: the window stays overrun
        return None, (1, 1), str(err)


def _still_running(size: tuple[int, int], since: dt.datetime) -> str:
    desired, instances = size
    if not desired and not instances:
        return ""
    return f"; {instances} instances (desired {desired}) {STILL_RUNNING} {since:%Y-%m-%d %H:%M} UTC"


def measured_booker(aws_factory: Callable[[str], Aws]) -> Booker:
    """Book a window at the node-hours measured by AWS until its backstop time, and any it measured after it until
    now (a backstop that failed); at the cap, saying why, when they cannot be measured (yet). A group not at zero
    (desired size or instances) is noted `STILL_RUNNING`: the window stays, overrun, and each later booking is the
    interval since the last one."""

    def book(s: StackState, w: BurstWindow, closed_by: str, now: dt.datetime) -> tuple[BurstLedgerEntry, ...]:
        stops = backstop_time(s.spec, w)
        region = cloud_site(s.spec).region
        if w.overrun_since is not None:
            months, size, why = overrun(aws_factory(region), s.spec, w, now)
            since = f"since {w.overrun_since:%Y-%m-%d %H:%M} UTC"
            if months is None:
                note = f"booked at the cap: {why} {since}{_still_running(size, stops)}"
                return (booking(s.spec, w, f"{closed_by} ({note})", now=now),)
            seen = sum(h for _, _, h in months)
            note = f"{seen:g} node-hours measured {since}{_still_running(size, stops)}"
            return measured_entries(s.spec, w, f"{closed_by} ({note})", months)
        if now < stops:
            why = f"its nodes may run until {stops:%Y-%m-%d %H:%M} UTC, so they cannot be measured yet"
            return (booking(s.spec, w, f"{closed_by} (booked at the cap: {why})"),)
        found, size, why = measured(aws_factory(region), s.spec, w, stops, now)
        if found is None:
            return (booking(s.spec, w, f"{closed_by} (booked at the cap: {why})"),)
        after = round(sum(h for lo, _, h in found if lo >= stops), 4)
        note = f", {after:g} of them after the backstop time" if after else ""
        note += _still_running(size, stops)
        if not note:  # nothing ran after the backstop time: the booking ends there
            found = [p for p in found if p[1] <= stops]
        months = by_month(found)
        total = round(sum(h for _, _, h in months), 4)
        return measured_entries(s.spec, w, f"{closed_by} ({total:g} node-hours measured{note})", months)

    return book
