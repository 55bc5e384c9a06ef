"""Node pools from the placements: the demand each placement carries, new pools to create, and a stack's verdict.

`recommend_pools` groups the chosen placements into pools (one new cloud pool per instance type and role; a pool
the stack has stays one pool, a cloud one scaled up to its demand), each sized over the utilisation scenarios in
whole nodes. `compare_stack` places every class on the cheapest pool of a stack and judges each pool's capacity
against what it hosts.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, Literal

from gpufleet.sizing.arithmetic import (
    Scenario,
    billed_gpus,
    ceil,
    demand_scenarios,
    gang_minimum,
    memory_need,
    nodes_for,
    q,
)
from gpufleet.sizing.interconnect import penalise, why_slower
from gpufleet.sizing.placement import (
    Choice,
    ClassSizing,
    Placement,
    PoolScale,
    Status,
    catalog_placements,
    evaluate,
    rank,
    stack_placements,
    stack_region,
    untimed_across_models,
)
from gpufleet.sizing.workloads import Planning, WorkloadClass, WorkloadFile
from model.pricing import HOURS_PER_MONTH
from model.spec import EstateSpec, Role


@dataclass(frozen=True)
class Demand:
    """Demand placed on one placement: the range it needs, gang included, in GPUs and nodes."""

    placement: Placement
    classes: tuple[str, ...]
    gpu_hours: Fraction  # on this placement's GPU
    scenarios: list[Scenario]
    gang_gpus: int
    multi_node_gang: bool  # a run spans nodes (gang or not): the pool needs a fabric
    largest_run_gpus: int = 0  # every GPU of one run is needed at once, gang or not
    always_on_gpus: int = 0  # always-on serving's replicas × GPUs: the floor a pool never scales below
    spare_nodes: int = 0  # whole nodes on top of the peak (Planning.spare_nodes above spares_above_nodes)
    # What the work costs a period: runs × cost per run (whole nodes billed for a run across nodes) and the always-on
    # floor's whole nodes for the hours they run; None when the placement is unpriced.
    work_usd: Fraction | None = None

    @property
    def floor_gpus(self) -> int:
        """What must be free at once: the gang minimum, and the whole nodes the largest run occupies."""
        return max(self.gang_gpus, billed_gpus(self.largest_run_gpus, self.placement.gpus_per_node))

    @property
    def min_gpus(self) -> int:
        """The optimistic end (highest utilisation) with reserves, never below the gang minimum or largest run."""
        return max(self.scenarios[-1].rounded, self.floor_gpus)

    @property
    def max_gpus(self) -> int:
        """The pessimistic end (lowest utilisation) with reserves, never below the gang minimum or largest run."""
        return max(self.scenarios[0].rounded, self.floor_gpus)

    @property
    def min_nodes(self) -> int:
        return nodes_for(self.min_gpus, self.placement.gpus_per_node)

    @property
    def max_nodes(self) -> int:
        return nodes_for(self.max_gpus, self.placement.gpus_per_node)

    # The shape of an autoscaled pool: min at the always-on floor (0 when nothing is always on), desired at that floor
    # too (a node group starts at desired: more would idle until a gang arrives; cluster-autoscaler raises it for
    # pending pods), max at the peak with its spares.
    @property
    def scale_min_nodes(self) -> int:
        return nodes_for(self.always_on_gpus, self.placement.gpus_per_node)

    @property
    def scale_desired_nodes(self) -> int:
        return self.scale_min_nodes

    @property
    def scale_max_nodes(self) -> int:
        return self.max_nodes + self.spare_nodes

    @property
    def raised(self) -> PoolScale | None:
        """A cloud pool of the stack's scaling once it takes this demand: min and desired at least the always-on
        floor, max at least the peak with its spares. Nothing is lowered: the stack's verdict judges the excess."""
        s = self.placement.scale
        if s is None:
            return None
        floor, peak = self.scale_min_nodes, self.scale_max_nodes
        return replace(s, min=max(s.min, floor), desired=max(s.desired, floor), max=max(s.max, peak, floor))


