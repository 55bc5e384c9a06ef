"""The cost envelope of an estate: what its node pools and storage tiers cost per hour and per month.

Every figure is a dated catalog price times a quantity from the spec, and carries that price's date and source:
- AWS node pools: on-demand $/h of the instance type in the site's region (catalog) x nodes at min, desired and
  max size. A burst pool starts at zero nodes and may grow to the window's cap while a window is open or draining
  at `now` (else its max is zero too); its notes say what the window may cost at most.
- Bare-metal node pools: the amortised $/server-hour of `OnPremCost` (pool's, else the site's; through
  model.pricing) x the pool's servers; owned servers cost the same at every size.
- Storage: FSx for Lustre by provisioned capacity x $/GB-month of its throughput tier (catalog `storage`);
  EFS and S3 are billed on usage, so they are listed with their unit price and left out of the totals.

A pool or tier without a price is reported as unpriced (`None`), never as $0, and totals name what they leave
out: a total with something left out is a lower bound, one with nothing priced is unknown (`None`). An aws site's
own `prices` (a negotiated rate, with its date and source) come before the catalog's on-demand price. Monthly figures use `model.pricing.HOURS_PER_MONTH` (730 h).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, assert_never

from gpufleet.review.bill import BillLine, aws_site_bill
from gpufleet.review.burst_cost import BurstCeiling, burst_ceiling
from gpufleet.review.prices import HOURS, LEVELS, Figures, PriceRef, price_dict, rounded
from gpufleet.review.storage_cost import StorageCost, storage_cost
from gpufleet.review.usage import UsageProfile
from model import catalog, kinds
from model.burst import effective_scaling, window_note, window_phase
from model.capacity import gpu_units
from model.conventions import SiteKind
from model.pricing import pool_gpu_hour_price, site_price
from model.spec import (
    AwsNodePool,
    AwsSite,
    BaremetalNodePool,
    BaremetalSite,
    BurstWindow,
    EstateSpec,
    OnPremCost,
    Site,
)

UNASSIGNED = "(unassigned)"


@dataclass(frozen=True)
class PoolCost:
    site: str
    pool: str
    kind: SiteKind
    instance_type: str | None  # aws only
    gpu_model: str
    gpus_per_node: int
    nodes: dict[str, int]  # min / desired / max
    gpu_units: int  # schedulable units at max size (MIG slices, replicas) used for tenant shares
    gpu_total: int  # GPUs at max size
    burst: bool
    price: PriceRef | None  # per node-hour (aws) or per server-hour (bare metal); None = unpriced
    hourly: Figures
    notes: tuple[str, ...] = ()
    month_hours: float = HOURS  # hours of a month the pool is billed: a capacity block's, when it is shorter
    # One GPU-hour: a node's price ÷ its GPUs (cloud); the pool's hour ÷ its GPUs (owned servers). None: unpriced.
    usd_per_gpu_hour: float | None = None

    def monthly(self, level: str) -> float | None:
        """$ for a month at `level`: the hourly figure over the hours the pool is billed in a month."""
        v = self.hourly.at(level)
        return None if v is None else v * self.month_hours

    @property
    def priced(self) -> bool:
        return self.price is not None

    def gpus(self, level: str) -> int:
        return self.nodes[level] * self.gpus_per_node

    def to_dict(self) -> dict[str, Any]:
        return {
            "site": self.site,
            "pool": self.pool,
            "kind": self.kind,
            "instance_type": self.instance_type,
            "gpu_model": self.gpu_model,
            "gpus_per_node": self.gpus_per_node,
            "nodes": dict(self.nodes),
            "gpus": {lv: self.gpus(lv) for lv in LEVELS},
            "gpu_units": self.gpu_units,
            "usd_per_gpu_hour": rounded(self.usd_per_gpu_hour),
            "burst": self.burst,
            "priced": self.priced,
            "price": price_dict(self.price),
            **self.hourly.to_dict(),
            "monthly": {lv: rounded(self.monthly(lv)) for lv in LEVELS},
            "month_hours": self.month_hours,
            "notes": list(self.notes),
        }


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
        block counts the block's hours when they are fewer, and burst pools count at most the month's burst
        ceiling at max (the budget caps the windows; 730 h of an open window cannot happen) and nothing at min
        and desired (they idle at zero)."""
        total = self.total().hourly
        burst_pools = [p for p in self.pools if p.burst]
        ceiling = self.burst.month_ceiling_usd if self.burst is not None else None
        out: dict[str, float | None] = {}
        for lv in LEVELS:
            hourly = total.at(lv)
            if hourly is None:
                out[lv] = None
                continue
            month = hourly * HOURS - sum((p.hourly.at(lv) or 0.0) * (HOURS - p.month_hours) for p in self.pools)
            if ceiling is not None:
                month -= sum((p.hourly.at(lv) or 0.0) * p.month_hours for p in burst_pools)
                month += ceiling if lv == "max" else 0.0
            out[lv] = month
        return out

    def budget_hour(self) -> float | None:
        """$ per hour at max size with every burst pool at its own max size (a window opened at max; an idle burst
        pool is $0/h in the envelope): the one figure the hourly budget judges in `cost`, comments and budget-cap."""
        at_max = self.total().hourly.at("max")
        if at_max is None or self.burst is None:
            return at_max
        ceilings = {b.pool: b.usd_per_hour_at_max for b in self.burst.pools}
        for p in self.pools:
            if p.burst and p.priced:
                at_max += (ceilings.get(p.pool) or 0.0) - (p.hourly.at("max") or 0.0)
        return at_max

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
    now = now or dt.datetime.now(dt.UTC)
    usage = usage or UsageProfile()
    pools: list[PoolCost] = []
    bill: list[BillLine] = []
    for site in spec.sites:
        site_pools, site_bill = _site_costs(spec, site, window, now, usage)
        pools += site_pools
        bill += site_bill
    storage = [storage_cost(site, tier, usage.site(site.name)) for site in spec.sites for tier in site.storage]
    priced = {p.pool: (p.instance_type or "", p.price.usd if p.price is not None else None) for p in pools}
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
        burst=burst_ceiling(spec, priced, window, now),
    )


