"""The cheapest placement the class fits on and meets its deadline on wins; the rest say why they lost."""

from __future__ import annotations

import pytest

from gpufleet.sizing.arithmetic import memory_need
from gpufleet.sizing.placement import catalog_placements, evaluate, size_class
from tests.sizing.helpers import wclass

PLACEMENTS = catalog_placements("us-east-1")


def by_name(name: str):  # type: ignore[no-untyped-def]
    return next(p for p in PLACEMENTS if p.name == name)


def test_a_cheaper_gpu_that_misses_the_deadline_loses() -> None:
    c = wclass(measured_on="H100-80GB", hours_on={"L40S-48GB": 20}, deadline_hours=12)
    sized = size_class(c, PLACEMENTS)
    assert sized.chosen is not None and sized.chosen.placement.name == "p5.48xlarge"
    l40s = next(ch for ch in sized.choices if ch.placement.name == "g6e.12xlarge")
    assert l40s.status == "misses deadline"


def test_the_cheapest_gpu_that_meets_the_deadline_wins() -> None:
    c = wclass(measured_on="H100-80GB", hours_on={"L40S-48GB": 8}, deadline_hours=12)
    chosen = size_class(c, PLACEMENTS).chosen
    assert chosen is not None and chosen.placement.name == "g6e.12xlarge"
    # 4 GPUs × (10.49264 $/h ÷ 4 GPUs) × 8 h, from the catalog
    assert float(chosen.cost_per_run or 0) == pytest.approx(10.49264 * 8)


def test_gpus_without_a_timing_are_listed_but_not_ranked() -> None:
    sized = size_class(wclass(measured_on="H100-80GB"), PLACEMENTS)
    h200 = next(ch for ch in sized.choices if ch.placement.name == "p5en.48xlarge")
    assert h200.status == "no timing" and h200.cost_per_run is None


def test_types_without_a_price_in_the_region_are_listed_as_unpriced() -> None:
    sized = size_class(wclass(measured_on="H200-141GB"), PLACEMENTS)
    p5e = next(ch for ch in sized.choices if ch.placement.name == "p5e.48xlarge")
    assert p5e.status == "unpriced"
    assert sized.chosen is not None and sized.chosen.status == "ok"


def test_a_run_spanning_nodes_needs_efa() -> None:
    c = wclass(parameters_billion=1, gpus_per_run=4)
    no_efa = evaluate(c, memory_need(c), by_name("g6e.xlarge"))
    assert isinstance(no_efa, str) and "no fabric" in no_efa
    assert not isinstance(evaluate(c, memory_need(c), by_name("g6e.8xlarge")), str)  # EFA-capable


def test_a_run_smaller_than_a_node_pays_for_its_own_gpus_only() -> None:
    c = wclass(parameters_billion=1, gpus_per_run=2, hours_per_run=1)
    ch = evaluate(c, memory_need(c), by_name("p5.48xlarge"))
    assert not isinstance(ch, str)
    assert float(ch.cost_per_run or 0) == pytest.approx(55.04 / 8 * 2)


def test_work_measured_on_no_gpu_is_not_ranked_across_gpu_models() -> None:
    # The 405B pre-train landed on L4 instances at equal hours. Without measured_on, a training run's hours
    # cannot be compared across GPU models: nothing is chosen, and the report names the fix.
    sized = size_class(wclass(), PLACEMENTS)
    assert sized.chosen is None and {ch.status for ch in sized.choices} == {"no timing"}
    assert "gives no measured_on" in sized.refused and "speed_vs_measured" in sized.refused


def test_a_declared_speed_ratio_times_another_gpu_model() -> None:
    # measured on H100 for 6 h; A100-80GB declared at half the speed: 12 h on p4de (8 × A100-80GB, $27.44705/h):
    # 4 GPUs × 27.44705 / 8 × 12 h = $164.68 per run.
    c = wclass(measured_on="H100-80GB", speed_vs_measured={"A100-80GB": 0.5}, deadline_hours=24)
    p4de = next(ch for ch in size_class(c, PLACEMENTS).choices if ch.placement.name == "p4de.24xlarge")
    assert p4de.hours_per_run == 12 and f"{float(p4de.cost_per_run or 0):.2f}" == "164.68"
