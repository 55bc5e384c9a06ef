"""Owned capacity first, and only where it holds the work (review of #32, items 1-3): a pool too small for one
run is refused, owned servers without a declared cost are used at $0 marginal, and demand beyond what the owned
pools hold overflows to the next-ranked bought placement."""

from __future__ import annotations

import copy

from gpufleet.render.sizing import headline, node_pool_snippet, sizing_text
from gpufleet.sizing.arithmetic import memory_need
from gpufleet.sizing.placement import evaluate, onprem_placements
from gpufleet.sizing.report import size
from model.load import parse_estate
from tests.conftest import example_estate
from tests.sizing.helpers import wclass, wfile
from tests.sizing.test_cases import FT70B, TODAY, on


def test_an_owned_pool_smaller_than_one_run_is_refused_and_the_headline_says_what_is_bought() -> None:
    # 64 GPUs at once; the onprem `train` pool holds 48 (6 servers x 8 H100). Before: "Buys train ... Buys nothing".
    r = on("onprem", dict(FT70B, gpus_per_run=64))
    (cs,) = r.classes
    assert all(ch.placement.name != "train" for ch in cs.choices)
    spec = parse_estate(example_estate("onprem"), "onprem")
    (train,) = [p for p in onprem_placements(spec) if p.name == "train"]
    c = wclass(**dict(FT70B, gpus_per_run=64))
    assert evaluate(c, memory_need(c), train) == "needs 64 GPUs at once; pool train holds 48 GPUs"
    assert cs.chosen is not None and cs.chosen.placement.instance_type is not None
    text = sizing_text(r)
    assert "Buys nothing" not in text and "Uses no owned servers." in headline(r)


def test_owned_servers_with_no_declared_cost_are_used_at_zero_marginal_cost() -> None:
    raw = copy.deepcopy(example_estate("onprem"))
    del raw["sites"][0]["cost"]
    spec = parse_estate(raw, "nocost")
    r = size(wfile(FT70B), "w.yaml", spec, "nocost", today=TODAY)
    (cs,) = r.classes
    assert cs.chosen is not None and cs.chosen.placement.name == "train" and cs.chosen.status == "ok"
    assert cs.chosen.cost_per_run == 0
    assert "owned, no amortisation declared" in cs.chosen.placement.price_basis
    assert "Uses owned servers (already paid for): train for ft70b." in headline(r)


def test_demand_beyond_the_owned_pool_overflows_to_the_next_ranked_bought_placement() -> None:
    # Review item 2: two 40-GPU gangs, 7 runs a week each, "Buys nothing" on a 48-GPU pool. Now a small gang (one
    # 16-GPU run of 24 h) stays on `train`; the big one (7 × 40 GPUs × 24 h = 6,720 GPU-hours, 80 GPUs at 50 %
    # before reserves) does not fit its 48 GPUs and goes, whole, to p5.48xlarge.
    small = dict(FT70B, name="fta", runs_per_period=1, gpus_per_run=16, hours_per_run=24, hours_on={},
                 deadline_hours=30)  # fmt: skip
    big = dict(small, name="ftb", runs_per_period=7, gpus_per_run=40)
    r = on("onprem", small, big)
    a, b = r.classes
    assert a.chosen is not None and a.chosen.placement.name == "train" and not a.overflow
    assert b.chosen is not None and b.chosen.placement.name == "p5.48xlarge"
    assert b.overflow.startswith("owned pool train holds 48 GPUs; with ftb it needs up to ")
    assert [ch.status for ch in b.choices if ch.placement.name == "train"] == ["owned pool full"]
    h = headline(r)
    assert "Uses owned servers (already paid for): train for fta." in h
    assert "for ftb, where no owned server has room or fits" in h and "Overflow beyond the stack's pools: ftb" in h


def test_a_class_beyond_both_the_owned_and_the_burst_pool_buys_a_new_pool_and_names_them() -> None:
    # Review item 9 sent a 40-GPU gang the owned `base` pool (32 GPUs) cannot hold to `burst-h100`, at 0-15 nodes;
    # but burst-h100's max is 4 nodes (32 GPUs), so a run of 5 nodes cannot start there (issue #32 audit, gap 1).
    # Now it goes to a new p5.48xlarge pool: 7 × 40 × 24 = 6,720 GPU-hours ÷ 120 h ÷ 50 % = 112 GPUs, 14 nodes + 1
    # spare; work 7 runs × 5 nodes × $55.04 × 24 h = $46,233.60 a week.
    big = dict(FT70B, name="ftb", runs_per_period=7, gpus_per_run=40, hours_per_run=24, hours_on={},
               deadline_hours=30)  # fmt: skip
    r = on("hybrid", big)
    (cs,) = r.classes
    assert cs.chosen is not None and cs.chosen.placement.name == "p5.48xlarge"
    assert all(ch.placement.name != "burst-h100" for ch in cs.choices)
    (rec,) = r.pools
    assert rec.name == "training-p5-48xlarge" and rec.demand.scale_max_nodes == 15
    assert f"{float(rec.demand.work_usd or 0):,.2f}" == "46,233.60"
    h = headline(r)
    assert "Buys: training-p5-48xlarge (0-15 × p5.48xlarge, $46,233.60 of work a week) for ftb" in h
    assert "Bursts to" not in h
    assert (
        "Stack pools too small for one run at their max: ftb (base holds 32 GPUs, a run needs 40; burst-h100 holds "
        "32 GPUs at its max of 4 nodes, a run needs 40)." in h
    )
    assert "max: 15" in node_pool_snippet(r.pools)
