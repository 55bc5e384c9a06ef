"""The cost envelope of an estate: what its node pools and storage tiers cost per hour and per month.

- Every figure is a dated price times a quantity from the spec, and carries the price's date and source.
- Pools are priced in pools.py, storage in storage.py and bursting in burst.py. This module sums
  them.
- A pool or tier without a price is unpriced (`None`), never $0.
- A total names what it leaves out. With something left out it is a lower bound; with nothing priced it is
  unknown (`None`).
- A month is `model.pricing.HOURS_PER_MONTH` (730 h) of each hourly figure, but for the exceptions `monthly` names.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace
from typing import Any

from gpufleet.review.cost.bill import BillLine
from gpufleet.review.cost.burst import BurstCeiling, burst_ceiling
from gpufleet.review.cost.kinds import burst_root_usd_per_hour, site_costs, storage_cost
from gpufleet.review.cost.options import steady_pools
from gpufleet.review.cost.pools import PoolCost
from gpufleet.review.cost.prices import HOURS, LEVELS, Figures, PriceRef, price_dict, rounded
from gpufleet.review.cost.storage import StorageCost
from gpufleet.review.cost.usage import UsageProfile
from model import clock, kinds
from model.spec import BurstWindow, EstateSpec

UNASSIGNED = "(unassigned)"


@dataclass(frozen=True)
class Total:
    """A sum of priced figures, and what it leaves out by name: `unpriced` is everything without a figure (no
    price, or billed on usage with no usage figure); `no_price` the part of it that has no price at all.

    With anything left out the figures are a lower bound (renderers show "≥"); with nothing priced they are
    None (renderers show "unknown"), never $0.
    """

    hourly: Figures
    unpriced: tuple[str, ...] = ()
    no_price: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        return not self.unpriced

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.hourly.to_dict(),
            "complete": self.complete,
            "unpriced": list(self.unpriced),
            "no_price": list(self.no_price),
        }


@dataclass(frozen=True)
class TenantShare:
    tenant: str
    pool: str
    quota: int  # GPU units on the pool (0 for the unassigned remainder)
    share: float  # quota / pool GPU units
    hourly: Figures


@dataclass
class EstateCost:
    """The cost envelope of one estate at one moment (burst windows resolve against `now`)."""

    estate: str
    environment: str
    now: dt.datetime
    pools: list[PoolCost]
    storage: list[StorageCost]
    tenant_shares: list[TenantShare]
    budget_usd_per_hour: float | None
    excluded: tuple[str, ...]
    bill: list[BillLine] = field(default_factory=list)  # the rest of each AWS site's bill
    burst: BurstCeiling | None = None  # hybrid estates: what bursting can cost in an hour, a window, a month
    # $/h of the gp3 root volumes burst nodes add at their pools' max, beyond those the root-volume line counts
    burst_root_usd_per_hour: float = 0.0

    # -- totals ---------------------------------------------------------------------------------------
    def pool_total(self, pools: list[PoolCost]) -> Total:
        missing = [f"pool {p.pool}" for p in pools if not p.priced]
        return _sum([p.hourly for p in pools if p.priced], missing, missing)

    def storage_total(self, tiers: list[StorageCost]) -> Total:
        monthly = [t.monthly_usd for t in tiers if t.status == "priced" and t.monthly_usd is not None]
        missing = [f"tier {t.tier}" for t in tiers if t.status == "unpriced"]
        per_hour = sum(monthly) / HOURS
        return _sum([Figures(per_hour, per_hour, per_hour)] if monthly else [], missing, missing)

    def bill_total(self, lines: list[BillLine]) -> Total:
        """Lines with figures are summed; the others (no price, usage without a usage figure) are named."""
        return _sum(
            [ln.hourly for ln in lines if ln.hourly is not None],
            [
                f"{ln.item} ({ln.site}{', usage-based' if ln.status == 'usage-based' else ''})"
                for ln in lines
                if ln.hourly is None
            ],
            [f"{ln.item} ({ln.site})" for ln in lines if ln.hourly is None and ln.status == "unpriced"],
        )

    def site_total(self, site: str) -> Total:
        pools = self.pool_total([p for p in self.pools if p.site == site])
        store = self.storage_total([t for t in self.storage if t.site == site])
        return _add(_add(pools, store), self.bill_total([ln for ln in self.bill if ln.site == site]))

    def total(self) -> Total:
        """The whole envelope: pools, storage and the rest of the bill. Its max is the estate's one max $/h."""
        return _add(_add(self.pool_total(self.pools), self.storage_total(self.storage)), self.bill_total(self.bill))

    def monthly(self) -> dict[str, float | None]:
        """$ per month at min, desired and max: 730 h of every hourly figure, except that a pool on a capacity
        block counts the block's hours when they are fewer, and burst pools count their part of the month's burst
        ceiling at max (the budget caps the windows; 730 h of an open window cannot happen) and nothing at min
        and desired (they idle at zero). The pools carry those months (`with_burst_months`), so pools, sites and
        tenants add up to this."""
        total = self.total().hourly
        return {lv: total.monthly(lv) for lv in LEVELS}

    def budget_hour(self) -> float | None:
        """$ per hour at max size with every burst pool at its own max size, their nodes' root volumes included (a
        window opened at max; an idle burst pool is $0/h in the envelope), and spot nodes at the most they can
        bill (their maximum price, on demand: PoolCost.max_rate), not the snapshot's mean: the one figure the
        hourly budget judges in `cost`, comments and budget-cap."""
        at_max = self.total().hourly.at("max")
        if at_max is None:
            return None
        burst = {b.pool: b for b in self.burst.pools} if self.burst is not None else {}
        for p in self.pools:
            rate = p.max_rate
            if rate is None or p.price is None:
                continue
            if p.burst and p.pool in burst:
                at_max += burst[p.pool].max_nodes * rate - (p.hourly.at("max") or 0.0)
            elif not p.burst:
                at_max += p.nodes["max"] * (rate - p.price.usd)
        return at_max if self.burst is None else at_max + self.burst_root_usd_per_hour

    def pool_month_ceiling(self, p: PoolCost) -> float | None:
        """A pool's $ per month at max: 730 h, or for a burst pool its own month ceiling (min(budget, 730 h at
        its max nodes))."""
        if p.burst and self.burst is not None:
            own = next((b for b in self.burst.pools if b.pool == p.pool), None)
            at_max = own.usd_per_hour_at_max if own is not None else None
            return None if at_max is None else min(self.burst.budget_usd, at_max * HOURS)
        return p.monthly("max")

    def sites(self) -> list[str]:
        seen: dict[str, None] = {}
        for name in [p.site for p in self.pools] + [t.site for t in self.storage]:
            seen.setdefault(name)
        return list(seen)

    def tenants(self) -> dict[str, Total]:
        """Each tenant's quota share of the pools it has quota on, plus the unassigned remainder; a share of an
        unpriced pool is named, not counted as $0."""
        priced = {p.pool: p.priced for p in self.pools}
        out: dict[str, list[TenantShare]] = {}
        for s in self.tenant_shares:
            out.setdefault(s.tenant, []).append(s)
        totals: dict[str, Total] = {}
        for t, shares in out.items():
            missing = [f"pool {s.pool}" for s in shares if not priced.get(s.pool, True)]
            totals[t] = _sum([s.hourly for s in shares if priced.get(s.pool, True)], missing, missing)
        return totals

    def prices(self) -> list[PriceRef]:
        refs = [p.price for p in self.pools if p.price] + [t.price for t in self.storage if t.price]
        refs += [ln.price for ln in self.bill if ln.price]
        return list(dict.fromkeys(refs))

    def to_dict(self) -> dict[str, Any]:
        total = self.total()
        return {
            "estate": self.estate,
            "environment": self.environment,
            "at": self.now.isoformat(),
            "hours_per_month": HOURS,
            "pools": [p.to_dict() for p in self.pools],
            "storage": [t.to_dict() for t in self.storage],
            "bill": [ln.to_dict() for ln in self.bill],
            "sites": {s: self.site_total(s).to_dict() for s in self.sites()},
            "tenants": {t: f.to_dict() for t, f in self.tenants().items()},
            "tenant_shares": [
                {"tenant": s.tenant, "pool": s.pool, "quota": s.quota, "share": round(s.share, 6), **s.hourly.to_dict()}
                for s in self.tenant_shares
            ],
            "total": {**total.to_dict(), "monthly": {lv: rounded(v) for lv, v in self.monthly().items()}},
            "burst": None if self.burst is None else self.burst.to_dict(),
            "purchase_options": [c.to_dict() for c in steady_pools(self.pools)],
            "budget_usd_per_hour": self.budget_usd_per_hour,
            "budget_hour_usd": rounded(self.budget_hour()),
            "excluded": list(self.excluded),
            "prices": [price_dict(p) for p in self.prices()],
        }


