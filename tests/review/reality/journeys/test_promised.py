"""Every estate carries its canonical journeys: preview shows them, check fails when one does not answer as
promised (issue 28, section 2)."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.review.reality import checks
from gpufleet.review.reality.journeys.core import ClusterView
from tests.conftest import ROOT

runner = CliRunner()


def _preview_json(stack: str) -> dict[str, Any]:
    result = runner.invoke(app, ["preview", "--stack", stack, "--project", str(ROOT), "-f", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_preview_json_carries_each_canonical_journey_with_its_promise_and_verdict() -> None:
    journeys = _preview_json("onprem")["journeys"]
    gang = next(j for j in journeys if j["workload"] == "Job/research/gang-train")
    assert gang["expected"] == "runs" and gang["verdict"] == "runs"
    assert gang["placement"] == {"site": "dc1", "pool": "train", "nodes": 6, "flavor": "train"}
    assert [s["stage"] for s in gang["stages"]] == ["api", "admission", "queueing", "placement", "storage", "network"]
    assert all(j["expected"] == j["verdict"] for j in journeys)


def _without_excluded_prefixes(view: ClusterView) -> ClusterView:
    values = copy.deepcopy(view.releases["kueue"])
    config = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    del config["resources"]
    values["managerConfig"]["controllerManagerConfigYaml"] = yaml.safe_dump(config)
    return dataclasses.replace(view, releases={**view.releases, "kueue": values})


def test_check_fails_when_a_canonical_journey_is_blocked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without Kueue's resource exclusions (issue 28, 4.1) the RDMA gang is never admitted: check says which
    journey, where it stops, and exits 1."""
    real = checks.clusters
    monkeypatch.setattr(checks, "clusters", lambda plan, releases: {
        name: _without_excluded_prefixes(view) for name, view in real(plan, releases).items()
    })  # fmt: skip
    result = runner.invoke(app, ["check", "--stack", "onprem", "--project", str(ROOT)])
    assert result.exit_code == 1, result.output
    assert re.search(r"Journeys: 1 of \d+ do not answer as promised", result.output)
    assert "rdma/shared_ib unavailable in ClusterQueue research" in result.output
