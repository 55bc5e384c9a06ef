"""A stack's pools are used only up to their max size, burst pools as well as owned ones (issue #32 audit, gap 1).

The hybrid stack: owned `base` holds 4 servers × 8 H100 = 32 GPUs; `burst-h100` (p5.48xlarge, scaling max 4)
holds 4 × 8 = 32. p5.48xlarge on demand in us-east-1: $55.04 an hour, $6.88 a GPU-hour.
"""

from __future__ import annotations

from gpufleet.render.sizing import headline, node_pool_snippet, sizing_text
from tests.sizing.test_cases import FT70B, on

# One run a month of 64 H100 for two weeks (336 h), measured on H100.
FT64 = dict(FT70B, name="ft64", gpus_per_run=64, hours_per_run=336, hours_on={}, deadline_hours=400)
MONTH = {"period": "month", "hours_per_device": 730}


def test_a_64_gpu_gang_is_not_sent_to_a_burst_pool_of_32_gpus() -> None:
    # Before: "Bursts to the stack's pools: burst-h100" at nodes 0/0/9, past its max of 4. Now a new p5.48xlarge
    # pool: 8 nodes a run + 1 spare = 9; 64 × 336 = 21,504 GPU-hours × $6.88 = $147,947.52 a month.
    r = on("hybrid", FT64, **MONTH)
    (cs,) = r.classes
    assert cs.chosen is not None and cs.chosen.placement.name == "p5.48xlarge"
    assert cs.too_small == (
        "base holds 32 GPUs, a run needs 64",
        "burst-h100 holds 32 GPUs at its max of 4 nodes, a run needs 64",
    )
    (rec,) = r.pools
    assert (rec.name, rec.demand.scale_min_nodes, rec.demand.scale_max_nodes) == ("training-p5-48xlarge", 0, 9)
    h = headline(r)
    assert h.startswith(
        "Uses no owned servers. Buys: training-p5-48xlarge (0-9 × p5.48xlarge, $147,947.52 of work a month) for "
        "ft64, where no owned server has room or fits."
    )
    assert "Bursts to" not in h and "burst-h100 holds 32 GPUs at its max of 4 nodes, a run needs 64" in h
    assert "max: 9" in node_pool_snippet(r.pools)
    assert "Not placed on a stack pool too small for one run at its max: base holds 32 GPUs" in sizing_text(r)


def _small(runs: int) -> dict[str, object]:
    # An 8B fine-tune on one node: 8 × 16 B × 1.2 = 153.6 GB, 2 H100 for memory, 8 GPUs a run.
    return dict(FT70B, name="ftb", parameters_billion=8, runs_per_period=runs, gpus_per_run=8, hours_per_run=24,
                hours_on={}, deadline_hours=30)  # fmt: skip


# Fills `base`: 2 runs × 32 GPUs × 24 h = 1,536 GPU-hours ÷ 120 h ÷ 50 % = 25.6 → 26, the gang's 32 at least.
FILL_BASE = dict(FT70B, name="fta", runs_per_period=2, hours_per_run=24, hours_on={}, deadline_hours=30)


def test_a_class_the_owned_pool_cannot_take_bursts_while_the_burst_pool_holds_it() -> None:
    # ftb on base with fta: (1,536 + 1,920) ÷ 120 ÷ 50 % = 57.6 → 58 > 32, owned pool full. On burst-h100:
    # 10 × 8 × 24 = 1,920 ÷ 120 ÷ 50 % = 32 GPUs = 4 nodes, no spare (not more than 4 nodes): within its max.
    # Work: 10 runs × 8 × $6.88 × 24 h = $13,209.60 a week.
    r = on("hybrid", FILL_BASE, _small(10))
    a, b = r.classes
    assert a.chosen is not None and a.chosen.placement.name == "base"
    assert b.chosen is not None and b.chosen.placement.name == "burst-h100"
    (burst,) = [rec for rec in r.pools if rec.name == "burst-h100"]
    assert (burst.demand.max_gpus, burst.demand.scale_max_nodes) == (32, 4)
    assert f"{float(burst.demand.work_usd or 0):,.2f}" == "13,209.60"
    assert "Bursts to the stack's pools: burst-h100 ($13,209.60 of work) for ftb." in headline(r)


def test_demand_beyond_the_burst_pool_s_max_overflows_to_a_new_pool() -> None:
    # 11 runs: 2,112 ÷ 120 ÷ 50 % = 35.2 → 36 GPUs, 5 nodes + 1 spare = 6 nodes (48 GPUs) > burst-h100's 4 (32).
    # So ftb goes, whole, to a new p5.48xlarge pool: 11 × 8 × $6.88 × 24 h = $14,530.56 a week.
    r = on("hybrid", FILL_BASE, _small(11))
    _, b = r.classes
    assert b.chosen is not None and b.chosen.placement.name == "p5.48xlarge"
    assert [ch.status for ch in b.choices if ch.placement.name == "burst-h100"] == ["burst pool full"]
    assert "burst pool burst-h100 holds 32 GPUs (4 nodes); with ftb it needs up to 48, 1 spare node included" in (
        b.overflow
    )
    (new,) = [rec for rec in r.pools if rec.name == "training-p5-48xlarge"]
    assert f"{float(new.demand.work_usd or 0):,.2f}" == "14,530.56"
    assert "Bursts to" not in headline(r)
