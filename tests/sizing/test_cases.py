"""The issue's workload cases (#32): the pick a capacity planner would sign, and the reason the report prints.

Prices: model/catalog/aws_prices.json (us-east-1); the onprem stack's server-hour: 320,000 / (4 × 8,760) +
11 kW × 0.11 + 900 / 730 = $11.5753 (tests/model/test_pricing.py works it). Rings: see test_interconnect.py.
"""

from __future__ import annotations

import datetime as dt
from fractions import Fraction
from typing import Any

from gpufleet.render.sizing import sizing_text
from gpufleet.sizing.interconnect import allreduce_seconds
from gpufleet.sizing.report import SizingReport, size
from model.load import parse_estate
from model.pricing import server_hour_usd
from model.spec import BaremetalSite
from tests.conftest import example_estate
from tests.sizing.helpers import wfile

TODAY = dt.date(2026, 12, 1)
FT70B = {"name": "ft70b", "kind": "fine-tuning", "parameters_billion": 70, "runs_per_period": 1, "gpus_per_run": 32,
         "hours_per_run": 12, "measured_on": "H100-80GB", "hours_on": {"H200-141GB": 9}, "deadline_hours": 24,
         "gang": True}  # fmt: skip


def on(stack: str | None, *classes: dict[str, Any], **planning: Any) -> SizingReport:
    spec = parse_estate(example_estate(stack), stack) if stack else None
    return size(wfile(*classes, **planning), "w.yaml", spec, stack, today=TODAY)


def test_ft70b_on_onprem_uses_the_owned_h100_servers_not_p5en() -> None:
    # Before: p5en at $2,278.66 a run (4 × $63.296 × 9 h) over the owned servers, "weaker interconnect".
    # Owned `train`: 4 servers' ring on 4 × 400 Gbit/s InfiniBand, line rate 200 GB/s scaled as p5.48xlarge's
    # published busbw clears its own line rate (487.09 ÷ 400, the same H100 NVLink node; review item 6: before, the
    # owned fabric alone was taken at line rate): 243.545 GB/s, 2 × 31/32 × 140 GB ÷ 243.545 = 1.11376 s; the
    # fastest H100 ring (2+ × p5.48xlarge, published 487.09 GB/s): 0.55688 s. 12 h × 360 default steps = 4,320 ×
    # 0.55688 s = 0.66825 h more: 12.66825 h × 32 GPUs × $11.5753 / 8 = $586.56 a run.
    r = on("onprem", FT70B)
    (cs,) = r.classes
    chosen = cs.chosen
    assert chosen is not None and chosen.placement.name == "train" and chosen.owned
    site = parse_estate(example_estate("onprem"), "onprem").sites[0]
    assert isinstance(site, BaremetalSite) and site.cost is not None
    extra = 4320 * (
        allreduce_seconds(32, Fraction(140), Fraction(200) * Fraction("487.09") / 400)
        - allreduce_seconds(32, Fraction(140), Fraction("487.09"))
    )
    assert chosen.penalty_hours == extra / 3600
    expected = 32 * Fraction(str(server_hour_usd(site.cost))) / 8 * (12 + extra / 3600)
    assert f"{float(chosen.cost_per_run or 0):,.2f}" == f"{float(expected):,.2f}" == "586.56"
    text = sizing_text(r)
    assert "Uses owned servers: train (H100-80GB) at $586.56 per run" in text
    assert "Uses owned servers (already paid for): train for ft70b. Buys nothing" in text
    p5en = next(ch for ch in cs.choices if ch.placement.name == "p5en.48xlarge")
    assert f"{float(p5en.cost_per_run or 0):,.2f}" == "2,278.66"  # still listed, ranked after the owned servers


