"""Where a workload class can run and what it costs there: catalog instance types and a stack's pools.

A placement is priced per GPU-hour: on demand from the catalog (the stack's region, else us-east-1) or, on prem,
at the amortised price of the pool's servers (model.pricing, the price `gpufleet cost` uses). The
cheapest placement a class fits on (memory, one node for inference, a fabric across nodes) and meets its deadline
on wins.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal, assert_never

from gpufleet.sizing.arithmetic import GpuFit, MemoryNeed, billed_gpus, ceil, memory_fit, memory_need, q
from gpufleet.sizing.interconnect import Ring, instance_network_gbit_per_s, judge, ring
from gpufleet.sizing.workloads import WorkloadClass
from model import catalog
from model.pricing import pool_gpu_hour_price, site_price
from model.spec import AwsNodePool, AwsSite, BaremetalNodePool, BaremetalSite, EstateSpec, Role

DEFAULT_REGION = "us-east-1"


@dataclass(frozen=True)
class Placement:
    """Somewhere runs can go: a catalog instance type, or a node pool of a stack."""

    name: str
    gpu: catalog.GpuModel
    gpus_per_node: int
    multi_node: bool  # runs may span nodes (EFA on AWS, a fabric on bare metal)
    usd_per_gpu_hour: Fraction | None
    price_basis: str
    instance_type: str | None = None
    pool: str | None = None
    site: str | None = None
    role: Role | None = None
    capacity_gpus: int | None = None  # stack pools: GPUs at max size
    floor_gpus: int | None = None  # stack pools: GPUs kept at the pool's min size (all of them on bare metal)
    network_gbit_per_s: Fraction | None = None  # one node's network (EFA / InfiniBand / RoCE), when fixed and known


def _aws_price(instance: str, region: str, site: AwsSite | None = None) -> tuple[Fraction | None, str]:
    """Per GPU-hour: a stack pool at its site's price (the stack's own `prices` first), a candidate at the catalog's."""
    p = site_price(site, instance) if site is not None else catalog.price(instance, region)
    if p is None:
        return None, f"unpriced: no on-demand price for {region} in the catalog"
    per_gpu = q(p.usd_per_hour) / catalog.instance_type(instance).gpu_count
    basis = p.source if p.source.startswith("stack:") else f"catalog on-demand {region}"
    return per_gpu, f"{basis}, {p.date}"


def _onprem_price(spec: EstateSpec, site: BaremetalSite, pool: BaremetalNodePool) -> tuple[Fraction | None, str]:
    """The amortised price of one GPU-hour of the pool's servers (the figure `gpufleet cost` prices the pool at)."""
    price = pool_gpu_hour_price(spec, site, pool)
    if price is None or price.gpus == 0:
        return None, "unpriced: no on-prem cost in the stack"
    return q(price.usd_per_gpu_hour), "on-prem amortised server-hour (stack cost)"


def catalog_placements(region: str) -> list[Placement]:
    """Every catalog instance type, priced on demand in `region`."""
    out = []
    for it in catalog.instance_types().values():
        price, basis = _aws_price(it.name, region)
        out.append(
            Placement(
                name=it.name,
                gpu=it.gpu,
                gpus_per_node=it.gpu_count,
                multi_node=it.efa_supported,
                usd_per_gpu_hour=price,
                price_basis=basis,
                instance_type=it.name,
                network_gbit_per_s=instance_network_gbit_per_s(it.name),
            )
        )
    return out


def _skipped(pool: AwsNodePool | BaremetalNodePool, burst: bool) -> str | None:
    """Why a pool is not compared, or None."""
    if pool.sharing.mode != "whole":
        return f"shares GPUs ({pool.sharing.mode}); this sizing counts whole GPUs"
    if pool.dedicated_to is not None:
        return f"dedicated to tenant {pool.dedicated_to}; workload classes name no tenant"
    if burst:
        return "burst pool: sized by burst windows, idle at zero"
    return None


def stack_placements(spec: EstateSpec) -> tuple[list[Placement], list[tuple[str, str]]]:
    """The stack's node pools as placements, and the pools left out with the reason."""
    out: list[Placement] = []
    skipped: list[tuple[str, str]] = []

    def add(
        site_name: str,
        pool: AwsNodePool | BaremetalNodePool,
        instance_type: str | None,
        priced: tuple[Fraction | None, str],
        network: Fraction | None,
    ) -> None:
        out.append(
            Placement(
                name=pool.name,
                gpu=spec.pool_gpu_model(pool.name),
                gpus_per_node=spec.pool_gpus_per_node(pool.name),
                multi_node=pool.fabric is not None,
                usd_per_gpu_hour=priced[0],
                price_basis=priced[1],
                instance_type=instance_type,
                pool=pool.name,
                site=site_name,
                role=pool.role,
                capacity_gpus=spec.pool_gpu_capacity(pool.name),
                floor_gpus=_floor_gpus(spec, pool),
                network_gbit_per_s=network,
            )
        )

    for site in spec.sites:
        match site:
            case AwsSite():
                for aws_pool in site.node_pools:
                    if (why := _skipped(aws_pool, aws_pool.burst)) is not None:
                        skipped.append((aws_pool.name, why))
                    else:
                        price = _aws_price(aws_pool.instance_type, site.region, site)
                        network = instance_network_gbit_per_s(aws_pool.instance_type)
                        add(site.name, aws_pool, aws_pool.instance_type, price, network)
            case BaremetalSite():
                for bm_pool in site.node_pools:
                    if (why := _skipped(bm_pool, burst=False)) is not None:
                        skipped.append((bm_pool.name, why))
                    else:
                        add(site.name, bm_pool, None, _onprem_price(spec, site, bm_pool), _fabric_gbit(spec, bm_pool))
            case _:
                assert_never(site)
    return out, skipped


