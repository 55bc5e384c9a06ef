"""What a closed window is booked at: the node-hours its burst node group actually had in service, measured by
AWS, not the cap.

The burst node group's Auto Scaling group is found by the tags the cluster autoscaler discovers it by
(components/aws/autoscaler.py, `discovery_tags`); its instances over the window, booting and draining ones
included, come from CloudWatch's `AWS/AutoScaling` `GroupTotalInstances` (collected once `gpufleet burst open`
enabled group metrics; a minute without a datapoint counts at the cap). Where AWS
cannot say (no group, no datapoints, an API refusing), or cannot say yet (the capacity may still run: before the
backstop time), the window is booked at its cap until the backstop time, the most it can have cost, and the
ledger entry says so. Either way by the one rule, `model.burst.booking`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from gpufleet.burst.aws import TOTAL_INSTANCES, Aws
from gpufleet.burst.errors import BurstError
from gpufleet.burst.flows import STILL_RUNNING, Booker
from gpufleet.burst.stack import StackState
from model.burst import backstop_time, booking, cloud_site
from model.kinds.aws import cluster_name, discovery_tags
from model.spec import BurstLedgerEntry, BurstWindow, EstateSpec
from model.tags import Tags


def burst_group_tags(spec: EstateSpec, pool: str) -> dict[str, str]:
    return discovery_tags(cluster_name(Tags.from_spec(spec), cloud_site(spec)), pool)


# Past the backstop time only what CloudWatch saw counts (a minute without a datapoint there is the idle group's, not
# the cap's), so the same history is booked at the same figure however late. One-minute datapoints are kept 15 days
# (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch_concepts.html#metrics-retention).
RETAINED = dt.timedelta(days=15)


def measured(
    aws: Aws, spec: EstateSpec, w: BurstWindow, stops: dt.datetime, now: dt.datetime
) -> tuple[float | None, float, tuple[int, int], str]:
    """(node-hours in service from the window's start to `stops`, or None; node-hours seen from `stops` to `now`;
    the group's desired size and instances now; why None)."""
    try:
        group = aws.group_by_tags(burst_group_tags(spec, w.pool))
        if group is None:
            return None, 0.0, (0, 0), "no Auto Scaling group carries the burst pool's tags"
        hours = aws.node_hours(group, w.start, stops, gap_nodes=w.nodes)
        if hours is None:
            return None, 0.0, (0, 0), f"CloudWatch has no {TOTAL_INSTANCES} datapoints for {group}"
        after = aws.node_hours(group, stops, min(now, stops + RETAINED), gap_nodes=0) or 0.0
        return hours, after, aws.group_size(group), ""
    except BurstError as err:
        return None, 0.0, (0, 0), str(err)


def overrun(aws: Aws, spec: EstateSpec, w: BurstWindow, now: dt.datetime) -> tuple[float | None, tuple[int, int], str]:
    """(node-hours seen since the window was last booked, `overrun_since`, until `now`, or None; the group's
    desired size and instances now; why None). A group gone holds nothing."""
    assert w.overrun_since is not None
    try:
        group = aws.group_by_tags(burst_group_tags(spec, w.pool))
        if group is None:
            return None, (0, 0), "no Auto Scaling group carries the burst pool's tags"
        return aws.node_hours(group, w.overrun_since, now, gap_nodes=0) or 0.0, aws.group_size(group), ""
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

    def book(s: StackState, w: BurstWindow, closed_by: str, now: dt.datetime) -> BurstLedgerEntry:
        stops = backstop_time(s.spec, w)
        region = cloud_site(s.spec).region
        if w.overrun_since is not None:
            seen, size, why = overrun(aws_factory(region), s.spec, w, now)
            note = f"booked at the cap: {why}" if seen is None else f"{seen:g} node-hours measured"
            since = f"since {w.overrun_since:%Y-%m-%d %H:%M} UTC"
            return booking(s.spec, w, f"{closed_by} ({note} {since}{_still_running(size, stops)})", seen, now)
        if now < stops:
            why = f"its nodes may run until {stops:%Y-%m-%d %H:%M} UTC, so they cannot be measured yet"
            return booking(s.spec, w, f"{closed_by} (booked at the cap: {why})")
        hours, after, size, why = measured(aws_factory(region), s.spec, w, stops, now)
        if hours is None:
            return booking(s.spec, w, f"{closed_by} (booked at the cap: {why})")
        note = f", {after:g} of them after the backstop time" if after else ""
        note += _still_running(size, stops)
        entry = booking(s.spec, w, f"{closed_by} ({hours + after:g} node-hours measured{note})", hours + after)
        return entry.model_copy(update={"end": now}) if after or note else entry

    return book
