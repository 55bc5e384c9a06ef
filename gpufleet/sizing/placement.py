"""Where a workload class can run and what it costs there: catalog instance types and a stack's pools.

A placement is priced per GPU-hour: on demand from the catalog (the stack's region, else us-east-1), a stack's
cloud pool as it is bought, or, on prem, at the amortised price of the pool's servers (model.pricing, the price
`gpufleet cost` uses). Owned servers with room for a run come first: their cost is paid whether they run or idle,
so using them buys nothing. Then the cheapest placement a class fits on (memory, one node for inference, a fabric
across nodes) and meets its deadline on, a slower gradient ring counted as the hours it adds
(interconnect.penalise); a cloud pool the stack has goes before a new pool of its instance type. Spot goes to
interruptible classes within one node only: EC2 reclaims a spot node at two minutes' notice
(https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Literal

from gpufleet.sizing.arithmetic import GpuFit, MemoryNeed, billed_gpus, ceil, memory_fit, memory_need, q
from gpufleet.sizing.interconnect import Ring, instance_network_gbit_per_s, penalise, ring
from gpufleet.sizing.workloads import CLASS_RULES, WorkloadClass, WorkloadFile, run_rules
from model import catalog, kinds
from model.load import SpecError, problem_line
from model.pricing import GpuHourQuote, instance_gpu_hour, spot_gpu_hour
from model.spec import AwsNodePool, BaremetalNodePool, EstateSpec, Role, StorageTier
from model.spec.net import MAX_NODES

DEFAULT_REGION = "us-east-1"


@dataclass(frozen=True)
class PoolScale:
    """A steady cloud pool's node counts as the stack declares them (scaling min / desired / max)."""

    min: int
    desired: int
    max: int
    raisable: bool  # its max may be raised; a reservation's pool stays within the instances reserved


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
    capacity_gpus: int | None = None  # stack pools: GPUs at max size (a raisable cloud pool's: at MAX_NODES)
    floor_gpus: int | None = None  # stack pools: GPUs kept at the pool's min size (all of them on bare metal)
    network_gbit_per_s: Fraction | None = None  # one node's network (EFA / InfiniBand / RoCE), when fixed and known
    mig_profile: str | None = None  # a MIG pool: `gpu` is one slice, gpus_per_node and capacity_gpus count slices
    on_premises: bool = False  # stack pools: on a data centre's site (its own storage, no FSx / EFS / S3)
    site_storage: tuple[StorageTier, ...] = ()  # stack pools: the storage tiers their site declares
    scale: PoolScale | None = None  # a steady (not burst) cloud pool of the stack, which sizing may scale up
    spot: bool = False  # bought on spot (a candidate, or a stack pool): interruptible work within one node only
    spot_discount: float | None = None  # the planning's declared discount it is priced at (no catalog spot figure)


def _per_gpu(quote: GpuHourQuote) -> tuple[Fraction | None, str]:
    return (None if quote.usd is None else q(quote.usd) / quote.gpus), quote.basis


def catalog_placements(region: str, spot_discount: float | None = None) -> list[Placement]:
    """Every catalog instance type, priced on demand in `region`; and on spot where the catalog has a dated spot
    figure there or `spot_discount` (planning.spot_discount) is declared."""
    out = []
    for it in catalog.instance_types().values():
        price, basis = _per_gpu(instance_gpu_hour(it.name, region))
        p = Placement(
            name=it.name,
            gpu=it.gpu,
            gpus_per_node=it.gpu_count,
            multi_node=it.efa_supported,
            usd_per_gpu_hour=price,
            price_basis=basis,
            instance_type=it.name,
            network_gbit_per_s=instance_network_gbit_per_s(it.name),
        )
        out.append(p)
        sold = "spot" in it.usage_classes
        if sold and (spot := spot_gpu_hour(it.name, region, spot_discount)) is not None:
            price, basis = _per_gpu(spot)
            declared = spot_discount if catalog.spot_price(it.name, region) is None else None
            out.append(
                replace(p, name=f"{it.name} spot", usd_per_gpu_hour=price, price_basis=basis, spot=True,
                        spot_discount=declared)
            )  # fmt: skip
    return out