def test_a_mixed_gang_file_on_onprem_buys_no_cloud_pool_while_owned_servers_have_room() -> None:
    # A 16-GPU gang and a one-GPU batch class: both fit the 48 owned GPUs of `train`, so nothing is bought (before:
    # a new cloud pool next to an owned pool the same report called over-provisioned).
    batch = {"name": "embed", "kind": "batch-inference", "parameters_billion": 8, "precision": "int8",
             "runs_per_period": 100, "gpus_per_run": 1, "hours_per_run": 1, "measured_on": "H100-80GB",
             "deadline_hours": 4}  # fmt: skip
    r = on("onprem", dict(FT70B, gpus_per_run=16, hours_on={}), batch)
    assert [rec.name for rec in r.pools] == ["train"]
    assert r.pools[0].demand.classes == ("ft70b", "embed")
    assert "Buys nothing: owned servers take it all." in sizing_text(r)


def test_a_64_h100_two_week_fine_tune_scales_from_zero_with_a_spare_node() -> None:
    # 64 H100 for 336 h, one run a month (730 h a device): p5.48xlarge, 8 nodes a run + 1 spare, min 0. Work:
    # 64 × 336 = 21,504 GPU-hours × $55.04 / 8 = $147,947.52 a month. Before, the pool ran all month at its gang.
    r = on(None, dict(FT70B, gpus_per_run=64, hours_per_run=336, hours_on={}, deadline_hours=400),
           period="month", hours_per_device=730)  # fmt: skip
    (rec,) = r.pools
    d = rec.demand
    assert d.placement.name == "p5.48xlarge"
    assert (d.scale_min_nodes, d.max_nodes, d.spare_nodes, d.scale_max_nodes) == (0, 8, 1, 9)
    assert d.gpu_hours == 21504 and f"{float(d.gpu_hours * (d.placement.usd_per_gpu_hour or 0)):,.2f}" == "147,947.52"
    assert "(0-9 × p5.48xlarge, $147,947.52 of work a month)" in sizing_text(r)


def test_a_405b_pre_train_measured_on_no_gpu_is_not_ranked_onto_l4s() -> None:
    # Before: 1,024 L4 instances at $2.97M, ranked "ok" at the same hours as an H100.
    pretrain = {"name": "pretrain-405b", "kind": "training", "parameters_billion": 405, "runs_per_period": 1,
                "gpus_per_run": 1024, "hours_per_run": 720, "deadline_hours": 1000, "gang": True}  # fmt: skip
    r = on(None, pretrain, period="quarter", hours_per_device=2190)
    (cs,) = r.classes
    assert cs.chosen is None and r.pools == []
    assert "pretrain-405b fits" in cs.refused and "L4-24GB" in cs.refused and "gives no measured_on" in cs.refused
    assert "Not ranked: pretrain-405b fits" in sizing_text(r)
    # measured on H100: ranked on H100 only, never on L4
    timed = on(None, dict(pretrain, measured_on="H100-80GB"), period="quarter", hours_per_device=2190)
    (t,) = timed.classes
    assert t.chosen is not None and t.chosen.placement.gpu.id == "H100-80GB"


def test_hours_on_without_measured_on_still_refuses_ranking_across_gpu_models() -> None:
    # Review item 4: hours_on {B200: 400} and no measured_on ranked 128 x g6.48xlarge (L4) at $1,230,372.86 "ok",
    # the 720 h taken to hold on an L4 as on the GPU hours_per_run was (not) measured on.
    pretrain = {"name": "pretrain-405b", "kind": "training", "parameters_billion": 405, "runs_per_period": 1,
                "gpus_per_run": 1024, "hours_per_run": 720, "hours_on": {"B200-180GB": 400},
                "deadline_hours": 1000, "gang": True}  # fmt: skip
    r = on(None, pretrain, period="quarter", hours_per_device=2190)
    (cs,) = r.classes
    assert cs.chosen is None and r.pools == [] and "gives no measured_on" in cs.refused


CHAT = {"name": "chat-8b", "kind": "online-inference", "parameters_billion": 8, "kv_cache_gb": 2,
        "runs_per_period": 4, "gpus_per_run": 1, "hours_per_run": 168, "latency_p95_ms": 500}  # fmt: skip


