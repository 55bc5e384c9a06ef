"""What a closed window is booked at: the node-hours its burst node group actually had in service, measured by
AWS, not the cap.

The burst node group's Auto Scaling group is found by the tags the cluster autoscaler discovers it by
(components/aws/autoscaler.py, `discovery_tags`); its in-service instances over the window come from CloudWatch's
`AWS/AutoScaling` `GroupInServiceInstances` (collected once `gpufleet burst open` enabled group metrics). Where AWS
cannot say (no group, no datapoints, an API refusing), the window is booked at its cap — every node from start to
end, the most it can have cost — and the ledger entry says so.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from gpufleet.burst.aws import Aws
from gpufleet.burst.errors import BurstError
from gpufleet.burst.flows import Booker, book_cap
from gpufleet.burst.stack import StackState
from model.burst import cloud_site, node_hour_price
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
        hours = aws.node_hours(group, w.start, end)
    except BurstError as err:
        return None, str(err)
    if hours is None:
        return None, f"CloudWatch has no GroupInServiceInstances datapoints for {group}"
    return hours, ""


def measured_booker(aws_factory: Callable[[str], Aws]) -> Booker:
    """Book a window at the node-hours measured by AWS; at the cap, saying why, when they cannot be measured."""

    def book(s: StackState, w: BurstWindow, end: dt.datetime, closed_by: str) -> BurstLedgerEntry:
        cap = book_cap(s, w, end, closed_by)
        hours, why = measured(aws_factory(cloud_site(s.spec).region), s.spec, w, cap.end)
        if hours is None:
            return cap.model_copy(update={"closed_by": f"{closed_by} (booked at the cap: {why})"})
        price = w.usd_per_hour if w.usd_per_hour is not None else node_hour_price(s.spec, w.instance_type)
        return cap.model_copy(
            update={"usd": round(price * hours, 2), "closed_by": f"{closed_by} ({hours:g} node-hours measured)"}
        )

    return book
