"""A Capacity Block's life, modelled like a burst window: scheduled, active, draining, ended.

- EC2 "begin[s] to terminate any instances that are still running in the Capacity Block" thirty minutes before
  it expires (EC2 user guide, capacity-blocks-using:
  https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-using.html).
- EKS scales a block's node group to 0 forty minutes before the end (EKS user guide, capacity-blocks-mng).
- So Kueue stops admitting to the block's flavor an hour before the end (`ADMISSION_LEAD`): work admitted
  then has the time to the EKS scale-down to finish or checkpoint, and nothing new starts on nodes about to go.
- After the end the pool's node group holds no nodes, and the block costs nothing more.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Literal

from model.spec import AwsNodePool, Site

BlockPhase = Literal["unscheduled", "scheduled", "active", "draining", "ended"]

# EC2 user guide, capacity-blocks-using: instances are terminated from 30 minutes before the block ends.
EC2_TERMINATES_BEFORE_END = dt.timedelta(minutes=30)
# EKS user guide, capacity-blocks-mng: the node group is scaled to 0 forty minutes before the block ends.
EKS_SCALES_DOWN_BEFORE_END = dt.timedelta(minutes=40)
# Admission to the block's flavor stops this long before the end, ahead of the EKS scale-down.
ADMISSION_LEAD = dt.timedelta(hours=1)


def admission_stops(pool: AwsNodePool) -> dt.datetime | None:
    """When Kueue stops admitting to the block pool's flavor; None without a block start (or for another pool)."""
    block = pool.capacity.block if pool.capacity.type == "capacity-block" else None
    end = block.end_at() if block is not None else None
    return None if end is None else end - ADMISSION_LEAD


def block_phase(pool: AwsNodePool, now: dt.datetime) -> BlockPhase | None:
    """Where a capacity-block pool's block is at `now`; None for any other pool. `unscheduled`: no start given."""
    if pool.capacity.type != "capacity-block":
        return None
    block = pool.capacity.block
    end = block.end_at() if block is not None else None
    if block is None or block.start is None or end is None:
        return "unscheduled"
    if now >= end:
        return "ended"
    if now >= end - ADMISSION_LEAD:
        return "draining"
    return "active" if now >= block.start else "scheduled"


def admission_closed(pool: AwsNodePool, now: dt.datetime) -> bool:
    """The block's flavor admits nothing more: its admission stop has passed."""
    return block_phase(pool, now) in ("draining", "ended")


def block_warning(pool: AwsNodePool, now: dt.datetime) -> str | None:
    """What preview says of a block with a start: when it ends, when admission stops, what happens then."""
    phase = block_phase(pool, now)
    block = pool.capacity.block
    stop = admission_stops(pool)
    if phase in (None, "unscheduled") or block is None or stop is None:
        return None
    end = stop + ADMISSION_LEAD
    what = f"pool {pool.name}: capacity block {pool.capacity.reservation}"
    if phase == "ended":
        return f"{what} ended {end:%Y-%m-%d %H:%M} UTC: its node group is held at 0 and its flavor admits nothing"
    days = math.floor((end - now).total_seconds() / 86_400)
    when = f"ends in {days} day{'' if days == 1 else 's'}" if days else "ends today"
    return (
        f"{what} {when} ({end:%Y-%m-%d %H:%M} UTC). Kueue stops admitting to its flavor at {stop:%Y-%m-%d %H:%M} "
        "UTC, EKS scales the node group to 0 forty minutes before the end and EC2 terminates what still runs "
        "thirty minutes before it: checkpoint long jobs before then"
    )


def closed_flavors(site: Site, now: dt.datetime) -> frozenset[str]:
    """The site's block pools whose flavor admits nothing more at `now` (their ClusterQueue quota goes to 0)."""
    return frozenset(p.name for p in site.node_pools if isinstance(p, AwsNodePool) and admission_closed(p, now))
