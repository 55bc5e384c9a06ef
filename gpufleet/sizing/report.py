"""`gpufleet size`: the whole sizing of a workload file, optionally judged against a stack."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from fractions import Fraction

from gpufleet.sizing.arithmetic import Scenario, demand_scenarios, gang_minimum
from gpufleet.sizing.followups import follow_ups
from gpufleet.sizing.placement import (
    ClassSizing,
    catalog_placements,
    cloud_pool_placements,
    measured_pools,
    onprem_placements,
    size_class,
    stack_region,
)
from gpufleet.sizing.pools import PoolRecommendation, StackComparison, compare_stack, fill_stack_pools, recommend_pools
from gpufleet.sizing.workloads import WorkloadFile
from model.spec import EstateSpec


@dataclass(frozen=True)
class SizingReport:
    source: str
    workloads: WorkloadFile
    region: str
    classes: list[ClassSizing]
    total_gpu_hours: Fraction
    scenarios: list[Scenario]
    gang_gpus: int
    gang_class: str | None
    pools: list[PoolRecommendation]
    unplaced_scenarios: list[Scenario]  # classes no placement takes, at their reference hours
    comparison: StackComparison | None
    today: dt.date
    notes: list[str] = field(default_factory=list)

    @property
    def installed_per_scenario(self) -> list[int]:
        """Per utilisation scenario (the order of `scenarios`): the recommended pools added up, each rounded up and
        at least its gang and largest run, plus the unplaced classes at their reference hours."""
        return [
            sum(max(rec.demand.scenarios[i].rounded, rec.demand.floor_gpus) for rec in self.pools)
            + self.unplaced_scenarios[i].rounded
            for i in range(len(self.scenarios))
        ]

    @property
    def installed_range(self) -> tuple[int, int]:
        """The installed GPUs the recommendation adds up to: the fewest and most over the scenarios."""
        per = self.installed_per_scenario
        return min(per), max(per)

    @property
    def installed_nodes_gpus(self) -> tuple[int, int]:
        """The same in whole nodes: Σ pools' min and max nodes × GPUs per node (what the snippet creates)."""
        lo = sum(rec.demand.min_nodes * rec.demand.placement.gpus_per_node for rec in self.pools)
        hi = sum(rec.demand.max_nodes * rec.demand.placement.gpus_per_node for rec in self.pools)
        return lo, hi

    @property
    def unplaced(self) -> list[str]:
        return [cs.cls.name for cs in self.classes if cs.chosen is None]

    @property
    def review_overdue(self) -> bool:
        return self.workloads.assumptions.review_date < self.today


def size(
    workloads: WorkloadFile,
    source: str,
    spec: EstateSpec | None = None,
    stack: str | None = None,
    today: dt.date | None = None,
) -> SizingReport:
    """Size the fleet for a workload file; with a stack, judge the stack's pools against the range.

    Raises SpecError when a class's measured_on_pool does not name a pool of the stack it can be sized against."""
    region = stack_region(spec)
    placements = catalog_placements(region, workloads.planning.spot_discount)
    notes = []
    if spec is not None:
        own = onprem_placements(spec) + cloud_pool_placements(spec)
        placements += own
        if own:
            notes.append(
                f"pools of stack {stack} (owned, burst, cloud) are candidates too: {', '.join(p.name for p in own)}"
            )
    workloads, measured = measured_pools(workloads, source, spec, stack)
    sized = fill_stack_pools(
        [
            size_class(c, placements, measured.get(c.name), f"classes[{i}] of {source}")
            for i, c in enumerate(workloads.classes)
        ],
        workloads.planning,
    )
    # Demand on the GPUs the classes are placed on (a class's hours there, not its reference hours), so that the
    # portfolio adds up to the pools it recommends; a class no placement takes stays at its reference hours.
    parts = [(cs.cls, cs.placed_gpu_hours) for cs in sized]
    total = sum((h for _, h in parts), Fraction(0))
    gang, gang_class = gang_minimum(workloads.classes)
    pools = recommend_pools(sized, workloads.planning)
    if spec is not None:
        notes += follow_ups(spec, pools, region)
    unplaced = [(cs.cls, cs.gpu_hours) for cs in sized if cs.chosen is None]
    return SizingReport(
        source=source,
        workloads=workloads,
        region=region,
        classes=sized,
        total_gpu_hours=total,
        scenarios=demand_scenarios(parts, workloads.planning),
        gang_gpus=gang,
        gang_class=gang_class,
        pools=pools,
        unplaced_scenarios=demand_scenarios(unplaced, workloads.planning),
        comparison=compare_stack(stack or "", spec, workloads, source) if spec is not None else None,
        today=today or dt.date.today(),
        notes=notes,
    )
