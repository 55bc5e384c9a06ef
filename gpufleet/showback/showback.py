"""Showback: per tenant, the GPU-hours a window allocated and used, priced at the estate's own GPU-hour prices,
beside what the plan books to the tenant.

- Allocated and used come from gpufleet's recording rules per namespace and pool (model.observability.rules).
  Each recorded sample stands for one evaluation interval.
- Allocated counts the units pods request. On a MIG or time-sliced pool a unit is part of a GPU, so units
  become GPUs by the pool's GPUs per unit. Used sums each GPU's utilisation fraction (DCGM); on those pools
  it is not measured (None; a note says why).
- Idle is allocated less used, never below zero. Both are priced at the pool's GPU-hour
  (gpufleet.review.cost.pools).
- Planned is the tenant's share of the pools at desired size (EstateCost.tenants) over the window.
- A namespace that is no tenant, or a pool the stack lacks, is shown by name; unpriced is never $0.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from gpufleet.review.cost.envelope import UNASSIGNED, EstateCost
from gpufleet.review.cost.pools import PoolCost
from gpufleet.review.cost.prices import price_dict, rounded
from gpufleet.showback.prometheus import Sample
from model.observability import rules

# Why use is not measured on a shared pool, by sharing mode (spec Sharing.mode).
SHARED_CAUSE = {
    "mig": (
        "its GPUs are MIG slices, and DCGM_FI_DEV_GPU_UTIL, which the used rule reads, is not reported for MIG "
        "devices (NVIDIA/dcgm-exporter #216, #430)"
    ),
    "time-slicing": (
        "its GPUs are time-sliced, and DCGM reports utilisation per GPU, not per pod sharing it, so no tenant's "
        "share of it is known"
    ),
}
SAMPLE_HOURS = rules.ALLOCATION_INTERVAL_MINUTES / 60  # GPU-hours one recorded sample of one GPU stands for
LEVEL = "desired"  # the size the plan's share is taken at
NO_POOL = "(no pool label)"
# Prometheus durations (https://prometheus.io/docs/prometheus/latest/querying/basics/#time-durations), one unit.
DURATION = re.compile(r"^([1-9][0-9]{0,5})([mhdw])$")
UNIT_HOURS = {"m": 1 / 60, "h": 1.0, "d": 24.0, "w": 168.0}


def window_hours(window: str) -> float:
    """The hours of a window such as `7d`; ValueError naming what is allowed."""
    m = DURATION.match(window)
    if m is None:
        raise ValueError(f"{window!r} is not a duration like 90m, 12h, 7d or 2w")
    return int(m.group(1)) * UNIT_HOURS[m.group(2)]


def retained(window: str, retention_days: dict[str, int]) -> tuple[str, str | None]:
    """The window to ask for, and the one line saying so when `window` reaches past the shortest retention of the
    sites' Prometheus (`retention_days` per site that installs one): then the answer covers only those days."""
    if not retention_days or window_hours(window) <= (kept := min(retention_days.values())) * 24:
        return window, None
    sites = ", ".join(s for s, days in retention_days.items() if days == kept)
    return f"{kept}d", (
        f"--window {window} is longer than the {kept} days the Prometheus of site {sites} keeps "
        f"(sites[].kubernetes.monitoring.retention_days): showing the last {kept}d only"
    )


def queries(window: str) -> dict[str, str]:
    """The two instant queries: per namespace and pool, the window's sum of recorded samples."""
    return {
        kind: f"sum by (namespace, pool) (sum_over_time({record}[{window}]))"
        for kind, record in (("allocated", rules.ALLOCATED_BY_POOL), ("used", rules.USED_BY_POOL))
    }