def demand_on(p: Placement, placed: list[tuple[ClassSizing, Choice]], planning: Planning) -> Demand:
    parts = [(cs.cls, q(cs.cls.runs_per_period) * cs.cls.gpus_per_run * (ch.hours_per_run or 0)) for cs, ch in placed]
    hours = sum((h for _, h in parts), Fraction(0))
    gang, _ = gang_minimum(cs.cls for cs, _ in placed)
    always_on = sum(
        _floor_replicas(cs.cls) * cs.cls.gpus_per_run for cs, _ in placed if always_on_serving(cs.cls, planning)
    )
    d = Demand(
        placement=p,
        classes=tuple(cs.cls.name for cs, _ in placed),
        gpu_hours=hours,
        scenarios=demand_scenarios(parts, planning),
        gang_gpus=gang,
        multi_node_gang=any(ch.nodes_per_run > 1 for _, ch in placed),
        largest_run_gpus=max((cs.cls.gpus_per_run for cs, _ in placed), default=0),
        always_on_gpus=ceil(q(always_on)),
        work_usd=_work_usd(p, placed, planning),
    )
    spares = planning.spare_nodes if d.max_nodes > planning.spares_above_nodes else 0
    return replace(d, spare_nodes=spares)


def _work_usd(p: Placement, placed: list[tuple[ClassSizing, Choice]], planning: Planning) -> Fraction | None:
    if p.usd_per_gpu_hour is None:
        return None
    on = [(cs, ch) for cs, ch in placed if always_on_serving(cs.cls, planning)]
    runs = sum(
        (q(cs.cls.runs_per_period) * (ch.cost_per_run or 0) for cs, ch in placed if (cs, ch) not in on), Fraction(0)
    )
    if not on:
        return runs
    gpus = ceil(sum((q(cs.cls.runs_per_period) * cs.cls.gpus_per_run for cs, _ in on), Fraction(0)))
    hours = max(ch.hours_per_run or 0 for _, ch in on)
    return runs + nodes_for(gpus, p.gpus_per_node) * p.gpus_per_node * p.usd_per_gpu_hour * hours


def _floor_replicas(c: WorkloadClass) -> float:
    """Replicas always on: the steady load's (throughput.steady_requests_per_second), else every replica."""
    return c.throughput.steady_replicas if c.throughput is not None else c.runs_per_period


def always_on_serving(c: WorkloadClass, planning: Planning) -> bool:
    """Serving whose replicas run as long as a device works in the period: a pool's floor."""
    return c.kind == "online-inference" and q(c.hours_per_run) >= q(planning.hours_per_device)


def fill_stack_pools(sized: list[ClassSizing], planning: Planning) -> list[ClassSizing]:
    """The stack's pools take the classes ranked onto them, in file order, while they hold them at their max size.
    An owned pool holds the pessimistic end (lowest utilisation with reserves, gang and largest run included); a
    burst pool holds that in whole nodes with its spares, the pool's max nodes; so does a cloud pool on a
    reservation (any other cloud pool's max may be raised, placement.cloud_pool_placements). A class a pool cannot
    hold goes, whole, to its next-ranked placement (the pool marked "... pool full"); it is not split."""
    taken: dict[str, list[tuple[ClassSizing, Choice]]] = {}
    out = []
    for cs in sized:
        why = []
        while (
            (ch := cs.chosen) is not None and ch.placement.pool is not None and ch.placement.capacity_gpus is not None
        ):
            p, cap = ch.placement, ch.placement.capacity_gpus
            trial = [*taken.get(p.name, []), (cs, ch)]
            d = demand_on(p, trial, planning)
            owned = p.instance_type is None
            need = d.max_gpus if owned else d.scale_max_nodes * p.gpus_per_node
            if need <= cap:
                taken[p.name] = trial
                break
            kind = "owned" if owned else "burst" if p.scale is None else "cloud"
            reserved = ", the instances reserved" if p.scale is not None and not p.scale.raisable else ""
            nodes = "" if owned else f" ({cap // p.gpus_per_node} nodes{reserved})"
            spares = (
                f", {d.spare_nodes} spare node{'s' if d.spare_nodes > 1 else ''} included"
                if d.spare_nodes and not owned
                else ""
            )
            why.append(
                f"{kind} pool {p.name} holds {cap} GPUs{nodes}; with {cs.cls.name} it needs up to {need}{spares}"
            )
            status: Status = "owned pool full" if owned else "burst pool full" if p.scale is None else "cloud pool full"
            full = [replace(x, status=status) if x.placement == p else x for x in cs.choices]
            cs = replace(cs, choices=full)
        out.append(replace(cs, overflow="; ".join(why)) if why else cs)
    return out