def _site_costs(
    spec: EstateSpec, site: Site, window: BurstWindow | None, now: dt.datetime, usage: UsageProfile
) -> tuple[list[PoolCost], list[BillLine]]:
    """The site's node pools, and the rest of its bill (what it runs besides pools and tiers)."""
    match site:
        case AwsSite():
            pools = [_aws_pool(spec, site, pool, window, now) for pool in site.node_pools]
            return pools, aws_site_bill(site, {p.pool: p.nodes for p in pools}, usage.site(site.name))
        case BaremetalSite():
            return [_baremetal_pool(spec, site, pool) for pool in site.node_pools], []  # owned: no other bill
        case _:
            assert_never(site)


def _aws_pool(
    spec: EstateSpec, site: AwsSite, pool: AwsNodePool, window: BurstWindow | None, now: dt.datetime
) -> PoolCost:
    scaling = effective_scaling(spec, pool, window, now)
    instance = catalog.instance_type(pool.instance_type)
    notes: list[str] = []
    phase = window_phase(spec, window, now)
    w = window if window is not None and window.pool == pool.name and phase != "idle" else None
    if pool.burst:
        if w is not None:
            notes.append(window_note(spec, w, now))
            if w.instance_type != pool.instance_type:
                instance = catalog.instance_type(w.instance_type)
        else:
            notes.append("burst pool: idles at zero nodes outside a burst window")
    found = site_price(site, instance.name)
    if pool.burst and w is None and found is not None:
        ceiling = pool.scaling.max * found.usd_per_hour
        budget = f", within the burst budget of ${spec.burst.budget_usd:,.0f}/month" if spec.burst else ""
        notes.append(f"a window may grow it to {pool.scaling.max} × {instance.name} = ${ceiling:,.2f}/h{budget}")
    nodes = {"min": scaling.min, "desired": scaling.desired_nodes, "max": scaling.max}
    month_hours: float = HOURS
    price = None
    if pool.capacity.type == "capacity-block":
        price, hourly, month_hours, block_notes = _capacity_block(site, pool, instance.name, nodes["max"], now)
        notes += block_notes
    else:
        if pool.capacity.type != "on-demand" and site.price_override(instance.name) is None:
            notes.append(
                f"{pool.capacity.type} capacity priced at the on-demand rate (the catalog holds no other rate)"
            )
        if found is not None:
            price = PriceRef(found.usd_per_hour, "node-hour", found.date, f"{found.source}; {found.region}")
            if site.price_override(instance.name) is not None:
                notes.append(f"priced by the stack (sites.{site.name}.prices), not the catalog's on-demand rate")
        else:
            notes.append(f"no catalog price for {instance.name} in {site.region}: unpriced")
        hourly = Figures(*(None if price is None else nodes[lv] * price.usd for lv in LEVELS))
        if not pool.burst and price is not None and nodes["min"] != nodes["max"]:
            notes.append(_autoscaled_note(nodes, price.usd))
    return PoolCost(
        site=site.name,
        pool=pool.name,
        kind="aws",
        instance_type=instance.name,
        gpu_model=instance.gpu.id,
        gpus_per_node=instance.gpu_count,
        nodes=nodes,
        gpu_units=_units(spec, pool.name, scaling.max * instance.gpu_count),
        gpu_total=scaling.max * instance.gpu_count,
        burst=pool.burst,
        price=price,
        hourly=hourly,
        notes=tuple(notes),
        month_hours=month_hours,
        usd_per_gpu_hour=None if price is None else price.usd / instance.gpu_count,
    )


