"""What a recommended pool's work costs a period and how it starts (review of #32, items 5 and 7).

Prices: model/catalog/aws_prices.json, us-east-1 p5.48xlarge $55.04 an hour ($6.88 a GPU-hour)."""

from __future__ import annotations

from fractions import Fraction

from gpufleet.render.sizing import headline, node_pool_snippet
from tests.sizing.test_cases import on

G12 = {"name": "ft-13b", "kind": "fine-tuning", "parameters_billion": 13, "runs_per_period": 10, "gpus_per_run": 12,
       "hours_per_run": 4, "measured_on": "H100-80GB", "deadline_hours": 8, "gang": True}  # fmt: skip
CHAT = {"name": "chat-70b", "kind": "online-inference", "parameters_billion": 70, "precision": "bf16",
        "kv_cache_gb": 40, "gpus_per_run": 4, "hours_per_run": 168, "measured_on": "H100-80GB",
        "latency_p95_ms": 800, "throughput": {"requests_per_second": 20, "tokens_per_request": 500,
        "tokens_per_second_per_replica": 2400, "source": "vllm benchmark on 4 x H100"}}  # fmt: skip
WEEK = {"period": "week", "hours_per_device": 168}


def test_work_cost_bills_whole_nodes_for_a_run_across_nodes() -> None:
    # 12 GPUs a run on 8-GPU p5.48xlarge bills 2 nodes = 16 GPUs: 16 × $6.88 × 4 h = $440.32 a run, × 10 runs =
    # $4,403.20 a week (before: 12 × 4 × 10 = 480 GPU-hours × $6.88 = $3,302.40).
    r = on(None, G12, **WEEK)
    (rec,) = r.pools
    assert rec.demand.work_usd == Fraction("4403.20")
    assert "$4,403.20 of work a week" in headline(r)


def test_work_cost_of_an_always_on_floor_is_its_whole_nodes_all_period() -> None:
    # 20 req/s × 500 tokens ÷ 2,400 tokens/s = 4.17 → 5 replicas × 4 GPUs = 20 GPUs → 3 p5.48xlarge always on:
    # 3 × $55.04 × 168 h = $27,740.16 a week (before: 20 GPUs × 168 h × $6.88 = $23,116.80).
    r = on(None, CHAT, **WEEK)
    (rec,) = r.pools
    assert rec.demand.scale_min_nodes == 3
    assert f"{float(rec.demand.work_usd or 0):,.2f}" == "27,740.16"


def test_desired_is_the_floor_so_no_idle_node_launches_before_a_gang_arrives() -> None:
    # Review item 7: an 8-node gang got {min 0, desired 6, max 9}: 6 idle p5.48xlarge (~$330 an hour) at first up.
    r = on(None, dict(G12, runs_per_period=1, gpus_per_run=64, hours_per_run=336, deadline_hours=400),
           period="month", hours_per_device=730)  # fmt: skip
    (rec,) = r.pools
    d = rec.demand
    assert (d.scale_min_nodes, d.scale_desired_nodes, d.scale_max_nodes) == (0, 0, 9)
    assert "scaling: {min: 0, desired: 0, max: 9}" in node_pool_snippet(r.pools)
    serving = on(None, CHAT, **WEEK).pools[0].demand
    assert serving.scale_desired_nodes == serving.scale_min_nodes == 3


def test_serving_scales_between_its_steady_and_peak_replicas() -> None:
    # Review item 8: min = max = peak replicas, so serving never scaled. At 10 requests/s steady: 10 × 500 ÷ 2,400
    # = 2.08 -> 3 replicas × 4 GPUs = 12 GPUs = 2 p5.48xlarge always on; the peak's 5 replicas (20 GPUs) = 3 nodes.
    steady = dict(CHAT, throughput={**CHAT["throughput"], "steady_requests_per_second": 10})  # type: ignore[dict-item]
    (rec,) = on(None, steady, **WEEK).pools
    d = rec.demand
    assert (d.scale_min_nodes, d.scale_desired_nodes, d.max_nodes) == (2, 2, 3)
    (peak,) = on(None, CHAT, **WEEK).pools
    assert (peak.demand.scale_min_nodes, peak.demand.max_nodes) == (3, 3)
