"""Utilisation per workload class, and a portfolio headline that adds up to the pools it recommends."""

from __future__ import annotations

from fractions import Fraction

from gpufleet.sizing.arithmetic import class_utilisation, demand_scenarios
from gpufleet.sizing.report import size
from tests.sizing.helpers import wfile

RESERVES = {"hours_per_device": 168, "failure_reserve_pct": 5, "maintenance_pct": 3, "growth_pct": 10}
SERVING = {
    "name": "chat",
    "kind": "online-inference",
    "parameters_billion": 8,
    "runs_per_period": 4,  # replicas
    "gpus_per_run": 4,
    "hours_per_run": 168,  # always on
    "latency_p95_ms": 500,
}


def test_sixteen_always_on_serving_gpus_are_sized_at_their_replicas_not_at_the_scenarios() -> None:
    # 4 replicas × 4 GPUs × 168 h = 2,688 GPU-hours a week. Before, at the 50-70 % scenarios: 2,688 ÷ (168 × 0.7)
    # = 22.86 × 1.18 = 26.97 -> 27 and 2,688 ÷ 84 = 32 × 1.18 = 37.76 -> 38: "16 GPUs sized at 27-38".
    # Always on is 100 %: 2,688 ÷ 168 = 16 GPUs, + 5 % + 3 % + 10 % reserves = 18.88 -> 19 in every scenario.
    w = wfile(SERVING, **RESERVES)
    c = w.classes[0]
    assert class_utilisation(c, w.planning) == 100
    got = demand_scenarios([(c, c.gpu_hours())], w.planning)
    assert [s.equivalents for s in got] == [16, 16, 16]
    assert [s.rounded for s in got] == [19, 19, 19]


def test_a_class_target_replaces_the_scenarios_for_that_class_only() -> None:
    # train: 960 GPU-hours at its own 80 %: 960 ÷ (120 × 0.8) = 10 GPUs in every scenario.
    # batch: 120 GPU-hours at the scenarios: 120 ÷ 60 = 2 (50 %), ÷ 72 = 1.67 (60 %), ÷ 84 = 1.43 (70 %).
    train = {"name": "train", "kind": "training", "parameters_billion": 7, "runs_per_period": 40,
             "gpus_per_run": 4, "hours_per_run": 6, "deadline_hours": 12, "utilisation_pct": 80}  # fmt: skip
    batch = {"name": "batch", "kind": "batch-inference", "parameters_billion": 1, "runs_per_period": 120,
             "gpus_per_run": 1, "hours_per_run": 1, "deadline_hours": 2}  # fmt: skip
    w = wfile(train, batch)
    assert class_utilisation(w.classes[1], w.planning) is None
    got = demand_scenarios([(c, c.gpu_hours()) for c in w.classes], w.planning)
    assert [s.equivalents for s in got] == [12, 10 + Fraction(5, 3), 10 + Fraction(10, 7)]
    assert [s.rounded for s in got] == [12, 12, 12]


def test_serving_that_is_not_on_all_period_follows_the_scenarios() -> None:
    w = wfile(dict(SERVING, hours_per_run=100), **RESERVES)
    assert class_utilisation(w.classes[0], w.planning) is None


def test_portfolio_headline_never_sits_below_the_gang_minimum() -> None:
    # One 16-GPU gang run of 1 h a week: 16 GPU-hours ÷ (120 h × 70 %) = 0.19 -> 1 GPU pooled. Before, the
    # headline said "1-1" while the gang needs 16 GPUs at once; the recommended pool (2 × p5.48xlarge) holds 16.
    gang = {"name": "big", "kind": "training", "parameters_billion": 7, "runs_per_period": 1, "gpus_per_run": 16,
            "hours_per_run": 1, "measured_on": "H100-80GB", "deadline_hours": 4, "gang": True}  # fmt: skip
    r = size(wfile(gang), "w.yaml")
    assert [s.rounded for s in r.scenarios] == [1, 1, 1]
    assert r.gang_gpus == 16
    assert r.installed_per_scenario == [16, 16, 16]
    assert r.installed_range == (16, 16)
    assert r.installed_range[0] >= r.gang_gpus


def test_portfolio_demand_is_counted_in_hours_on_the_chosen_gpu() -> None:
    # Measured 2 h on H100 but 3 h on A100-40GB, and with a 12 h deadline the p4d (A100-40GB) is cheapest per
    # run: 1 GPU on p4d.24xlarge at $21.957642 / 8 × 3 h = $8.23 against p5.4xlarge at $6.88 × 2 h = $13.76.
    # Demand is then 10 runs × 1 GPU × 3 h = 30 GPU-hours on the A100s, not the 20 reference hours.
    c = {"name": "eval", "kind": "batch-inference", "parameters_billion": 7, "runs_per_period": 10,
         "gpus_per_run": 1, "hours_per_run": 2, "measured_on": "H100-80GB", "hours_on": {"A100-40GB": 3},
         "deadline_hours": 12}  # fmt: skip
    r = size(wfile(c), "w.yaml")
    chosen = r.classes[0].chosen
    assert chosen is not None and chosen.placement.name == "p4d.24xlarge"
    assert r.total_gpu_hours == 30
    assert r.total_gpu_hours == sum(rec.demand.gpu_hours for rec in r.pools)