def _capacity_block(
    site: AwsSite, pool: AwsNodePool, instance_type: str, instances: int, now: dt.datetime
) -> tuple[PriceRef | None, Figures, float, list[str]]:
    """A pool on an EC2 Capacity Block: (price, $/h, hours billed in a month, notes).

    AWS charges the block up front for every hour of it, whether or not nodes run, so the pool costs its
    instances (the pool's max) at the block's rate at every size, for the block's hours: a month counts at most
    those. The rate is the catalog's capacity-block rate, never the on-demand one; without it, or without the
    block's length, the pool is unpriced. After the block ends the pool has no capacity and costs nothing more.
    """
    block, cr = pool.capacity.block, pool.capacity.reservation_id
    unpriced = Figures(None, None, None)
    if block is None:
        why = f"capacity block {cr}: its length is not stated (capacity.block.days), so it is unpriced"
        return None, unpriced, HOURS, [f"{why}; a block is paid up front for its hours, not monthly at on-demand"]
    found = catalog.capacity_block_price(instance_type, site.region)
    if found is None:
        return None, unpriced, HOURS, [
            f"no catalog capacity-block rate for {instance_type} in {site.region}: unpriced (what AWS charges is "
            "the block offering's upfrontFee)"
        ]  # fmt: skip
    price = PriceRef(found.usd, found.unit, found.date, f"{found.source}; {found.region}", found.verified)
    total = instances * block.hours * price.usd
    notes = [
        f"capacity block {cr}: {instances} × {instance_type} for {block.days} days ({block.hours} h) at the block "
        f"rate ${price.usd:,.3f}/h = ${total:,.2f} paid up front, whether or not nodes run; a month counts "
        f"{min(block.hours, HOURS)} h of it"
    ]
    end = block.end()
    if block.start is not None and end is not None:
        notes.append(f"the block runs {block.start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC")
        if now >= end:
            notes.append("the block has ended: the pool has no capacity and costs nothing more")
            return price, Figures(0.0, 0.0, 0.0), HOURS, notes
    return price, Figures(*(instances * price.usd for _ in LEVELS)), min(block.hours, HOURS), notes


def _autoscaled_note(nodes: dict[str, int], usd: float) -> str:
    """An autoscaled pool's month: expected at its desired size, its ceiling only if every node runs all month."""
    return (
        f"autoscaled {nodes['min']}-{nodes['max']} nodes: a month costs about ${nodes['desired'] * usd * HOURS:,.0f} "
        f"at desired size ({nodes['desired']} node{'' if nodes['desired'] == 1 else 's'}) and at most ${nodes['max'] * usd * HOURS:,.0f} if all "
        f"{nodes['max']} run {HOURS} h (the ceiling)"
    )


