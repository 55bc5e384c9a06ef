"""How much an estate's steady cloud pools save as bought against on demand, computed from the stack's own figures.

- A steady pool is an AWS pool that is not a burst pool and keeps nodes at its min: they run every hour.
- Its month as bought (spot, a Savings Plan, Reserved Instances) is set against the same nodes on demand.
- A pool bought on demand says so: a commitment is priced only from a rate the stack declares (a quote), since the
  catalog holds no Savings Plan rates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpufleet.review.cost.pools import PoolCost
from gpufleet.review.cost.prices import HOURS, rounded


@dataclass(frozen=True)
class PurchaseComparison:
    pool: str
    nodes: int  # the pool's min: nodes that run every hour
    basis: str  # how the pool is bought
    on_demand_month: float
    as_bought_month: float

    @property
    def saving(self) -> float:
        """The share of the on-demand month the purchase saves (0 for a pool on demand)."""
        return 1 - self.as_bought_month / self.on_demand_month if self.on_demand_month else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "pool": self.pool,
            "nodes": self.nodes,
            "basis": self.basis,
            "on_demand_monthly": rounded(self.on_demand_month),
            "as_bought_monthly": rounded(self.as_bought_month),
            "saving": rounded(self.saving),
        }


def steady_pools(pools: list[PoolCost]) -> list[PurchaseComparison]:
    """Each steady pool's month at its min nodes on demand and as bought (pools.PoolCost's own figures)."""
    out = []
    for p in pools:
        month = p.monthly("min")
        if p.burst or p.nodes["min"] == 0 or p.on_demand_usd_per_hour is None or month is None:
            continue
        on_demand = p.nodes["min"] * p.on_demand_usd_per_hour * HOURS
        out.append(PurchaseComparison(p.pool, p.nodes["min"], p.purchase, on_demand, month))
    return out


def comparison_line(c: PurchaseComparison) -> str:
    """One steady pool in words, for text and Markdown."""
    head = f"{c.pool}: {c.nodes} always-on node{'' if c.nodes == 1 else 's'}, ${c.on_demand_month:,.2f}/month on demand"
    if c.basis == "on demand":
        return f"{head}; bought on demand (set capacity.commitment with a quoted 1y or 3y rate to compare)"
    return f"{head}, ${c.as_bought_month:,.2f} as bought ({c.basis}): {c.saving:.1%} less"