def _skipped(pool: AwsNodePool | BaremetalNodePool, burst: bool) -> str | None:
    """Why a pool is not compared, or None."""
    if pool.sharing.mode == "time-slicing":
        return "shares GPUs (time-slicing): no memory isolation to size a slice by"
    if pool.sharing.mode == "mig" and pool.sharing.mig_profile is None:
        return "MIG with no mig_profile"
    if pool.dedicated_to is not None:
        return f"dedicated to tenant {pool.dedicated_to}; workload classes name no tenant"
    if burst:
        return "burst pool: sized by burst windows, idle at zero"
    return None


def stack_placements(spec: EstateSpec, burst: bool = False) -> tuple[list[Placement], list[tuple[str, str]]]:
    """The stack's node pools as placements, and the pools left out with the reason; with `burst`, its burst
    pools too (cloud capacity the estate can burst to, at the pool's price)."""
    out: list[Placement] = []
    skipped: list[tuple[str, str]] = []

    for site in spec.sites:
        kind = kinds.of(site)
        for pool in site.node_pools:
            if (why := _skipped(pool, isinstance(pool, AwsNodePool) and pool.burst and not burst)) is not None:
                skipped.append((pool.name, why))
                continue
            price, basis = _per_gpu(kind.pool_gpu_hour(spec, pool.name))
            owned = kind.pool_instance_type(pool.name) is None
            if owned and price is None:  # bought already, no amortisation declared: zero marginal cost
                price, basis = Fraction(0), f"owned, no amortisation declared ({basis}): $0 marginal"
            p = Placement(
                name=pool.name,
                gpu=spec.pool_gpu_model(pool.name),
                gpus_per_node=spec.pool_gpus_per_node(pool.name),
                multi_node=pool.fabric is not None,
                usd_per_gpu_hour=price,
                price_basis=basis,
                instance_type=kind.pool_instance_type(pool.name),
                pool=pool.name,
                site=site.name,
                role=pool.role,
                capacity_gpus=spec.pool_gpu_capacity(pool.name),
                floor_gpus=kind.pool_floor_gpus(spec, pool.name),
                network_gbit_per_s=kind.node_network_gbit(spec, pool.name)[0],
                on_premises=kind.on_premises,
                site_storage=tuple(site.storage),
                spot=isinstance(pool, AwsNodePool) and pool.capacity.type == "spot",
            )
            out.append(mig_slices(p, pool.sharing.mig_profile) if pool.sharing.mode == "mig" else p)
    return out, skipped