def _floor_gpus(spec: EstateSpec, pool: AwsNodePool | BaremetalNodePool) -> int:
    """GPUs a pool runs whatever the demand: its min nodes on AWS (the autoscaler removes idle nodes above it),
    every server on bare metal (owned, always there)."""
    if isinstance(pool, AwsNodePool):
        return pool.scaling.min * spec.pool_gpus_per_node(pool.name)
    return spec.pool_gpu_capacity(pool.name)


def _fabric_gbit(spec: EstateSpec, pool: BaremetalNodePool) -> Fraction | None:
    """A server's InfiniBand / RoCE rate (ib_rate_gbps × ports) in the pool's slowest server; None if undeclared."""
    site = spec.site_of_pool(pool.name)
    assert isinstance(site, BaremetalSite)
    rates = [(s.ib_rate_gbps or 0) * len(s.ib_ports) for s in spec.pool_servers(site, pool)]
    return Fraction(min(rates)) if rates and all(rates) else None


def onprem_placements(spec: EstateSpec) -> list[Placement]:
    """Bare-metal pools of a stack as candidates next to the catalog (the inventory is already bought)."""
    pools, _ = stack_placements(spec)
    return [p for p in pools if p.instance_type is None]


def stack_region(spec: EstateSpec | None) -> str:
    """The region catalog placements are priced in: the stack's first AWS site's, else DEFAULT_REGION."""
    for site in spec.sites if spec is not None else []:
        match site:
            case AwsSite():
                return site.region
            case BaremetalSite():
                continue
            case _:
                assert_never(site)
    return DEFAULT_REGION


Status = Literal["ok", "weaker interconnect", "misses deadline", "no timing", "unpriced"]


@dataclass(frozen=True)
class Choice:
    """A placement a class fits on, with its cost per run (None when unpriced or untimed)."""

    placement: Placement
    gpus_needed: int
    nodes_per_run: int
    hours_per_run: Fraction | None
    cost_per_run: Fraction | None
    status: Status
    ring: Ring | None = None  # the gradient all-reduce ring of a training run on more than one GPU
    slower_than: Choice | None = None  # weaker interconnect: the placement whose faster ring the hours hold on


def evaluate(c: WorkloadClass, need: MemoryNeed, p: Placement) -> Choice | str:
    """A Choice when the class's runs can go on `p`, else the reason they cannot."""
    fit = memory_fit(need, p.gpu)
    if fit.gpus_needed > c.gpus_per_run:
        return f"needs {fit.gpus_needed} × {p.gpu.id} for memory, more than its {c.gpus_per_run} GPUs per run"
    if p.gpus_per_node == 0:
        return "no GPUs per node"
    nodes = ceil(Fraction(c.gpus_per_run, p.gpus_per_node))
    if nodes > 1 and not c.training:
        return f"a {c.kind} run of {c.gpus_per_run} GPUs must fit one node ({p.gpus_per_node} GPUs)"
    if nodes > 1 and not p.multi_node:
        return f"a run spans {nodes} nodes but {p.name} has no fabric (EFA / InfiniBand / RoCE)"
    hours = c.hours_on_gpu(p.gpu.id)
    status: Status = "ok"
    cost = None
    if hours is None:
        status = "no timing"
    elif c.deadline_hours is not None and hours > q(c.deadline_hours):
        status = "misses deadline"
    if hours is not None and p.usd_per_gpu_hour is not None:
        cost = billed_gpus(c.gpus_per_run, p.gpus_per_node) * p.usd_per_gpu_hour * hours
    elif status == "ok":
        status = "unpriced"
    return Choice(
        placement=p,
        gpus_needed=fit.gpus_needed,
        nodes_per_run=nodes,
        hours_per_run=hours,
        cost_per_run=cost,
        status=status,
        ring=ring(c, p),
    )


def rank(choices: Iterable[Choice]) -> list[Choice]:
    """Priced choices that meet the objective first, cheapest per run; then the rest, by why they lost."""
    order = {"ok": 0, "weaker interconnect": 1, "misses deadline": 2, "no timing": 3, "unpriced": 4}
    return sorted(
        choices,
        key=lambda ch: (
            order[ch.status],
            ch.cost_per_run if ch.cost_per_run is not None else 0,
            ch.nodes_per_run,
            ch.placement.name,
        ),
    )


@dataclass(frozen=True)
class ClassSizing:
    cls: WorkloadClass
    gpu_hours: Fraction
    need: MemoryNeed
    fits: list[GpuFit]
    choices: list[Choice]  # ranked; the first with status ok is chosen

    @property
    def chosen(self) -> Choice | None:
        return next((ch for ch in self.choices if ch.status == "ok"), None)

    @property
    def placed_gpu_hours(self) -> Fraction:
        """Demand on the chosen placement (its hours per run there); the reference hours when none is chosen."""
        ch = self.chosen
        if ch is None or ch.hours_per_run is None:
            return self.gpu_hours
        return q(self.cls.runs_per_period) * self.cls.gpus_per_run * ch.hours_per_run


def size_class(c: WorkloadClass, placements: list[Placement]) -> ClassSizing:
    need = memory_need(c)
    fits = sorted(
        (memory_fit(need, g) for g in catalog.gpu_models().values()), key=lambda f: (-f.gpu_memory_gb, f.gpu.id)
    )
    choices = [ch for p in placements if isinstance(ch := evaluate(c, need, p), Choice)]
    return ClassSizing(cls=c, gpu_hours=c.gpu_hours(), need=need, fits=fits, choices=rank(judge(choices)))
