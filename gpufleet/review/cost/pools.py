"""What one node pool costs: an AWS pool at its instance's price (on demand, the stack's own, or a capacity
block's) and a bare-metal pool at its amortised server-hour, at min, desired and max size, each figure with the
price's date and source. gpufleet.review.cost.envelope sums them into the estate's envelope.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from gpufleet.review.cost.pool_prices import aws_pool_price
from gpufleet.review.cost.prices import HOURS, LEVELS, Figures, PriceRef, price_dict, rounded
from model import catalog
from model.burst import effective_scaling, window_phase
from model.burst_spend import window_note
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
)


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
    on_demand_usd_per_hour: float | None = None  # an AWS node's on-demand rate, to set a purchase against
    purchase: str = "on demand"  # how the nodes are bought (model.pricing.PoolRate.basis)
    max_usd_per_hour: float | None = None  # the most a node-hour can bill (spot: on demand); None: `price.usd`
    sharing: str = "whole"  # the pool's GPU sharing mode (spec Sharing.mode): whole, mig or time-slicing

    @property
    def max_rate(self) -> float | None:
        """The most one node-hour can bill: a spot node up to its maximum price (on demand), else its price."""
        if self.price is None:
            return None
        return self.max_usd_per_hour if self.max_usd_per_hour is not None else self.price.usd

    def monthly(self, level: str) -> float | None:
        """$ for a month at `level`: the hourly figure over the hours the pool is billed in a month."""
        return self.hourly.monthly(level)

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


def aws_pool(
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
    priced = aws_pool_price(site, pool, instance.name, nodes, found, now)
    return PoolCost(
        site=site.name,
        pool=pool.name,
        kind="aws",
        instance_type=instance.name,
        gpu_model=instance.gpu.id,
        gpus_per_node=instance.gpu_count,
        nodes=nodes,
        gpu_units=_units(spec, pool.name, scaling.max * instance.gpu_count),
        sharing=spec.pool(pool.name).sharing.mode,
        gpu_total=scaling.max * instance.gpu_count,
        burst=pool.burst,
        price=priced.price,
        hourly=priced.hourly.billed_for(priced.month_hours),
        notes=(*notes, *priced.notes),
        month_hours=priced.month_hours,
        usd_per_gpu_hour=None if priced.price is None else priced.price.usd / instance.gpu_count,
        on_demand_usd_per_hour=priced.on_demand,
        purchase=priced.basis,
        max_usd_per_hour=priced.max_rate,
    )


def baremetal_pool(spec: EstateSpec, site: BaremetalSite, pool: BaremetalNodePool) -> PoolCost:
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
        sharing=spec.pool(pool.name).sharing.mode,
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