@dataclass(frozen=True)
class PoolUse:
    """One namespace on one pool over the window, in GPU-hours."""

    namespace: str
    pool: str
    site: str | None  # None: a pool the stack does not have
    usd_per_gpu_hour: float | None
    allocated: float
    used: float | None  # None on MIG and time-sliced pools: not measured (SHARED_CAUSE)

    @property
    def measured(self) -> bool:
        return self.used is not None

    @property
    def idle(self) -> float:
        """Allocated less used; 0 where use is not measured (left out, and its dollars are None)."""
        return 0.0 if self.used is None else max(0.0, self.allocated - self.used)

    def _usd(self, gpu_hours: float) -> float | None:
        return None if self.usd_per_gpu_hour is None else gpu_hours * self.usd_per_gpu_hour

    @property
    def allocated_usd(self) -> float | None:
        return self._usd(self.allocated)

    @property
    def idle_usd(self) -> float | None:
        return self._usd(self.idle) if self.measured else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "pool": self.pool,
            "site": self.site,
            "usd_per_gpu_hour": rounded(self.usd_per_gpu_hour),
            "allocated_gpu_hours": rounded(self.allocated),
            "used_gpu_hours": rounded(self.used),
            "idle_gpu_hours": rounded(self.idle),
            "allocated_usd": rounded(self.allocated_usd),
            "idle_usd": rounded(self.idle_usd),
            "use_measured": self.measured,
        }


def _sum_measured(figures: Iterable[float | None]) -> float | None:
    """The sum of the known figures; None when there are some and none is known."""
    values = list(figures)
    known = [v for v in values if v is not None]
    return sum(known) if known or not values else None


@dataclass(frozen=True)
class Money:
    """A sum of dollar figures and whether it leaves something out (None: nothing in it is priced)."""

    usd: float | None
    complete: bool

    @staticmethod
    def of(figures: Iterable[float | None]) -> Money:
        values = list(figures)
        known = [v for v in values if v is not None]
        return Money(sum(known) if known or not values else None, len(known) == len(values))

    def to_dict(self) -> dict[str, Any]:
        return {"usd": rounded(self.usd), "complete": self.complete}


@dataclass
class TenantShowback:
    tenant: str  # the namespace: a tenant's is its name
    is_tenant: bool
    planned: Money | None  # None: nothing planned (a namespace that is no tenant)
    pools: list[PoolUse] = field(default_factory=list)

    @property
    def allocated(self) -> float:
        return sum(p.allocated for p in self.pools)

    @property
    def used(self) -> float | None:
        """The measured pools' use; None when no pool of the tenant's is measured."""
        return _sum_measured(p.used for p in self.pools)

    @property
    def idle(self) -> float:
        return sum(p.idle for p in self.pools)

    @property
    def allocated_usd(self) -> Money:
        return Money.of(p.allocated_usd for p in self.pools)

    @property
    def idle_usd(self) -> Money:
        return Money.of(p.idle_usd for p in self.pools)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tenant": self.tenant,
            "is_tenant": self.is_tenant,
            "planned": None if self.planned is None else self.planned.to_dict(),
            "allocated_gpu_hours": rounded(self.allocated),
            "used_gpu_hours": rounded(self.used),
            "idle_gpu_hours": rounded(self.idle),
            "allocated": self.allocated_usd.to_dict(),
            "idle": self.idle_usd.to_dict(),
            "pools": [p.to_dict() for p in self.pools],
        }


@dataclass
class Showback:
    estate: str
    environment: str
    start: dt.datetime
    end: dt.datetime
    window: str  # the Prometheus duration queried, e.g. 7d
    sources: list[str]
    tenants: list[TenantShowback]
    envelope: EstateCost
    notes: list[str] = field(default_factory=list)
    asked_window: str | None = None  # the --window asked, where it reached past what Prometheus keeps

    @property
    def hours(self) -> float:
        return window_hours(self.window)

    @property
    def planned(self) -> Money:
        return Money.of(t.planned.usd for t in self.tenants if t.planned is not None)

    @property
    def allocated_usd(self) -> Money:
        return Money.of(p.allocated_usd for t in self.tenants for p in t.pools)

    @property
    def idle_usd(self) -> Money:
        return Money.of(p.idle_usd for t in self.tenants for p in t.pools)

    def gpu_hours(self, kind: str) -> float | None:
        """The tenants' sum of `kind`; for used, of what is measured (None: nothing is)."""
        return _sum_measured(getattr(p, kind) for t in self.tenants for p in t.pools)

    def to_dict(self) -> dict[str, Any]:
        pools = {p.pool for t in self.tenants for p in t.pools}
        return {
            "estate": self.estate,
            "environment": self.environment,
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "hours": self.hours,
            "planned_at": LEVEL,
            "prometheus": list(self.sources),
            "window": self.window,
            "asked_window": self.asked_window or self.window,
            "queries": queries(self.window),
            "tenants": [t.to_dict() for t in self.tenants],
            "total": {
                "planned": self.planned.to_dict(),
                "allocated_gpu_hours": rounded(self.gpu_hours("allocated")),
                "used_gpu_hours": rounded(self.gpu_hours("used")),
                "idle_gpu_hours": rounded(self.gpu_hours("idle")),
                "allocated": self.allocated_usd.to_dict(),
                "idle": self.idle_usd.to_dict(),
            },
            "notes": list(self.notes),
            "prices": [price_dict(p.price) for p in self.envelope.pools if p.price and p.pool in pools],
        }


