"""A steady cloud pool the stack has is a placement, before a new pool of its instance type.

The aws-train stack: `h100` is p5.48xlarge (training, EFA), scaling min 0 / desired 2 / max 4 (32 GPUs).
p5.48xlarge on demand in us-east-1: $55.04 an hour, $6.88 a GPU-hour. Before, `size` recommended a new
`training-p5-48xlarge` pool next to it.
"""

from __future__ import annotations

from typing import Any

from gpufleet.render.sizing import headline, node_pool_snippet, sizing_text
from gpufleet.render.sizing_json import sizing_document
from gpufleet.sizing.arithmetic import memory_need
from gpufleet.sizing.placement import evaluate
from gpufleet.sizing.report import size
from model.load import parse_estate
from tests.conftest import example_estate
from tests.sizing.helpers import wclass, wfile
from tests.sizing.test_cases import FT70B, TODAY, on


def _ft8b(runs: int) -> dict[str, Any]:
    # An 8B fine-tune on one node: 8 × 16 B × 1.2 = 153.6 GB, 2 H100 for memory, 8 GPUs a run of 24 h:
    # 8 × $6.88 × 24 h = $1,320.96 a run on p5.48xlarge.
    return dict(FT70B, name="ft8b", parameters_billion=8, runs_per_period=runs, gpus_per_run=8, hours_per_run=24,
                hours_on={}, deadline_hours=30)  # fmt: skip


def test_a_class_that_fits_the_headroom_of_an_existing_p5_pool_uses_it_not_a_new_pool() -> None:
    # 3 runs × 8 × 24 h = 576 GPU-hours ÷ 120 h ÷ 50 % = 9.6 → 10 GPUs: 2 nodes, within h100's max of 4.
    # Work: 3 × $1,320.96 = $3,962.88 a week, at the pool's own price.
    r = on("aws-train", _ft8b(3))
    (cs,) = r.classes
    ch = cs.chosen
    assert ch is not None and ch.placement.name == "h100" and ch.placement.instance_type == "p5.48xlarge"
    assert f"{float(ch.cost_per_run or 0):,.2f}" == "1,320.96"
    names = [c.placement.name for c in cs.choices]
    assert names.index("h100") < names.index("p5.48xlarge")
    (rec,) = r.pools
    assert rec.name == "h100" and rec.demand.raised is not None
    assert (rec.demand.raised.min, rec.demand.raised.desired, rec.demand.raised.max) == (0, 2, 4)
    assert f"{float(rec.demand.work_usd or 0):,.2f}" == "3,962.88"
    assert node_pool_snippet(r.pools) == ""
    h = headline(r)
    assert (
        "Uses existing pools of the stack: h100 (p5.48xlarge; no change: its max of 4 nodes holds it; $3,962.88 of "
        "work a week) for ft8b. Buys no new pool." in h
    )
    text = sizing_text(r)
    assert "training-p5-48xlarge" not in text
    assert "Use existing pool h100 (no change: its max of 4 nodes holds it), not a new pool of p5.48xlarge" in text
    assert "Uses existing pool h100 (H100-80GB) at $1,320.96 per run" in text


def test_demand_beyond_the_pool_s_max_raises_its_max_rather_than_adding_a_pool() -> None:
    # 14 runs: 2,688 GPU-hours ÷ 120 ÷ 50 % = 44.8 → 45 GPUs, 6 nodes + 1 spare (more than 4 nodes) = 7.
    r = on("aws-train", _ft8b(14))
    (rec,) = r.pools
    assert rec.name == "h100" and rec.demand.scale_max_nodes == 7
    assert "Uses existing pools of the stack: h100 (p5.48xlarge; raise max from 4 to 7; $18,493.44 of work" in (
        headline(r)
    )
    (pool,) = sizing_document(r)["node_pools"]
    assert pool["existing_scaling"] == {
        "declared": {"min": 0, "desired": 2, "max": 4},
        "raised": {"min": 0, "desired": 2, "max": 7},
    }