def test_serving_measured_on_no_gpu_is_not_ranked_across_gpu_models() -> None:
    # Before: 4 replicas on g6.xlarge (L4) at $135.21 each, ranked "ok" at the 4 replicas sized on no GPU model,
    # as if an L4 replica served the tokens/s a B200's does.
    r = on(None, CHAT, hours_per_device=168)
    (cs,) = r.classes
    assert cs.chosen is None and r.pools == []
    assert "chat-8b fits" in cs.refused and "L4-24GB" in cs.refused and "gives no measured_on" in cs.refused
    assert "its 4 replicas cannot be compared across GPU models" in cs.refused
    assert "Add measured_on to classes[0] of w.yaml" in cs.refused and "speed_vs_measured" in cs.refused
    assert "Not ranked: chat-8b fits" in sizing_text(r)


def test_the_stack_comparison_does_not_place_untimed_serving_on_a_pool_of_another_gpu_model() -> None:
    # aws-train's pools hold H100 (h100) and L40S (l40s): chat-8b, sized on no GPU model, fits both. Before, the
    # comparison placed its 4 replicas on the cheapest pool as if either served the same tokens/s.
    r = on("aws-train", CHAT, hours_per_device=168)
    assert r.comparison is not None
    (why,) = dict(r.comparison.unplaced)["chat-8b"]
    assert "gives no measured_on" in why and "H100-80GB" in why and "L40S-48GB" in why
    assert "Add measured_on to classes[0] of w.yaml" in why
    assert "Class chat-8b fits no pool of the stack: chat-8b fits" in sizing_text(r)
    # measured on L40S, it is placed on a pool again
    timed = on("aws-train", dict(CHAT, measured_on="L40S-48GB"), hours_per_device=168)
    assert timed.comparison is not None and "chat-8b" not in dict(timed.comparison.unplaced)


def test_serving_measured_on_a_gpu_is_ranked_there_and_where_a_speed_ratio_is_declared() -> None:
    r = on(None, dict(CHAT, measured_on="H100-80GB"), hours_per_device=168)
    (cs,) = r.classes
    assert cs.refused == "" and cs.chosen is not None and cs.chosen.placement.gpu.id == "H100-80GB"
    assert {ch.placement.gpu.id for ch in cs.choices if ch.status == "ok"} == {"H100-80GB"}
    assert any(ch.placement.gpu.id == "L4-24GB" and ch.status == "no timing" for ch in cs.choices)
    assert "Fit but not ranked, no timing in the file (add speed_vs_measured): A100-40GB" in sizing_text(r)
    # An L4 replica declared a quarter as fast: ranked too, at 4 × 168 h of L4 per H100 replica-week.
    ratio = on(None, dict(CHAT, measured_on="H100-80GB", speed_vs_measured={"L4-24GB": 0.25}), hours_per_device=168)
    l4 = [ch for ch in ratio.classes[0].choices if ch.placement.gpu.id == "L4-24GB"]
    assert l4 and all(ch.status == "ok" and ch.hours_per_run == 672 for ch in l4)


def test_notebooks_measured_on_no_gpu_are_still_ranked_and_the_training_refusal_names_the_file() -> None:
    notebooks = {"name": "notebooks", "kind": "interactive", "parameters_billion": 8, "runs_per_period": 25,
                 "gpus_per_run": 1, "hours_per_run": 8, "latency_p95_ms": 2000}  # fmt: skip
    pretrain = {"name": "pretrain-405b", "kind": "training", "parameters_billion": 405, "runs_per_period": 1,
                "gpus_per_run": 1024, "hours_per_run": 720, "deadline_hours": 1000, "gang": True}  # fmt: skip
    r = on(None, notebooks, pretrain, period="quarter", hours_per_device=2190)
    nb, pt = r.classes
    assert nb.refused == "" and nb.chosen is not None
    assert "Add measured_on to classes[1] of w.yaml (the GPU model hours_per_run was measured on)" in pt.refused
