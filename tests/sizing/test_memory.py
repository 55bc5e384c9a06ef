"""Memory fit (ZeRO, arXiv 1910.02054; Accelerate's model size estimator): 16 B/param for mixed-precision Adam;
inference from weights + KV cache + 20 %."""

from __future__ import annotations

from fractions import Fraction

from gpufleet.sizing.arithmetic import memory_fit, memory_need
from gpufleet.sizing.placement import Choice, catalog_placements, evaluate, size_class
from model import catalog
from tests.sizing.helpers import wclass

H100 = catalog.gpu_model("H100-80GB")


def test_7b_adam_training_states_are_112_gb() -> None:
    need = memory_need(wclass(parameters_billion=7))
    assert need.bytes_per_parameter == 16
    assert need.states_gb == 112
    assert need.required_gb == Fraction(1344, 10)  # + the 20 % activation margin


def test_7b_training_does_not_fit_one_80gb_gpu_even_before_activations() -> None:
    bare = memory_need(wclass(parameters_billion=7, memory_margin_pct=0))
    assert bare.required_gb == 112
    fit = memory_fit(bare, H100)
    assert not fit.fits_one_gpu
    assert fit.gpus_needed == 2


def test_7b_training_fits_a_sharded_set_of_h100s() -> None:
    c = wclass(parameters_billion=7, gpus_per_run=4)
    need = memory_need(c)
    fit = memory_fit(need, H100)
    assert fit.gpus_needed == 2 and fit.gpus_needed * fit.gpu_memory_gb >= need.required_gb
    p5 = next(p for p in catalog_placements("us-east-1") if p.name == "p5.48xlarge")
    assert isinstance(evaluate(c, need, p5), Choice)
    unsharded = wclass(parameters_billion=7, gpus_per_run=1)
    assert "needs 2 × H100-80GB" in str(evaluate(unsharded, memory_need(unsharded), p5))


def test_inference_needs_weights_at_serving_precision_plus_kv_cache_plus_20_percent() -> None:
    c = wclass(
        kind="online-inference",
        parameters_billion=70,
        precision="bf16",
        kv_cache_gb=40,
        deadline_hours=None,
        latency_p95_ms=500,
    )
    need = memory_need(c)
    assert need.states_gb == 140
    assert need.required_gb == 216  # (140 + 40) × 1.2
    int4 = memory_need(c.model_copy(update={"precision": "int4"}))
    assert int4.states_gb == 35


def test_70b_inference_is_placed_on_a_multi_gpu_node() -> None:
    c = wclass(
        name="chat-70b",
        kind="online-inference",
        parameters_billion=70,
        kv_cache_gb=40,
        gpus_per_run=4,
        runs_per_period=2,
        hours_per_run=168,
        measured_on="H100-80GB",
        deadline_hours=None,
        latency_p95_ms=800,
    )
    sized = size_class(c, catalog_placements("us-east-1"))
    chosen = sized.chosen
    assert chosen is not None
    assert chosen.gpus_needed > 1
    assert chosen.placement.gpus_per_node >= c.gpus_per_run > 1
    assert chosen.nodes_per_run == 1
    # a replica never spans nodes, so no single-GPU instance type is even a candidate
    assert all(ch.placement.gpus_per_node >= 4 for ch in sized.choices)


def test_inference_replica_larger_than_any_node_is_not_placed() -> None:
    c = wclass(kind="online-inference", parameters_billion=70, gpus_per_run=16, deadline_hours=None, latency_p95_ms=800)
    assert size_class(c, catalog_placements("us-east-1")).choices == []