def _baremetal_pool(spec: EstateSpec, site: BaremetalSite, pool: BaremetalNodePool) -> PoolCost:
    # The amortised price comes from model.pricing (OnPremCost per server-hour: the pool's, else
    # the site's); servers of a pool may differ in GPU count, so the pool is priced by servers.
    servers = spec.pool_servers(site, pool)
    found = pool_gpu_hour_price(spec, site, pool)
    notes = ["owned servers cost the same at every size (amortised)"]
    price = None
    if found is not None:
        where = (
            f"sites.{site.name}.node_pools.{pool.name}.cost" if found.source == "pool" else f"sites.{site.name}.cost"
        )
        where += _origins(site.name, found.origins)
        price = PriceRef(
            found.usd_per_server_hour, "server-hour", "stack file", f"{where}: {_amortisation(found.inputs)}"
        )
    else:
        notes.append(f"no OnPremCost on pool {pool.name} or site {site.name}: unpriced")
    n, gpus = len(servers), sum(s.gpu_count for s in servers)
    hourly = Figures(*(None if found is None else found.usd_per_hour for _ in LEVELS))
    return PoolCost(
        site=site.name,
        pool=pool.name,
        kind="baremetal",
        instance_type=None,
        gpu_model=spec.pool_gpu_model(pool.name).id,
        gpus_per_node=spec.pool_gpus_per_node(pool.name),
        nodes={"min": n, "desired": n, "max": n},
        gpu_units=_units(spec, pool.name, gpus),
        gpu_total=gpus,
        burst=False,
        price=price,
        hourly=hourly,
        notes=tuple(notes),
        usd_per_gpu_hour=None if price is None or not gpus else (hourly.at("max") or 0.0) / gpus,
    )


def _origins(site: str, origins: dict[str, str]) -> str:
    """Which inputs a pool took from its site and which are OnPremCost defaults (no stack file sets them)."""
    inherited = [k for k, o in origins.items() if o == "site"]
    defaulted = [f"{k}={OnPremCost.model_fields[k].default:g}" for k, o in origins.items() if o == "default"]
    out = ""
    if inherited and any(o == "pool" for o in origins.values()):
        out += f" (from sites.{site}.cost: {', '.join(inherited)})"
    if defaulted:
        out += f" (defaults, set nowhere: {', '.join(defaulted)})"
    return out


def _amortisation(c: OnPremCost) -> str:
    return (
        f"${c.server_price_usd:,.0f} over {c.lifetime_years:g} y + {c.power_kw:g} kW × ${c.usd_per_kwh:g}/kWh "
        f"+ ${c.ops_usd_per_server_month:,.0f}/month ops"
    )


def _units(spec: EstateSpec, pool: str, gpus: int) -> int:
    """Schedulable GPU units for `gpus` GPUs of `pool` (MIG slices and time-slicing replicas count apiece)."""
    return gpu_units(gpus, spec.pool(pool).sharing, spec.pool_gpu_model(pool))


def _tenant_shares(spec: EstateSpec, pools: list[PoolCost]) -> list[TenantShare]:
    """A tenant's share of a pool = its gpu_quota on the pool ÷ the pool's GPU units; the rest is unassigned."""
    out: list[TenantShare] = []
    for p in pools:
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
    for lv in LEVELS:
        known = [v for f in figures if (v := f.at(lv)) is not None]
        vals[lv] = sum(known) if known or (figures and not unpriced) else None
    return Total(Figures(vals["min"], vals["desired"], vals["max"]), tuple(unpriced), tuple(no_price))


def _add(a: Total, b: Total) -> Total:
    def plus(x: float | None, y: float | None) -> float | None:
        return None if x is None and y is None else (x or 0.0) + (y or 0.0)

    return Total(
        Figures(*(plus(a.hourly.at(lv), b.hourly.at(lv)) for lv in LEVELS)),
        a.unpriced + b.unpriced,
        a.no_price + b.no_price,
    )