@dataclass(frozen=True)
class PoolRecommendation:
    name: str
    role: Role
    demand: Demand

    def stack_entry(self) -> dict[str, Any] | None:
        """A new cloud pool as a stack-file `node_pools` entry (model.spec.AwsNodePool); None for owned servers
        and pools the stack has."""
        d, p = self.demand, self.demand.placement
        if p.instance_type is None or p.pool is not None:
            return None
        return {
            "name": self.name,
            "role": self.role,
            "instance_type": p.instance_type,
            "scaling": {"min": d.scale_min_nodes, "desired": d.scale_desired_nodes, "max": d.scale_max_nodes},
            "capacity": _capacity(p, self.role),
        }


def _capacity(p: Placement, role: str) -> dict[str, Any]:
    """How a recommended pool is bought: on demand, or spot at the discount it was priced at when the catalog has
    no spot figure (so `gpufleet cost` prices the pool as `size` did). A spot training pool says its jobs
    checkpoint, as the stack's rules require: its classes are interruptible."""
    if not p.spot:
        return {"type": "on-demand"}
    out: dict[str, Any] = {"type": "spot"}
    if p.spot_discount is not None:
        out["spot_discount"] = p.spot_discount
    if role == "training":
        out["checkpointing"] = True
    return out


def recommend_pools(sized: list[ClassSizing], planning: Planning) -> list[PoolRecommendation]:
    """One new cloud pool per (instance type, role); a pool the stack has (owned, burst or cloud) stays one pool.
    Whole nodes."""
    groups: dict[tuple[str, str], list[tuple[ClassSizing, Choice]]] = {}
    for cs in sized:
        ch = cs.chosen
        if ch is not None:
            key: str = cs.cls.role if ch.placement.instance_type and ch.placement.pool is None else ""
            groups.setdefault((ch.placement.name, key), []).append((cs, ch))
    out = []
    for (pname, role_key), placed in groups.items():
        p = placed[0][1].placement
        if p.instance_type and p.pool is None:
            bought = "-spot" if p.spot else ""
            name = f"{role_key}-{p.instance_type.replace('.', '-')}"[: 40 - len(bought)].rstrip("-") + bought
            pool_role = placed[0][0].cls.role
        else:
            name, pool_role = pname, p.role or placed[0][0].cls.role
        out.append(PoolRecommendation(name=name, role=pool_role, demand=demand_on(p, placed, planning)))
    return out


# ----------------------------------------------------------------------------------------- stack verdict

Verdict = Literal["under-provisioned", "within", "over-provisioned"]


@dataclass(frozen=True)
class PoolVerdict:
    placement: Placement
    demand: Demand
    verdict: Verdict
    excess_gpus: int  # whole nodes' GPUs that could go while the pool still holds the pessimistic need
    excess_usd_per_month: Fraction | None  # ceiling: those nodes running all 730 h of a month
    # expected: the excess nodes the pool runs whatever the demand (its min size on AWS, which the autoscaler keeps;
    # every owned server). An autoscaled pool's other excess nodes run only while work waits for them.
    excess_expected_usd_per_month: Fraction | None
    role_mismatch: tuple[str, ...]  # classes placed here although the pool's role is another


@dataclass(frozen=True)
class StackComparison:
    stack: str
    pools: list[PoolVerdict]
    unplaced: list[tuple[str, list[str]]]  # class, why no pool of the stack takes it
    skipped: list[tuple[str, str]]
    # class, the hours a slower gradient ring added on a pool of the stack the class was not placed on
    passed_over: list[tuple[str, str]] = field(default_factory=list)

    @property
    def verdict(self) -> Verdict:
        if self.unplaced or any(v.verdict == "under-provisioned" for v in self.pools):
            return "under-provisioned"
        if any(v.verdict == "over-provisioned" for v in self.pools):
            return "over-provisioned"
        return "within"