def mig_slices(p: Placement, profile: str | None) -> Placement:
    """A MIG pool as a placement of slices: each slice a GPU of the profile's memory (the GB in its name, e.g.
    1g.10gb: 10 GB; NVIDIA MIG User Guide, Supported MIG Profiles, via catalog gpus.yaml), priced at the GPU-hour ÷
    the slices per GPU, with slices per node and in the pool."""
    mig = p.gpu.mig_profile(profile or "")
    if mig is None or (m := re.search(r"\.(\d+)gb$", mig.name)) is None:
        return p
    n = mig.per_gpu
    gpu = replace(p.gpu, memory_mib=int(m.group(1)) * 10**9 // 2**20, mig_profiles=())
    return replace(
        p,
        gpu=gpu,
        gpus_per_node=p.gpus_per_node * n,
        multi_node=False,
        usd_per_gpu_hour=None if p.usd_per_gpu_hour is None else p.usd_per_gpu_hour / n,
        price_basis=f"{p.price_basis} ÷ {n} MIG {mig.name} slices per GPU",
        capacity_gpus=None if p.capacity_gpus is None else p.capacity_gpus * n,
        floor_gpus=None if p.floor_gpus is None else p.floor_gpus * n,
        mig_profile=mig.name,
    )


def onprem_placements(spec: EstateSpec) -> list[Placement]:
    """A stack's candidates next to the catalog: its bare-metal pools (the inventory is already bought) and its
    burst pools (named, so a class that bursts says to which pool)."""
    pools, _ = stack_placements(spec, burst=True)
    bursts = {p.name for s in spec.sites for p in s.node_pools if isinstance(p, AwsNodePool) and p.burst}
    return [p for p in pools if p.instance_type is None or p.name in bursts]


def cloud_pool_placements(spec: EstateSpec) -> list[Placement]:
    """A stack's steady AWS pools (not burst) as candidates next to the catalog's new pools, each with its declared
    scaling. Raising a node group's max is no more of a change than a new node group of the same instance type, so
    an on-demand or spot pool has room up to MAX_NODES; a pool on a capacity reservation or block stays within its
    max, the instances reserved (model.rules check it against them)."""
    pools, _ = stack_placements(spec)
    steady = {p.name: p for s in spec.sites for p in s.node_pools if isinstance(p, AwsNodePool) and not p.burst}
    out = []
    for p in pools:
        if (pool := steady.get(p.name)) is None:
            continue
        raisable = pool.capacity.type in ("on-demand", "spot")
        scale = PoolScale(pool.scaling.min, pool.scaling.desired_nodes, pool.scaling.max, raisable)
        limit = MAX_NODES if raisable else pool.reachable_nodes
        out.append(replace(p, scale=scale, capacity_gpus=limit * p.gpus_per_node))
    return out


def stack_region(spec: EstateSpec | None) -> str:
    """The region catalog placements are priced in: the stack's first cloud site's, else DEFAULT_REGION."""
    regions = [r for s in (spec.sites if spec is not None else []) if (r := kinds.of(s).region) is not None]
    return regions[0] if regions else DEFAULT_REGION


Status = Literal[
    "ok", "misses deadline", "no timing", "unpriced", "owned pool full", "burst pool full", "cloud pool full"
]


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
    slower_than: Choice | None = None  # a slower ring: the placement whose faster ring the file's hours hold on
    penalty_hours: Fraction = Fraction(0)  # hours per run the slower ring adds (included in hours_per_run)
    gpus_per_run: int = 0  # the class's GPUs per run

    @property
    def owned(self) -> bool:
        """On servers the estate owns (a bare-metal pool) with room for a run at the pool's size."""
        p = self.placement
        room = p.capacity_gpus is not None and p.capacity_gpus >= billed_gpus(self.gpus_per_run, p.gpus_per_node)
        return p.instance_type is None and p.pool is not None and room


def evaluate(c: WorkloadClass, need: MemoryNeed, p: Placement) -> Choice | str:
    """A Choice when the class's runs can go on `p`, else the reason they cannot."""
    fit = memory_fit(need, p.gpu)
    if fit.gpus_needed > c.gpus_per_run:
        return f"needs {fit.gpus_needed} × {p.gpu.id} for memory, more than its {c.gpus_per_run} GPUs per run"
    if p.gpus_per_node == 0:
        return "no GPUs per node"
    if p.scale is not None and p.role != c.role:
        return f"pool {p.name} runs {p.role} work, not {c.role}: a new pool of the class's role is recommended instead"
    if p.mig_profile is not None and (c.work_bound or c.throughput is not None or c.gpus_per_run > 1):
        return f"MIG {p.mig_profile} slices take one-slice notebooks and serving timed by session, not {c.kind} work"
    nodes = ceil(Fraction(c.gpus_per_run, p.gpus_per_node))
    billed = billed_gpus(c.gpus_per_run, p.gpus_per_node)
    if (too_small := capacity_refusal(p, billed)) is not None:
        return too_small
    if p.spot and (why := _spot_refusal(c, p, nodes)) is not None:
        return why
    if nodes > 1 and not c.training:
        return f"a {c.kind} run of {c.gpus_per_run} GPUs must fit one node ({p.gpus_per_node} GPUs)"
    if nodes > 1 and not p.multi_node:
        return f"a run spans {nodes} nodes but {p.name} has no fabric (EFA / InfiniBand / RoCE)"
    if c.throughput is not None and p.gpu.id != c.measured_on:
        return f"its replicas come from tokens/s measured on {c.measured_on}; none measured on {p.gpu.id}"
    hours = c.hours_on_gpu(p.gpu.id)
    status: Status = "ok"
    cost = None
    if hours is None:
        status = "no timing"
    elif c.deadline_hours is not None and hours > q(c.deadline_hours):
        status = "misses deadline"
    if hours is not None and p.usd_per_gpu_hour is not None:
        cost = billed * p.usd_per_gpu_hour * hours
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
        gpus_per_run=c.gpus_per_run,
    )


