"""`gpufleet size` end to end: text verdict, markdown decision record, json, and bad input exits 2."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from gpufleet.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = str(ROOT / "examples" / "workloads.yaml")
runner = CliRunner()


def test_size_against_aws_train_gives_a_verdict_per_pool() -> None:
    res = runner.invoke(app, ["size", WORKLOADS, "--stack", "aws-train", "--project", str(ROOT)])
    assert res.exit_code == 0, res.output
    assert "Verdict for stack aws-train: over-provisioned." in res.output
    assert "Gang minimum: 8 compatible GPUs" in res.output
    # The training classes take the stack's own p5.48xlarge pool `h100` (before: a new training-p5-48xlarge pool).
    assert "Uses existing pools of the stack: h100 (p5.48xlarge; no change: its max of 4 nodes holds it;" in res.output
    assert "- name: training-p5-48xlarge" not in res.output and "- name: inference-p5-48xlarge" in res.output


def test_markdown_is_a_decision_record_with_formula_inputs_and_assumptions() -> None:
    res = runner.invoke(app, ["size", WORKLOADS, "--format", "markdown", "--project", str(ROOT)])
    assert res.exit_code == 0, res.output
    for heading in ("### Decision record", "#### Formula", "#### Units", "#### Inputs", "#### Assumptions"):
        assert f"\n{heading}\n" in res.output
    assert "Owner: ml-platform." in res.output and "Review by 2027-03-01" in res.output
    # 60 %: 1,580 GPU-hours ÷ (168 × 0.6) = 15.67 + chat-70b's 8 always-on GPUs = 23.67 -> 24 (before: 29.01, 30)
    assert "| 60 % | 23.67 | 24 |" in res.output
    assert "```yaml\nnode_pools:" in res.output


def test_json_carries_scenarios_and_stack_verdict() -> None:
    res = runner.invoke(app, ["size", WORKLOADS, "-s", "aws-train", "-f", "json", "--project", str(ROOT)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["demand_gpu_hours"] == 2924
    assert [s["total_rounded"] for s in doc["scenarios"]] == [32, 28, 26]  # tests/sizing/test_pools.py works them
    assert doc["installed_gpus"] == {"min": 28, "max": 33}  # Σ pools: 13 + 10 + 2 + 3 and 18 + 10 + 2 + 3
    assert doc["stack"]["verdict"] == "over-provisioned"


def test_bad_workload_file_exits_2_naming_file_and_path(tmp_path: Path) -> None:
    raw = yaml.safe_load(Path(WORKLOADS).read_text())
    raw["classes"][0]["gpus_per_run"] = 0
    raw["classes"][1]["latency_p95_ms"] = 100  # a second objective: a cross-field rule of another class
    raw["planning"]["hours_per_device"] = 200  # and one of the planning window, all reported in one run
    f = tmp_path / "w.yaml"
    f.write_text(yaml.safe_dump(raw))
    res = runner.invoke(app, ["size", str(f), "--project", str(ROOT)])
    assert res.exit_code == 2
    assert f"{f}: classes[0].gpus_per_run: Input should be greater than or equal to 1" in res.output
    assert f"{f}: classes[1]: class finetune-13b needs exactly one objective" in res.output
    assert f"{f}: planning.hours_per_device: 200 hours per device is more than a week has" in res.output
    assert "Traceback" not in res.output


def test_json_carries_the_headline_and_each_choice_s_busbw_penalty_and_ownership() -> None:
    # Review item 10: the ring's figure is nccl-tests bus bandwidth (key busbw_gb_per_s, was gb_per_s_per_gpu).
    res = runner.invoke(app, ["size", WORKLOADS, "-s", "onprem", "-f", "json", "--project", str(ROOT)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["headline"].startswith("Uses owned servers")
    chs = [ch for cs in doc["classes"] for ch in cs["choices"]]
    assert all({"owned", "penalty_hours"} <= ch.keys() for ch in chs)
    assert any(ch["owned"] for ch in chs)
    rings = [ch["ring"] for ch in chs if ch["ring"]]
    assert rings and all("busbw_gb_per_s" in g and "gb_per_s_per_gpu" not in g for g in rings)
    assert all({"refused", "overflow", "too_small"} <= cs.keys() for cs in doc["classes"])
    assert all("work_usd" in p for p in doc["node_pools"])


def test_a_bad_throughput_block_is_the_one_error_reported(tmp_path: Path) -> None:
    # Review item 10: tokens_per_request 0 also printed "runs_per_period: required key is missing".
    raw = yaml.safe_load(Path(WORKLOADS).read_text())
    raw["classes"] = [{"name": "chat-70b", "kind": "online-inference", "parameters_billion": 70, "gpus_per_run": 4,
                       "hours_per_run": 168, "measured_on": "H100-80GB", "latency_p95_ms": 800,
                       "throughput": {"requests_per_second": 20, "tokens_per_request": 0,
                                      "tokens_per_second_per_replica": 2400, "source": "vllm on 4 x H100"}}]  # fmt: skip
    raw["planning"]["hours_per_device"] = 168
    f = tmp_path / "w.yaml"
    f.write_text(yaml.safe_dump(raw))
    res = runner.invoke(app, ["size", str(f), "--project", str(ROOT)])
    assert res.exit_code == 2
    assert "classes[0].throughput.tokens_per_request: Input should be greater than 0" in res.output
    assert "runs_per_period" not in res.output
