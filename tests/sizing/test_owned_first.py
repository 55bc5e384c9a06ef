"""Owned capacity first, and only where it holds the work (review of #32, items 1-3): a pool too small for one
run is refused, owned servers without a declared cost are used at $0 marginal, and demand beyond what the owned
pools hold overflows to the next-ranked bought placement."""

from __future__ import annotations

import copy

from gpufleet.render.sizing import headline, sizing_text
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
    assert evaluate(c, memory_need(c), train) == "needs 64 GPUs at once; pool train holds 48"
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
