"""Workload files: the example loads; every mistake names the file and the YAML path, never a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.render.sizing import sizing_text
from gpufleet.sizing.report import size
from gpufleet.sizing.workloads import load_workloads, parse_workloads
from model.load import SpecError
from tests.sizing.helpers import raw_file, wfile

ROOT = Path(__file__).resolve().parents[2]


def problems(raw: Any) -> list[str]:
    with pytest.raises(SpecError) as e:
        parse_workloads(raw, "w.yaml")
    return e.value.problems


def test_example_workload_file_loads() -> None:
    w = load_workloads(ROOT / "examples" / "workloads.yaml")
    assert [c.name for c in w.classes] == ["pretrain-7b", "finetune-13b", "chat-70b", "embed-batch", "notebooks"]
    assert w.planning.utilisation_pct == [50, 60, 70]


def test_unknown_key_is_named_with_its_path() -> None:
    raw = raw_file()
    raw["classes"][0]["gpus"] = 4
    assert problems(raw) == [
        "w.yaml: classes[0].gpus: unknown key (check the spelling; examples/workloads.yaml shows every key)"
    ]


def test_missing_key_is_named_with_its_path() -> None:
    raw = raw_file()
    del raw["planning"]["hours_per_device"]
    assert problems(raw) == ["w.yaml: planning.hours_per_device: required key is missing"]


def test_more_hours_per_device_than_the_period_has_is_rejected() -> None:
    (msg,) = problems(raw_file(hours_per_device=200))
    assert msg == "w.yaml: planning.hours_per_device: 200 hours per device is more than a week has (168 hours)"


def test_utilisation_scenario_outside_0_to_100_names_its_index() -> None:
    (msg,) = problems(raw_file(utilisation_pct=[50, 120]))
    assert msg.startswith("w.yaml: planning.utilisation_pct[1]: 120 must be at least 0.01 and at most 100")


def test_a_class_needs_exactly_one_objective() -> None:
    raw = raw_file()
    raw["classes"][0]["latency_p95_ms"] = 100
    (msg,) = problems(raw)
    assert msg == "w.yaml: classes[0]: class train-7b needs exactly one objective: deadline_hours or latency_p95_ms"


def test_runs_started_together_needs_gang() -> None:
    raw = raw_file()
    raw["classes"][0]["runs_started_together"] = 2
    (msg,) = problems(raw)
    assert msg.startswith("w.yaml: classes[0].runs_started_together: runs that start together are a gang")


def test_unknown_gpu_model_lists_the_known_ones() -> None:
    raw = raw_file()
    raw["classes"][0]["measured_on"] = "H100"
    (msg,) = problems(raw)
    assert msg.startswith("w.yaml: classes[0].measured_on: unknown GPU model 'H100'; known: ")
    assert "H100-80GB" in msg


def test_duplicate_class_names_are_rejected() -> None:
    raw = raw_file()
    raw["classes"].append(dict(raw["classes"][0]))
    (msg,) = problems(raw)
    assert msg == "w.yaml: classes[1].name: class names must be unique; train-7b appears twice"


def test_kv_cache_on_a_training_class_is_rejected() -> None:
    raw = raw_file()
    raw["classes"][0]["kv_cache_gb"] = 10
    (msg,) = problems(raw)
    assert msg.startswith("w.yaml: classes[0].kv_cache_gb: a training class has no KV cache")


def test_bad_yaml_names_the_line(tmp_path: Path) -> None:
    f = tmp_path / "w.yaml"
    f.write_text("planning: [unclosed\n")
    with pytest.raises(SpecError) as e:
        load_workloads(f)
    assert e.value.problems[0].startswith(f"{f}: not valid YAML (line ")


def test_a_file_that_is_not_a_mapping_is_rejected(tmp_path: Path) -> None:
    f = tmp_path / "w.yaml"
    f.write_text(yaml.safe_dump(["a", "b"]))
    with pytest.raises(SpecError) as e:
        load_workloads(f)
    assert e.value.problems == [f"{f}: must be a mapping with assumptions, planning and classes"]


def test_every_problem_of_a_file_is_reported_in_one_run(tmp_path: Path) -> None:
    """Nine problems in three models: pydantic's field errors and every cross-field rule, all in one run, each
    naming the file and the YAML path. Before, a field error hid its model's cross-field rules, and the planning
    rules hid the class rules: three runs to see them."""
    second = {
        "name": "train-7b",  # 1. the same name as classes[0]
        "kind": "fine-tuning",
        "parameters_billion": 13,
        "runs_per_period": 2,
        "gpus_per_run": 8,
        "hours_per_run": 4,
        "deadline_hours": 8,
        "latency_p95_ms": 100,  # 2. two objectives
        "runs_started_together": 2,  # 3. without gang: true
        "hours_on": {"H100": 3},  # 4. not a catalog GPU model
    }
    first = dict(raw_file()["classes"][0], gpus_per_run=0, kv_cache_gb=10)  # 5. field error, 6. KV cache in training
    raw = raw_file(first, second, hours_per_device=200)  # 7. more hours than a week has
    raw["planning"]["utilisation_pct"] = [50, 120]  # 8. over 100 %
    raw["planning"]["growth_pct"] = -1  # 9. a field error in planning too
    f = tmp_path / "w.yaml"
    f.write_text(yaml.safe_dump(raw))
    with pytest.raises(SpecError) as e:
        load_workloads(f)
    lines = [line.removeprefix(f"{f}: ") for line in e.value.problems]
    unknown_gpu = next(x for x in lines if x.startswith("classes[1].hours_on.H100: unknown GPU model 'H100'"))
    assert sorted(lines) == sorted(
        [
            "planning.growth_pct: Input should be greater than or equal to 0",
            "planning.hours_per_device: 200 hours per device is more than a week has (168 hours)",
            "planning.utilisation_pct[1]: 120 must be at least 0.01 and at most 100",
            "classes[0].gpus_per_run: Input should be greater than or equal to 1",
            "classes[0].kv_cache_gb: a training class has no KV cache; put activation room in memory_margin_pct",
            "classes[1]: class train-7b needs exactly one objective: deadline_hours or latency_p95_ms",
            "classes[1].runs_started_together: runs that start together are a gang: set gang: true",
            unknown_gpu,
            "classes[1].name: class names must be unique; train-7b appears twice",
        ]
    )


def test_online_inference_replicas_follow_from_requests_per_second_and_tokens() -> None:
    # 20 requests/s × 500 tokens = 10,000 tokens/s ÷ 2,400 tokens/s per replica = 4.17 -> 5 replicas
    serve = {"name": "chat", "kind": "online-inference", "parameters_billion": 70, "gpus_per_run": 4,
             "hours_per_run": 120, "latency_p95_ms": 800, "measured_on": "H100-80GB",
             "throughput": {"requests_per_second": 20, "tokens_per_request": 500,
                            "tokens_per_second_per_replica": 2400, "source": "vLLM benchmark on H100, 2026-11"}}  # fmt: skip
    (c,) = wfile(serve).classes
    assert c.runs_per_period == 5 and c.throughput is not None and c.throughput.replicas == 5
    text = sizing_text(size(wfile(serve), "w.yaml"))
    assert "replicas from throughput: 20 requests/s × 500 tokens ÷ 2,400 tokens/s per replica = 5" in text
    with pytest.raises(SpecError) as err:
        parse_workloads(raw_file(dict(serve, runs_per_period=3)), "w.yaml")
    assert "classes[0].runs_per_period: 3 replicas disagree with throughput's 5" in str(err.value)


def test_throughput_needs_the_gpu_model_it_was_measured_on_and_places_there_only() -> None:
    # Review item 8: "vllm benchmark on 4 x H100" with no measured_on gave 5 replicas from H100 tokens/s, then
    # bought p4de (A100) at those 5 replicas.
    serve = {"name": "chat-70b", "kind": "online-inference", "parameters_billion": 70, "kv_cache_gb": 40,
             "gpus_per_run": 4, "hours_per_run": 168, "latency_p95_ms": 800,
             "throughput": {"requests_per_second": 20, "tokens_per_request": 500,
                            "tokens_per_second_per_replica": 2400, "source": "vllm benchmark on 4 x H100"}}  # fmt: skip
    with pytest.raises(SpecError) as err:
        parse_workloads(raw_file(serve, hours_per_device=168), "w.yaml")
    assert "classes[0].measured_on: throughput's tokens/s per replica hold on one GPU model" in str(err.value)
    r = size(wfile(dict(serve, measured_on="H100-80GB"), hours_per_device=168), "w.yaml")
    (cs,) = r.classes
    assert {ch.placement.gpu.id for ch in cs.choices} == {"H100-80GB"}
    assert cs.chosen is not None and cs.chosen.placement.name == "p5.48xlarge"