def test_a_pool_on_a_capacity_reservation_stays_within_it_and_the_class_overflows_to_a_new_pool() -> None:
    raw = example_estate("aws-train")
    raw["sites"][0]["node_pools"][0]["capacity"] = {
        "type": "capacity-reservation", "reservation_id": "cr-0123456789abcdef0", "instances": 4,
    }  # fmt: skip
    r = size(wfile(_ft8b(14)), "w.yaml", parse_estate(raw, "reserved"), "reserved", today=TODAY)
    (cs,) = r.classes
    assert cs.chosen is not None and cs.chosen.placement.name == "p5.48xlarge"
    assert [ch.status for ch in cs.choices if ch.placement.name == "h100"] == ["cloud pool full"]
    assert cs.overflow == (
        "cloud pool h100 holds 32 GPUs (4 nodes, the instances reserved); with ft8b it needs up to 56, 1 spare node "
        "included"
    )
    assert [rec.name for rec in r.pools] == ["training-p5-48xlarge"]


CHAT = {"name": "chat", "kind": "online-inference", "parameters_billion": 70, "precision": "bf16", "kv_cache_gb": 40,
        "runs_per_period": 2, "gpus_per_run": 4, "hours_per_run": 120, "latency_p95_ms": 800,
        "measured_on": "A100-80GB"}  # fmt: skip


def test_always_on_serving_raises_an_existing_pool_s_min_and_desired_to_its_floor() -> None:
    # chat: (140 + 40) GB × 1.2 = 216 GB over 4 GPUs; the cheapest that fits is p4de.24xlarge (8 × A100-80GB). Two
    # always-on replicas × 4 GPUs = 8 GPUs: one node, above the pool's min and desired of 0.
    raw = example_estate("aws-train")
    raw["sites"][0]["node_pools"].append(
        {"name": "chat", "role": "inference", "instance_type": "p4de.24xlarge", "scaling": {"min": 0, "max": 2}}
    )
    r = size(wfile(CHAT), "w.yaml", parse_estate(raw, "chat"), "chat", today=TODAY)
    (rec,) = r.pools
    assert rec.name == "chat" and rec.demand.placement.scale is not None
    assert "chat (p4de.24xlarge; raise min from 0 to 1 and desired from 0 to 1; $3,293.65 of work a week)" in (
        headline(r)
    )


def test_an_existing_pool_of_another_role_does_not_take_the_class() -> None:
    from gpufleet.sizing.placement import cloud_pool_placements  # here, so the other tests run before the fix

    spec = parse_estate(example_estate("aws-train"), "aws-train")
    (h100,) = [p for p in cloud_pool_placements(spec) if p.name == "h100"]
    c = wclass(**dict(CHAT, deadline_hours=None))
    assert evaluate(c, memory_need(c), h100) == (
        "pool h100 runs training work, not inference: a new pool of the class's role is recommended instead"
    )


def test_a_new_pool_ranks_after_the_existing_pool_of_its_type_even_when_the_catalog_quotes_it_lower() -> None:
    # The stack's own rate for p5.48xlarge, $60 an hour, is above the catalog's $55.04: a new pool on the site
    # would pay it too, so the existing pool still goes first (at $7.50 a GPU-hour: 8 × 7.5 × 24 = $1,440 a run).
    raw = example_estate("aws-train")
    raw["sites"][0]["prices"] = [
        {"instance_type": "p5.48xlarge", "usd_per_hour": 60, "date": "2026-10-01", "source": "EDP contract 2026"}
    ]
    r = size(wfile(_ft8b(3)), "w.yaml", parse_estate(raw, "rate"), "rate", today=TODAY)
    (cs,) = r.classes
    assert cs.chosen is not None and cs.chosen.placement.name == "h100"
    assert f"{float(cs.chosen.cost_per_run or 0):,.2f}" == "1,440.00"
    assert [rec.name for rec in r.pools] == ["h100"]