def _spot_refusal(c: WorkloadClass, p: Placement, nodes: int) -> str | None:
    """Why a class's runs may not go on spot `p`, or None: a reclaimed node must cost one run, never a gang or a
    service."""
    if not c.interruptible:
        return "spot nodes are reclaimed at two minutes' notice; the class is not interruptible"
    if nodes > 1:
        return f"spot: a run over {nodes} nodes stops when any one is reclaimed; spot takes runs within one node"
    if c.gang_gpus > p.gpus_per_node:
        return f"spot: a gang of {c.gang_gpus} GPUs spans nodes and stops when any one is reclaimed"
    if c.kind == "online-inference":
        return "spot: a reclaimed node takes its serving replicas down with it; serving stays on demand"
    return None


def capacity_refusal(p: Placement, billed: int) -> str | None:
    """Why a stack pool cannot hold one run at its max size, or None. Owned or burst, a pool's max is a declared
    limit (servers bought; for a burst pool the quota and budget it was sized to), so it is never exceeded."""
    if p.pool is None or p.capacity_gpus is None or billed <= p.capacity_gpus:
        return None
    return f"needs {billed} GPUs at once; pool {_holds(p)}"


def _holds(p: Placement) -> str:
    at_max = "" if p.instance_type is None else f" at its max of {(p.capacity_gpus or 0) // p.gpus_per_node} nodes"
    return f"{p.name} holds {p.capacity_gpus} GPUs{at_max}"


