"""What an AWS pool's nodes cost an hour at min, desired and max size, and how a month counts them.

- A pool on demand, on spot or on a capacity reservation is priced per node-hour, for the nodes it runs at each
  size, every hour of a month.
- It is priced as bought (`model.pricing.pool_rate`): the stack's own rate (`prices`) first, spot at its spot
  rate, a commitment's rate for the nodes it covers (paid whether they run or not), else on demand.
- A pool on an EC2 Capacity Block is priced apart (`_capacity_block`).
- A pool nothing prices is unpriced (`price` None), never $0. gpufleet's commands refuse such a stack first.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from gpufleet.review.cost.prices import HOURS, LEVELS, Figures, PriceRef
from model import catalog
from model.pricing import PoolRate, pool_rate, site_capacity_block_price
from model.spec import AwsNodePool, AwsSite


@dataclass(frozen=True)
class PoolPrice:
    price: PriceRef | None  # per node-hour; None: unpriced
    hourly: Figures
    month_hours: float = HOURS  # hours of a month the pool is billed
    notes: list[str] = field(default_factory=list)
    on_demand: float | None = None  # a node's on-demand rate (None: a capacity block, or unpriced)
    basis: str = "on demand"
    max_rate: float | None = None  # the most a node-hour can bill (spot: on demand); None: `price.usd`


def aws_pool_price(
    site: AwsSite,
    pool: AwsNodePool,
    instance_type: str,
    nodes: dict[str, int],
    found: catalog.Price | None,
    now: dt.datetime,
) -> PoolPrice:
    """The pool's price and $/h at each size of `nodes`, as the pool is bought (model.pricing.pool_rate); `found`
    is its on-demand node-hour price (site_price)."""
    if pool.capacity.type == "capacity-block":
        return _capacity_block(site, pool, instance_type, _block_instances(site, pool, nodes["max"]), now)
    rate = pool_rate(site, pool, instance_type, now.date())
    if rate is None:
        why = "no spot figure (set capacity.spot_discount)" if found is not None else "no catalog price"
        return PoolPrice(
            None, Figures(None, None, None), notes=[f"{why} for {instance_type} in {site.region}: unpriced"]
        )
    price = PriceRef(
        rate.usd,
        "node-hour",
        rate.date,
        rate.source if rate.source.startswith("stack:") else f"{rate.source}; {site.region}",
    )
    notes = [rate.note] if rate.note else []
    if site.price_override(instance_type) is not None:
        notes.append(f"priced by the stack (sites.{site.name}.prices), not the catalog's on-demand rate")
    elif rate.basis != "on demand":
        notes.append(_purchase_note(pool, rate))
    elif pool.capacity.type == "capacity-reservation":
        notes.append(
            "capacity reservation: billed at the on-demand rate (capacity.commitment prices a Savings Plan on it)"
        )
    if not pool.burst and pool.autoscaled and not rate.committed:
        notes.append(_autoscaled_note(nodes, price.usd))
    if rate.committed:
        hourly = Figures(
            *(rate.committed * rate.usd + max(nodes[lv] - rate.committed, 0) * rate.on_demand for lv in LEVELS)
        )
    else:
        hourly = Figures(*(nodes[lv] * price.usd for lv in LEVELS))
    # Spot bills the going price up to the maximum price, which is the on-demand price unless one is set
    # (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/how-spot-instances-work.html); the node group sets
    # none (components/aws/node_pool.py), so the hourly budget judges a spot node at on demand.
    spot = pool.capacity.type == "spot" and site.price_override(instance_type) is None
    return PoolPrice(
        price,
        hourly,
        notes=notes,
        on_demand=rate.on_demand,
        basis=rate.basis,
        max_rate=rate.on_demand if spot else None,
    )


def _purchase_note(pool: AwsNodePool, rate: PoolRate) -> str:
    """How the pool is bought and what that saves against on demand, per node-hour."""
    saving = 1 - rate.usd / rate.on_demand
    note = f"{rate.basis}: ${rate.usd:,.4f}/node-hour against ${rate.on_demand:,.4f} on demand ({saving:.1%} less)"
    if pool.capacity.type == "spot":
        note += "; AWS can interrupt spot capacity with a two-minute notice"
    if rate.committed:
        note += f"; the {rate.committed} committed nodes are paid whether they run or not, nodes above pay on demand"
    return note


def _block_instances(site: AwsSite, pool: AwsNodePool, most: int) -> int:
    """The instances a block pool pays for: the whole block (`capacity.instances`) when no other pool of the site
    shares its reservation, else the pool's max (its share)."""
    c = pool.capacity
    shared = c.reservation_id is not None and any(
        q is not pool and q.capacity.reservation_id == c.reservation_id for q in site.node_pools
    )
    return most if shared or c.instances is None else c.instances


def _capacity_block(
    site: AwsSite, pool: AwsNodePool, instance_type: str, instances: int, now: dt.datetime
) -> PoolPrice:
    """A pool on an EC2 Capacity Block: AWS charges the block up front for every hour of it, whether or not nodes
    run, so the pool costs its instances (the pool's max) at every size. The rate is the block's own
    (`model.pricing.site_capacity_block_price`), never the on-demand one. A month counts the block's hours when
    they are fewer than 730. After the block ends the pool has no capacity and costs nothing more."""
    block, cr = pool.capacity.block, pool.capacity.reservation
    found = site_capacity_block_price(site, pool)
    if block is None or found is None:
        why = "its length is not stated (capacity.block.days)" if block is None else "no capacity-block rate"
        return PoolPrice(None, Figures(None, None, None), notes=[f"capacity block {cr}: {why}, so it is unpriced"])
    price = PriceRef(found.usd, found.unit, found.date, f"{found.source}; {found.region}", found.verified)
    total = instances * block.hours * price.usd
    rate = f"${price.usd:,.3f}/h" + ("" if found.verified else f" (unverified, of {found.date})")
    notes = [
        f"capacity block {cr}: {instances} × {instance_type} for {block.days} days ({block.hours:g} h) at the block "
        f"rate {rate} = ${total:,.2f} paid up front, whether or not nodes run; a month counts "
        f"{min(block.hours, HOURS):g} h of it"
    ]
    end = block.end_at()
    if block.start is not None and end is not None:
        notes.append(f"the block runs {block.start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC")
        if now >= end:
            notes.append("the block has ended: the pool has no capacity and costs nothing more")
            return PoolPrice(price, Figures(0.0, 0.0, 0.0), notes=notes)
    return PoolPrice(price, Figures(*(instances * price.usd for _ in LEVELS)), min(block.hours, HOURS), notes)


def _autoscaled_note(nodes: dict[str, int], usd: float) -> str:
    """An autoscaled pool's month: expected at its desired size, its ceiling only if every node runs all month."""
    return (
        f"autoscaled {nodes['min']}-{nodes['max']} nodes: a month costs about ${nodes['desired'] * usd * HOURS:,.0f} "
        f"at desired size ({nodes['desired']} node{'' if nodes['desired'] == 1 else 's'}) and at most ${nodes['max'] * usd * HOURS:,.0f} if all "
        f"{nodes['max']} run {HOURS} h (the ceiling)"
    )
