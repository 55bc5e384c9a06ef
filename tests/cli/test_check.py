"""`gpufleet check`: exit 0 on a passing stack, 1 on a mandatory violation, 2 on bad input; json output; the
`--policy-pack-config` files it writes."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.engine.plan import Plan
from gpufleet.review import check, review
from model.load import ESTATE_KEY
from model.spec import EstateSpec
from tests.conftest import ROOT, example_config, write_project
from tests.policies.broken_stack import BREAKS, broken_config

runner = CliRunner()


def test_check_passes_the_example_stack(monkeypatch: pytest.MonkeyPatch, example_plans: dict[str, Plan]) -> None:
    monkeypatch.setattr(review, "synth_stack", lambda project, stack, stack_file, **_: example_plans[stack])
    result = runner.invoke(app, ["check", "--stack", "aws-train", "--project", str(ROOT)])
    assert result.exit_code == 0, result.output
    assert "0 mandatory" in result.output or "no violations" in result.output


def test_check_exits_1_with_json_naming_the_broken_rules(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, broken: tuple[Plan, EstateSpec]
) -> None:
    monkeypatch.setattr(review, "synth_stack", lambda project, stack, stack_file, **_: broken[0])
    project = write_project(tmp_path, broken_config())
    result = runner.invoke(app, ["check", "--stack", "test", "--project", str(project), "--format", "json"])
    assert result.exit_code == 1
    doc = json.loads(result.output)
    assert doc["passed"] is False
    rules = {f["rule"] for levels in doc["packs"].values() for f in levels.get("mandatory", [])}
    assert rules == set(BREAKS)
    found = doc["packs"]["cost-tags"]["mandatory"][0]
    assert (found["remediation"] and found["resource"]) or found["rule"] == "budget-cap"


def test_check_rejects_an_unknown_rule_id_in_enforcement_overrides(tmp_path: Path) -> None:
    config = example_config("aws-train")
    config[ESTATE_KEY]["policies"]["enforcement"] = {"budget-cap": "advisory", "no-such-rule": "disabled"}
    project = write_project(tmp_path, config)
    result = runner.invoke(app, ["check", "--stack", "test", "--project", str(project)])
    assert result.exit_code == 2
    assert "policies.enforcement.no-such-rule" in result.output
    assert "budget-cap" in result.output  # the known ids are listed


def test_write_config_gives_each_pack_its_policies_with_explicit_levels(tmp_path: Path) -> None:
    config = example_config("aws-train")
    config[ESTATE_KEY]["policies"]["enforcement"] = {"fsx-colocated": "mandatory"}
    config[ESTATE_KEY]["policies"]["imds_hop_limit_exceptions"] = ["l40s"]
    (tmp_path / "p").mkdir()
    project = write_project(tmp_path / "p", config)
    out = tmp_path / "cfg"
    result = runner.invoke(app, ["check", "--stack", "test", "--project", str(project), "--write-config", str(out)])
    assert result.exit_code == 0, result.output
    packs = {p.folder: p for p in check.packs()}
    assert sorted(p.stem for p in out.glob("*.json")) == sorted(packs)
    for path in out.glob("*.json"):
        doc = json.loads(path.read_text())
        assert set(doc) <= {p.name for p in packs[path.stem].policies}
        assert all("enforcementLevel" in entry for entry in doc.values())
        assert f"--policy-pack policies/{path.stem} --policy-pack-config {path}" in result.output
    guard = json.loads((out / "gpu_guardrails.json").read_text())
    assert guard["fsx-colocated"] == {"enforcementLevel": "mandatory"}
    seg = json.loads((out / "segmentation.json").read_text())
    assert seg["imds-v2-hop-limit"]["imdsHopLimitExceptions"] == ["l40s"]
    costs = json.loads((out / "cost_tags.json").read_text())
    # maxUsdPerHour: aws-train's cost envelope at max (tests/review/cost/test_bill.py works it: $312.1984/h), so the
    # rule under `pulumi preview` judges the figure `gpufleet cost` shows
    assert costs["budget-cap"] == {
        "budgetUsdPerHour": 400.0,
        "maxUsdPerHour": 312.1984,
        "enforcementLevel": "mandatory",
    }


def test_check_exits_1_naming_a_teardown_deletion_that_would_fail(
    monkeypatch: pytest.MonkeyPatch, example_plans: dict[str, Plan]
) -> None:
    """EFS mount targets retained on delete keep their subnets and security group in use: `pulumi destroy
    --exclude-protected` would fail on them, and check says so."""
    plan = example_plans["aws-train"]
    retained = [
        dataclasses.replace(r, retain_on_delete=True) if r.type == "aws:efs/mountTarget:MountTarget" else r
        for r in plan.resources
    ]
    broken = Plan(plan.project, plan.stack, retained, plan.outputs, plan.warnings)
    monkeypatch.setattr(review, "synth_stack", lambda project, stack, stack_file, **_: broken)
    result = runner.invoke(app, ["check", "--stack", "aws-train", "--project", str(ROOT), "--summary"])
    assert result.exit_code == 1, result.output
    assert "destroy (pulumi destroy --exclude-protected, simulated)" in result.output
    failures = [line for line in result.output.splitlines() if line.startswith("  [destroy]")]
    assert any("Subnet use1-net-private-us-east-1a" in line and "API_DeleteSubnet" in line for line in failures)
    assert any("SecurityGroup use1-storage-home-sg" in line for line in failures)