def _pool_verdict(p: Placement, d: Demand, mismatch: tuple[str, ...]) -> PoolVerdict:
    """Judged in whole nodes: a pool is over-provisioned only when removing at least one node (server) still
    leaves the pessimistic need; the excess is those nodes' GPUs."""
    cap = p.capacity_gpus or 0
    excess = 0
    spare_nodes = (cap - d.max_gpus) // p.gpus_per_node if cap > d.max_gpus else 0
    if cap < d.min_gpus:
        verdict: Verdict = "under-provisioned"
    elif spare_nodes < 1:
        verdict = "within"
    else:
        verdict, excess = "over-provisioned", spare_nodes * p.gpus_per_node
    cost = expected = None
    if excess and p.usd_per_gpu_hour is not None:
        cost = excess * p.usd_per_gpu_hour * HOURS_PER_MONTH
        floor = p.floor_gpus if p.floor_gpus is not None else cap
        kept = (floor - d.max_gpus) // p.gpus_per_node * p.gpus_per_node if floor > d.max_gpus else 0
        expected = min(kept, excess) * p.usd_per_gpu_hour * HOURS_PER_MONTH
    return PoolVerdict(
        placement=p,
        demand=d,
        verdict=verdict,
        excess_gpus=excess,
        excess_usd_per_month=cost,
        role_mismatch=mismatch,
        excess_expected_usd_per_month=expected,
    )


def _slower(ch: Choice) -> str:
    return f" ({why_slower(ch)})" if ch.penalty_hours else ""


def compare_stack(stack: str, spec: EstateSpec, workloads: WorkloadFile, source: str = "") -> StackComparison:
    """Place each class on the cheapest stack pool it fits (same role first) and judge every pool's capacity. A
    class measured on no GPU model is not placed when the stack's pools it fits hold more than one model, as
    `size` does not rank it (untimed_across_models); `source` names the file in the reason."""
    pools, skipped = stack_placements(spec)
    placed: dict[str, list[tuple[ClassSizing, Choice]]] = {p.name: [] for p in pools}
    mismatch: dict[str, list[str]] = {p.name: [] for p in pools}
    unplaced: list[tuple[str, list[str]]] = []
    passed_over: list[tuple[str, str]] = []
    refs = catalog_placements(stack_region(spec))
    for i, c in enumerate(workloads.classes):
        need = memory_need(c)
        results = [(p, evaluate(c, need, p)) for p in pools]
        untimed = untimed_across_models(
            c, [r for _, r in results if isinstance(r, Choice)], f"classes[{i}] of {source}"
        )
        if untimed:
            unplaced.append((c.name, [untimed]))
            continue
        # The same reference rings `size` ranks against (the catalog's and the stack's), so a pool's penalty is
        # the same in both sections of one report.
        others = [ch for p in refs if isinstance(ch := evaluate(c, need, p), Choice)]
        own = [r for _, r in results if isinstance(r, Choice)]
        choices = penalise(c, own + others)[: len(own)]
        same_role = rank(ch for ch in choices if ch.placement.role == c.role)
        ranked = same_role if any(ch.status == "ok" for ch in same_role) else rank(choices)
        best = next((ch for ch in ranked if ch.status == "ok"), None)
        if best is None:
            why = [f"{p.name}: {r}" for p, r in results if isinstance(r, str)]
            why += [f"{ch.placement.name}: {ch.status}" + _slower(ch) for ch in choices]
            unplaced.append((c.name, why or ["the stack has no whole-GPU pool to compare"]))
            continue
        passed_over += [(c.name, why_slower(ch)) for ch in ranked if ch.penalty_hours and ch is not best]
        cs = ClassSizing(cls=c, gpu_hours=c.gpu_hours(), need=need, fits=[], choices=[best])
        placed[best.placement.name].append((cs, best))
        if best.placement.role != c.role:
            mismatch[best.placement.name].append(c.name)
    verdicts = [
        _pool_verdict(p, demand_on(p, placed[p.name], workloads.planning), tuple(mismatch[p.name])) for p in pools
    ]
    return StackComparison(stack=stack, pools=verdicts, unplaced=unplaced, skipped=skipped, passed_over=passed_over)
