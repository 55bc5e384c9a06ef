"""What bursting can cost: in an hour at max size, in one window, and in a month — months that can happen.

- A burst pool idles at zero nodes. `gpufleet burst open` admits a window only when its price fits what is left
  of the month's `burst.budget_usd` (gpufleet/burst/preflight.py).
- So a month of bursting costs at most the budget, and never more than every burst node running all 730 hours.
  730 × the hourly figure of an open window is a month that cannot happen.
- Nodes still draining in a window's grace are booked after it (`model.burst_spend.close_entry`). So each window
  may add its grace on top of the budget, and the report says so (`BurstCeiling.grace_usd`).
- The node-hour prices are the burst pools' own PoolCost figures, so each price has one computation.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Literal

from gpufleet.review.cost.prices import HOURS, rounded
from model.burst import burst_pools, drain_ends, window_phase
from model.burst_spend import stop_tail, window_ceiling
from model.spec import BurstWindow, EstateSpec

WindowState = Literal["scheduled", "open", "draining", "over"]


@dataclass(frozen=True)
class WindowCost:
    """The window in the stack's config as it stands at a moment, and the most it can cost."""

    pool: str
    nodes: int
    instance_type: str
    start: dt.datetime
    expires: dt.datetime
    drain_ends: dt.datetime
    state: WindowState
    usd_at_most: float | None  # every node of the cap from its start until the grace ends; None: unpriced

    def to_dict(self) -> dict[str, Any]:
        return {
            "pool": self.pool,
            "nodes": self.nodes,
            "instance_type": self.instance_type,
            "start": self.start.isoformat(),
            "expires": self.expires.isoformat(),
            "drain_ends": self.drain_ends.isoformat(),
            "state": self.state,
            "usd_at_most": rounded(self.usd_at_most),
        }


def window_cost(spec: EstateSpec, window: BurstWindow, now: dt.datetime) -> WindowCost:
    """A window's cost at most (model.burst_spend.window_ceiling) and where it stands at `now`."""
    phase = window_phase(spec, window, now)
    state: WindowState = phase if phase != "idle" else ("scheduled" if now < window.start else "over")
    return WindowCost(
        pool=window.pool,
        nodes=window.nodes,
        instance_type=window.instance_type,
        start=window.start,
        expires=window.expires,
        drain_ends=drain_ends(spec, window),
        state=state,
        usd_at_most=window_ceiling(spec, window),
    )


@dataclass(frozen=True)
class BurstPoolCeiling:
    pool: str
    instance_type: str
    max_nodes: int  # the pool's scaling.max: the largest window it allows
    usd_per_node_hour: float | None  # None: unpriced

    @property
    def usd_per_hour_at_max(self) -> float | None:
        return None if self.usd_per_node_hour is None else self.max_nodes * self.usd_per_node_hour


@dataclass(frozen=True)
class BurstCeiling:
    """The burst policy turned into money and hours, for the estate's burst pools together."""

    site: str  # the cloud site the estate bursts to
    pools: tuple[BurstPoolCeiling, ...]
    budget_usd: float  # per calendar month
    max_window_hours: int
    grace_hours: float
    stop_hours: (
        float  # from a window's expiry until its capacity has stopped at the latest (model.burst_spend.stop_tail)
    )
    window: WindowCost | None = None  # the window in the stack's config, if any

    @property
    def priced(self) -> bool:
        return all(p.usd_per_node_hour is not None for p in self.pools)

    @property
    def usd_per_hour_at_max(self) -> float | None:
        """Every burst pool at its max nodes for one hour."""
        if not self.priced:
            return None
        return sum(p.usd_per_hour_at_max or 0.0 for p in self.pools)

    @property
    def budget_hours_at_max(self) -> float | None:
        """Hours at max size the monthly budget buys: budget ÷ $/h at max."""
        at_max = self.usd_per_hour_at_max
        return None if not at_max else self.budget_usd / at_max

    @property
    def longest_window_usd(self) -> float | None:
        """One window of the longest length at max size until its capacity has stopped (the most one window can
        cost, as the budget check and the ledger count it)."""
        at_max = self.usd_per_hour_at_max
        return None if at_max is None else at_max * (self.max_window_hours + self.stop_hours)

    @property
    def after_expiry_usd(self) -> float | None:
        """What one window at max size costs after its expiry: the grace (at least the AWS stop's lead) and the stop
        lag. The budget check counts it."""
        at_max = self.usd_per_hour_at_max
        return None if at_max is None else at_max * self.stop_hours

    @property
    def month_ceiling_usd(self) -> float | None:
        """The most a month of bursting can cost: the budget, unless 730 h at max size is less."""
        at_max = self.usd_per_hour_at_max
        return None if at_max is None else min(self.budget_usd, at_max * HOURS)

    def to_dict(self) -> dict[str, Any]:
        return {
            "site": self.site,
            "pools": [
                {
                    "pool": p.pool,
                    "instance_type": p.instance_type,
                    "max_nodes": p.max_nodes,
                    "usd_per_node_hour": p.usd_per_node_hour,
                    "usd_per_hour_at_max": rounded(p.usd_per_hour_at_max),
                }
                for p in self.pools
            ],
            "budget_usd_per_month": self.budget_usd,
            "max_window_hours": self.max_window_hours,
            "grace_hours": self.grace_hours,
            "stop_hours": self.stop_hours,
            "usd_per_hour_at_max": rounded(self.usd_per_hour_at_max),
            "budget_hours_at_max": rounded(self.budget_hours_at_max),
            "longest_window_usd": rounded(self.longest_window_usd),
            "after_expiry_usd_per_window": rounded(self.after_expiry_usd),
            "month_ceiling_usd": rounded(self.month_ceiling_usd),
            "window": None if self.window is None else self.window.to_dict(),
        }


def burst_ceiling(
    spec: EstateSpec,
    priced: dict[str, tuple[str, float | None]],
    window: BurstWindow | None = None,
    now: dt.datetime | None = None,
) -> BurstCeiling | None:
    """The ceiling of a hybrid estate's bursting (None without a burst policy or burst pools). `priced`: each
    pool's instance type and node-hour price as the envelope priced it (a window's type, when one is in effect)."""
    if spec.burst is None or not (pools := burst_pools(spec)):
        return None
    return BurstCeiling(
        site=spec.burst.cloud_site,
        pools=tuple(_pool(p.name, p.scaling.max, priced.get(p.name, (p.instance_type, None))) for p in pools),
        budget_usd=spec.burst.budget_usd,
        max_window_hours=spec.burst.max_window_hours,
        grace_hours=spec.burst.grace_minutes / 60,
        stop_hours=stop_tail(spec).total_seconds() / 3600,
        window=window_cost(spec, window, now) if window is not None and now is not None else None,
    )


def _pool(name: str, max_nodes: int, priced: tuple[str, float | None]) -> BurstPoolCeiling:
    instance_type, usd = priced
    return BurstPoolCeiling(pool=name, instance_type=instance_type, max_nodes=max_nodes, usd_per_node_hour=usd)