# ----------------------------------------------------------------------------------------------- compute


def estate_cost(
    spec: EstateSpec,
    window: BurstWindow | None = None,
    now: dt.datetime | None = None,
    usage: UsageProfile | None = None,
) -> EstateCost:
    """The cost envelope of `spec`, with burst pools sized by `window` as it stands at `now`; usage-billed items
    are priced from `usage` where it gives a figure."""
    now = now or clock.now()
    usage = usage or UsageProfile()
    pools: list[PoolCost] = []
    bill: list[BillLine] = []
    for site in spec.sites:
        site_pools, site_bill = site_costs(spec, site, window, now, usage)
        pools += site_pools
        bill += site_bill
    storage = [storage_cost(site, tier, usage.site(site.name)) for site in spec.sites for tier in site.storage]
    priced = {p.pool: (p.instance_type or "", p.price.usd if p.price is not None else None) for p in pools}
    burst = burst_ceiling(spec, priced, window, now)
    pools = with_burst_months(pools, burst)
    return EstateCost(
        estate=spec.metadata.name,
        environment=spec.metadata.environment,
        now=now,
        pools=pools,
        storage=storage,
        tenant_shares=_tenant_shares(spec, pools),
        budget_usd_per_hour=spec.policies.budget_usd_per_hour,
        excluded=_excluded(spec),
        bill=bill,
        burst=burst,
        burst_root_usd_per_hour=_burst_root_volumes(spec, pools),
    )