def rank(choices: Iterable[Choice]) -> list[Choice]:
    """Choices that meet the objective first: owned servers with room, then the cheapest per run; then the rest, by
    why they lost. A new pool of an instance type a cloud pool of the stack takes the class on ranks after that pool
    even where the catalog quotes it lower (a stack's own rate): a new pool there would be bought the same way."""
    order = {"ok": 0, "misses deadline": 1, "no timing": 2, "unpriced": 3}
    chs = list(choices)
    existing: dict[tuple[str, bool], Fraction] = {}  # (instance type, on spot): the stack's cheapest pool of it
    for ch in chs:
        it, usd = ch.placement.instance_type, ch.cost_per_run
        if ch.placement.scale is not None and ch.status == "ok" and it is not None and usd is not None:
            key = (it, ch.placement.spot)
            existing[key] = min(existing.get(key, usd), usd)

    def cost(ch: Choice) -> Fraction:
        c = ch.cost_per_run if ch.cost_per_run is not None else Fraction(0)
        key = (ch.placement.instance_type or "", ch.placement.spot)
        return max(c, existing[key]) if ch.placement.pool is None and key in existing else c

    return sorted(
        chs,
        key=lambda ch: (
            order.get(ch.status, 4),  # then the stack pools that are full
            not ch.owned,
            cost(ch),
            ch.nodes_per_run,
            ch.placement.pool is None,  # at the same price, a pool the stack has before a new one
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
    refused: str = ""  # why the placements were not ranked across GPU models (untimed_across_models)
    overflow: str = ""  # why stack pools ranked first could not hold the class (pools.fill_stack_pools)
    too_small: tuple[str, ...] = ()  # stack pools that would take the class but hold less than one run at max size

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


def size_class(
    c: WorkloadClass, placements: list[Placement], measured: Placement | None = None, where: str = "the class"
) -> ClassSizing:
    """Rank the placements a class fits on. `measured` is the stack pool its hours were measured on
    (`measured_on_pool`, resolved by `measured_pools`): its ring, not the fastest, is what the hours hold on.
    `where` names the class in its file (`classes[0] of w.yaml`) for a refusal to say where to add a field."""
    need = memory_need(c)
    fits = sorted(
        (memory_fit(need, g) for g in catalog.gpu_models().values()), key=lambda f: (-f.gpu_memory_gb, f.gpu.id)
    )
    results = [(p, evaluate(c, need, p)) for p in placements]
    choices = [ch for _, ch in results if isinstance(ch, Choice)]
    # Refused for their size alone: the same pool with no max would take the class.
    too_small = tuple(
        f"{_holds(p)}, a run needs {billed_gpus(c.gpus_per_run, p.gpus_per_node)}"
        for p, why in results
        if isinstance(why, str) and isinstance(evaluate(c, need, replace(p, capacity_gpus=None)), Choice)
    )
    refused = untimed_across_models(c, choices, where)
    if refused:
        choices = [replace(ch, hours_per_run=None, cost_per_run=None, status="no timing") for ch in choices]
    reference = evaluate(c, need, measured) if measured is not None else None
    ranked = rank(penalise(c, choices, reference if isinstance(reference, Choice) else None))
    return ClassSizing(
        cls=c, gpu_hours=c.gpu_hours(), need=need, fits=fits, choices=ranked, refused=refused, too_small=too_small
    )


def measured_pools(
    workloads: WorkloadFile, source: str, spec: EstateSpec | None, stack: str | None
) -> tuple[WorkloadFile, dict[str, Placement]]:
    """Resolve each class's `measured_on_pool` against the stack: the class gets the pool's GPU model as
    measured_on, and the pool's placement is returned by class name (its ring is the one the hours hold on).

    Raises SpecError naming the file and field when no stack is given, the pool is not in it, cannot be sized
    against or cannot run the class, or measured_on names another GPU model."""
    named = [(i, c) for i, c in enumerate(workloads.classes) if c.measured_on_pool is not None]
    if not named:
        return workloads, {}
    pools, skipped = stack_placements(spec, burst=True) if spec is not None else ([], [])
    by_pool = {p.pool: p for p in pools if p.pool is not None}
    why_skipped = dict(skipped)
    classes = list(workloads.classes)
    found: dict[str, Placement] = {}
    errors: list[str] = []
    for i, c in named:
        name = c.measured_on_pool or ""
        where = f"classes[{i}]"
        place = by_pool.get(name)
        if spec is None:
            errors.append(problem_line(source, where, "measured_on_pool", "names a stack's pool: give --stack"))
        elif place is None:
            why = why_skipped.get(name)
            known = ", ".join(sorted(by_pool)) or "none"
            msg = f"pool {name} cannot be sized against: {why}" if why else f"stack {stack} has no pool {name}"
            errors.append(problem_line(source, where, "measured_on_pool", f"{msg} (pools: {known})"))
        elif c.measured_on is not None and c.measured_on != place.gpu.id:
            msg = f"{c.measured_on} is not pool {name}'s GPU model ({place.gpu.id}); leave measured_on out"
            errors.append(problem_line(source, where, "measured_on", msg))
        elif isinstance(unfit := evaluate(c, memory_need(c), place), str):
            msg = f"the class cannot run on pool {name}: {unfit}"
            errors.append(problem_line(source, where, "measured_on_pool", msg))
        else:
            resolved = c.model_copy(update={"measured_on": place.gpu.id})
            errors += [problem_line(source, where, p.path, p.message) for p in run_rules(resolved, CLASS_RULES)]
            classes[i] = resolved
            found[c.name] = place
    if errors:
        raise SpecError(errors)
    return workloads.model_copy(update={"classes": classes}), found


def untimed_across_models(c: WorkloadClass, choices: list[Choice], where: str = "the class") -> str:
    """Why a class's placements cannot be ranked, or "": what a class needs measured on no GPU model (no
    measured_on) compared across GPU models would be the same on every model, an L4 as fast as a B200. For
    work-bound classes that is hours_per_run on every model hours_on does not name; for online serving, the
    replicas, though a faster GPU's replica serves more tokens/s. Notebooks last as long as they are open whatever
    the GPU, so they are not refused. `where` names the class in its file."""
    models = sorted({ch.placement.gpu.id for ch in choices})
    serving = c.kind == "online-inference"
    untimed = c.measured_on is None and c.measured_on_pool is None
    if not (c.work_bound or serving) or not untimed or len(models) < 2:
        return ""
    if serving:
        return (
            f"{c.name} fits {', '.join(models)} but gives no measured_on: its {c.runs_per_period:g} replicas cannot "
            "be compared across GPU models (a replica on a faster GPU serves more tokens/s, so fewer are needed). "
            f"Add measured_on to {where} (the GPU model the replicas were sized on), and speed_vs_measured ratios "
            "per other model"
        )
    return (
        f"{c.name} fits {', '.join(models)} but gives no measured_on: its {c.hours_per_run:g} h cannot be compared "
        f"across GPU models. Add measured_on to {where} (the GPU model hours_per_run was measured on) and hours_on "
        "per other model, or speed_vs_measured ratios"
    )
