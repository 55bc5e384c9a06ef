"""Amortised price of on-prem GPUs, so bare-metal pools are priced next to cloud pools.

Pure functions of the spec: a pool's price per GPU-hour is what its servers cost per hour (OnPremCost:
depreciation + power + operations per server-hour; the pool's own `cost`, else its site's) divided by the GPUs
they hold. Servers of one pool may differ in GPU count, so the division is over the pool's total GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.model.spec import BaremetalNodePool, BaremetalSite, EstateSpec, OnPremCost


@dataclass(frozen=True)
class PoolGpuHourPrice:
    pool: str
    servers: int
    gpus: int
    usd_per_server_hour: float
    source: str  # "pool" or "site": where the OnPremCost came from

    @property
    def usd_per_hour(self) -> float:
        """The whole pool, every server running."""
        return self.servers * self.usd_per_server_hour

    @property
    def usd_per_gpu_hour(self) -> float:
        return self.usd_per_hour / self.gpus


def pool_cost_inputs(site: BaremetalSite, pool: BaremetalNodePool) -> tuple[OnPremCost, str] | None:
    if pool.cost is not None:
        return pool.cost, "pool"
    if site.cost is not None:
        return site.cost, "site"
    return None


def pool_gpu_hour_price(spec: EstateSpec, site: BaremetalSite, pool: BaremetalNodePool) -> PoolGpuHourPrice | None:
    """Amortised price of one GPU-hour on `pool`; None when neither the pool nor its site has cost inputs."""
    inputs = pool_cost_inputs(site, pool)
    if inputs is None:
        return None
    cost, source = inputs
    servers = spec.pool_servers(site, pool)
    return PoolGpuHourPrice(
        pool=pool.name,
        servers=len(servers),
        gpus=sum(s.gpu_count for s in servers),
        usd_per_server_hour=cost.usd_per_server_hour,
        source=source,
    )


def estate_gpu_hour_prices(spec: EstateSpec) -> dict[str, PoolGpuHourPrice]:
    """Every priced bare-metal pool of the estate, by pool name."""
    prices = {}
    for site in spec.sites:
        if isinstance(site, BaremetalSite):
            for pool in site.node_pools:
                price = pool_gpu_hour_price(spec, site, pool)
                if price is not None:
                    prices[pool.name] = price
    return prices