def with_burst_months(pools: list[PoolCost], burst: BurstCeiling | None) -> list[PoolCost]:
    """Burst pools with their months: nothing at min and desired (idle at zero), and at max the month's burst
    ceiling, split over the burst pools by their $/h at max size (the budget is one, shared by every window).
    Unchanged when the ceiling is unpriced: then each burst pool's month is 730 h of its hourly figure."""
    ceiling = burst.month_ceiling_usd if burst is not None else None
    if burst is None or ceiling is None:
        return pools
    at_max = {b.pool: b.usd_per_hour_at_max or 0.0 for b in burst.pools}
    whole = sum(at_max.values())
    out = []
    for p in pools:
        if p.burst and p.pool in at_max:
            part = ceiling * at_max[p.pool] / whole if whole else 0.0
            p = replace(p, hourly=replace(p.hourly, month=(0.0, 0.0, part)))
        out.append(p)
    return out


def _burst_root_volumes(spec: EstateSpec, pools: list[PoolCost]) -> float:
    """$/h of the gp3 root volumes burst nodes add at their pools' max (the budget hour's nodes), site by site."""
    return sum(burst_root_usd_per_hour(site, [p for p in pools if p.site == site.name]) for site in spec.sites)


def _tenant_shares(spec: EstateSpec, pools: list[PoolCost]) -> list[TenantShare]:
    """A tenant's share of a pool = its gpu_quota on the pool ÷ the pool's GPU units; the rest is unassigned. A
    burst pool no tenant has quota on runs the work of the tenants that may burst (`burst: true`, model.dispatch),
    so its spend is theirs, in equal shares."""
    out: list[TenantShare] = []
    bursting = [t.name for t in spec.tenants if t.burst]
    for p in pools:
        if p.burst and bursting and not any(t.gpu_quota.get(p.pool) for t in spec.tenants):
            share = 1 / len(bursting)
            out += [TenantShare(t, p.pool, 0, share, p.hourly.scaled(share)) for t in bursting]
            continue
        assigned = 0.0
        if p.gpu_units > 0:
            for t in spec.tenants:
                quota = t.gpu_quota.get(p.pool, 0)
                if quota:
                    share = min(quota / p.gpu_units, 1.0 - assigned)
                    assigned += share
                    out.append(TenantShare(t.name, p.pool, quota, share, p.hourly.scaled(share)))
        rest = max(0.0, 1.0 - assigned)
        if rest > 1e-9:
            out.append(TenantShare(UNASSIGNED, p.pool, 0, rest, p.hourly.scaled(rest)))
    return out


def _excluded(spec: EstateSpec) -> tuple[str, ...]:
    """What the envelope leaves out, once per site kind (kinds in name order, so the text is stable)."""
    sites = sorted(spec.sites, key=lambda s: s.kind)
    return tuple(dict.fromkeys(line for site in sites for line in kinds.of(site).bill_excludes))


# ------------------------------------------------------------------------------------------------ helpers


def _sum(figures: list[Figures], unpriced: list[str], no_price: list[str]) -> Total:
    """The sum of `figures`; None at a level where nothing is priced (unknown, not $0): a part with no figures adds
    nothing to a total, so an estate whose only figures would be empty sums reads unknown."""
    vals: dict[str, float | None] = {}
    months: dict[str, float | None] = {}
    for lv in LEVELS:
        known = [f for f in figures if f.at(lv) is not None]
        some = bool(known) or bool(figures and not unpriced)
        vals[lv] = sum(f.at(lv) or 0.0 for f in known) if some else None
        months[lv] = sum(f.monthly(lv) or 0.0 for f in known) if some else None
    month = None if all(f.month is None for f in figures) else (months["min"], months["desired"], months["max"])
    return Total(Figures(vals["min"], vals["desired"], vals["max"], month=month), tuple(unpriced), tuple(no_price))


def _add(a: Total, b: Total) -> Total:
    def plus(x: float | None, y: float | None) -> float | None:
        return None if x is None and y is None else (x or 0.0) + (y or 0.0)

    hourly = [plus(a.hourly.at(lv), b.hourly.at(lv)) for lv in LEVELS]
    months = [plus(a.hourly.monthly(lv), b.hourly.monthly(lv)) for lv in LEVELS]
    month = None if a.hourly.month is None and b.hourly.month is None else (months[0], months[1], months[2])
    figures = Figures(hourly[0], hourly[1], hourly[2], month=month)
    return Total(figures, a.unpriced + b.unpriced, a.no_price + b.no_price)
