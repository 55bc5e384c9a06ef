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
from gpufleet.burst.flows import Booker
from gpufleet.burst.stack import StackState
from model.burst import backstop_time, booking, cloud_site
from model.kinds.aws import cluster_name, discovery_tags
from model.spec import BurstLedgerEntry, BurstWindow, EstateSpec
from model.tags import Tags


def burst_group_tags(spec: EstateSpec, pool: str) -> dict[str, str]:
    return discovery_tags(cluster_name(Tags.from_spec(spec), cloud_site(spec)), pool)


def measured(aws: Aws, spec: EstateSpec, w: BurstWindow, end: dt.datetime) -> tuple[float | None, str]:
    """(node-hours in service from the window's start to `end`, or None; why not, when None)."""
    try:
        group = aws.group_by_tags(burst_group_tags(spec, w.pool))
        if group is None:
            return None, "no Auto Scaling group carries the burst pool's tags"
        hours = aws.node_hours(group, w.start, end, gap_nodes=w.nodes)
    except BurstError as err:
        return None, str(err)
    if hours is None:
        return None, f"CloudWatch has no {TOTAL_INSTANCES} datapoints for {group}"
    return hours, ""


def measured_booker(aws_factory: Callable[[str], Aws]) -> Booker:
    """Book a window at the node-hours measured by AWS until its backstop time; at the cap, saying why, when they
    cannot be measured (yet)."""

    def book(s: StackState, w: BurstWindow, closed_by: str, now: dt.datetime) -> BurstLedgerEntry:
        stops = backstop_time(s.spec, w)
        if now < stops:
            why = f"its nodes may run until {stops:%Y-%m-%d %H:%M} UTC, so they cannot be measured yet"
            return booking(s.spec, w, f"{closed_by} (booked at the cap: {why})")
        hours, why = measured(aws_factory(cloud_site(s.spec).region), s.spec, w, stops)
        if hours is None:
            return booking(s.spec, w, f"{closed_by} (booked at the cap: {why})")
        return booking(s.spec, w, f"{closed_by} ({hours:g} node-hours measured)", node_hours=hours)

    return book