# ----------------------------------------------------------------------------------------------- compute


def _gpus_per_unit(pool: PoolCost) -> float:
    """GPUs per schedulable unit (1 for whole GPUs; a MIG slice or a time-slicing replica is a part)."""
    return pool.gpu_total / pool.gpu_units if pool.gpu_units else 1.0


def _per_key(samples: Iterable[Sample]) -> dict[tuple[str, str], float]:
    out: dict[tuple[str, str], float] = {}
    for s in samples:
        key = (s.labels.get("namespace", ""), s.labels.get("pool", "") or NO_POOL)
        out[key] = out.get(key, 0.0) + s.value
    return out


def showback(
    envelope: EstateCost,
    tenants: list[str],
    allocated: Iterable[Sample],
    used: Iterable[Sample],
    end: dt.datetime,
    window: str,
    sources: list[str],
) -> Showback:
    """Per tenant, the GPU-hours of the `window` up to `end` (`allocated` and `used`: the answers to `queries`)
    priced from `envelope`'s pools, beside each tenant's planned share over the window."""
    hours = window_hours(window)
    pools = {p.pool: p for p in envelope.pools}
    units, gpu = _per_key(allocated), _per_key(used)
    rows: dict[str, list[PoolUse]] = {}
    notes: list[str] = []
    for ns, pool in sorted(set(units) | set(gpu)):
        cost = pools.get(pool)
        if cost is None:
            notes.append(f"pool {pool!r} (namespace {ns}) is not a pool of the stack: its GPU-hours are unpriced")
        ratio = _gpus_per_unit(cost) if cost is not None else 1.0
        cause = None if cost is None else SHARED_CAUSE.get(cost.sharing)
        if cause is not None and not any(n.startswith(f"pool {pool}:") for n in notes):
            notes.append(f"pool {pool}: {cause}: its used GPU-hours are not measured, and its idle is left out")
        use = PoolUse(
            namespace=ns,
            pool=pool,
            site=None if cost is None else cost.site,
            usd_per_gpu_hour=None if cost is None else cost.usd_per_gpu_hour,
            allocated=units.get((ns, pool), 0.0) * SAMPLE_HOURS * ratio,
            used=None if cause is not None else gpu.get((ns, pool), 0.0) * SAMPLE_HOURS,
        )
        rows.setdefault(ns, []).append(use)
    sampled = {pools[pool].site for _, pool in set(units) | set(gpu) if pool in pools}
    for site in sorted({p.site for p in envelope.pools} - sampled):
        notes.append(
            f"site {site}: no GPU-hours in the answers, so it shows none: its pools ran no GPU pod in the window, or "
            "its Prometheus was not asked (one --prometheus per site)"
        )
    planned = envelope.tenants()
    out: list[TenantShowback] = []
    for name in [*tenants, *([UNASSIGNED] if UNASSIGNED in planned else [])]:
        total = planned.get(name)
        at = None if total is None else total.hourly.at(LEVEL)
        money = Money(None if at is None else at * hours, total is None or total.complete)
        out.append(TenantShowback(name, name != UNASSIGNED, money, rows.pop(name, [])))
    out += [TenantShowback(ns, False, None, uses) for ns, uses in sorted(rows.items())]
    return Showback(
        estate=envelope.estate,
        environment=envelope.environment,
        start=end - dt.timedelta(hours=hours),
        end=end,
        window=window,
        sources=sources,
        tenants=out,
        envelope=envelope,
        notes=notes,
    )
