"""The reality checks where they show: preview (text, markdown, json), check (exit 1), export --render, charts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.engine import synth
from gpufleet.engine.plan import Plan
from gpufleet.review import check, review
from gpufleet.review.findings import Findings
from gpufleet.review.reality import checks
from model import versions
from tests.conftest import ROOT
from tests.review.reality.plans import PlanBuilder

runner = CliRunner()


def ghost_namespace_plan() -> Plan:
    """The onprem site's cluster with one ConfigMap in a namespace nothing creates."""
    b = PlanBuilder("dc1")
    b.obj({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "ghost"}})
    return b.plan()


def clean_plan() -> Plan:
    b = PlanBuilder("dc1")
    ns = b.namespace("team")
    b.obj({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "team"}}, deps=[ns])
    return b.plan()


def invoke(monkeypatch: pytest.MonkeyPatch, plan: Plan, *args: str) -> tuple[int, str]:
    """Run a command on `plan` with the onprem spec; the policy packs and journeys see nothing wrong (they have
    their own tests), so the exit code is the first-up verdict's."""
    monkeypatch.setattr(review, "synth_stack", lambda project, stack, stack_file, **_: plan)
    monkeypatch.setattr(check, "evaluate", lambda plan, spec, max_usd_per_hour=None: Findings())
    # A hand-built plan holds no tenant's queues: the canonical journeys are tested on real plans (tests/review/
    # reality/journeys/test_promised.py).
    monkeypatch.setattr(checks, "promised", lambda spec, window, views: [])
    result = runner.invoke(app, [*args, "--stack", "onprem", "--project", str(ROOT)])
    return result.exit_code, result.output


def test_check_fails_on_a_first_up_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    code, output = invoke(monkeypatch, ghost_namespace_plan(), "check")
    assert code == 1
    assert "first up: 1 problems (1 namespace" in output
    assert "ConfigMap ghost/settings is in namespace ghost, which nothing in the stack creates" in output


def test_check_json_carries_the_first_up_problems(monkeypatch: pytest.MonkeyPatch) -> None:
    code, output = invoke(monkeypatch, ghost_namespace_plan(), "check", "--format", "json")
    assert code == 1
    (problem,) = json.loads(output)["first_up"]["problems"]
    assert (problem["check"], problem["name"], problem["missing"]) == (
        "namespace",
        "ConfigMap ghost/settings",
        "namespace ghost",
    )


def test_check_passes_a_plan_without_problems(monkeypatch: pytest.MonkeyPatch) -> None:
    code, output = invoke(monkeypatch, clean_plan(), "check", "--format", "json")
    assert json.loads(output)["first_up"]["problems"] == []
    assert code == 0, output


def test_preview_json_has_a_top_level_first_up_with_problems(monkeypatch: pytest.MonkeyPatch) -> None:
    code, output = invoke(monkeypatch, ghost_namespace_plan(), "preview", "--format", "json")
    assert code == 0  # preview shows first-up problems; check fails on them
    doc = json.loads(output)
    assert [p["missing"] for p in doc["first_up"]["problems"]] == ["namespace ghost"]
    code, output = invoke(monkeypatch, clean_plan(), "preview", "--format", "json")
    assert json.loads(output)["first_up"]["problems"] == []


def test_preview_text_and_markdown_show_the_first_up(monkeypatch: pytest.MonkeyPatch) -> None:
    _, text = invoke(monkeypatch, ghost_namespace_plan(), "preview")
    assert "first up: 1 problems" in text and "[namespace] ConfigMap ghost/settings" in text
    _, md = invoke(monkeypatch, ghost_namespace_plan(), "preview", "--format", "markdown")
    assert "### First up (simulated)" in md
    assert "| namespace (object before its namespace) | `ConfigMap ghost/settings` | namespace ghost |" in md
    _, md = invoke(monkeypatch, clean_plan(), "preview", "--format", "markdown")
    assert "✅ first up: no problems" in md


def test_export_render_writes_what_each_release_renders(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    b = PlanBuilder("dc1")
    b.release(versions.NFS_CSI_DRIVER, "kube-system", {})
    monkeypatch.setattr(synth, "synth_stack", lambda project, stack, stack_file: b.plan())
    result = runner.invoke(
        app, ["export", "--stack", "onprem", "--project", str(ROOT), "--out", str(tmp_path), "--render"]
    )
    code, output = result.exit_code, result.output
    assert code == 0, output
    rendered = sorted((tmp_path / "dc1" / "rendered" / "csi-driver-nfs").glob("*.yaml"))
    assert any("deployment-kube-system-csi-nfs-controller" in p.name for p in rendered)
    assert rendered[0].read_text().startswith("# Source: csi-driver-nfs/templates/")
    # a namespaced object the chart leaves without a namespace gets the release's, as Helm applies it
    assert all("-cluster-" not in p.name for p in rendered if "-serviceaccount-" in p.name)


def test_charts_list_and_an_unknown_chart_name(monkeypatch: pytest.MonkeyPatch) -> None:
    result = runner.invoke(app, ["charts", "list"])
    assert result.exit_code == 0
    assert f"kueue {versions.KUEUE.version} ({versions.KUEUE.repository}): cached at" in result.output
    result = runner.invoke(app, ["charts", "pull", "--chart", "no-such-chart"])
    assert result.exit_code == 2 and "not pinned in versions.py: no-such-chart" in result.output
