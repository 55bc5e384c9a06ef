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
    stages = ["api", "admission", "queueing", "topology", "placement", "storage", "network"]
    assert [s["stage"] for s in gang["stages"]] == stages
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


def _open_egress(journeys: list[dict[str, Any]]) -> dict[str, Any]:
    return next(j for j in journeys if j["workload"] == "Job/agents/open-egress")


def test_the_untrusted_tenants_open_egress_is_promised_refused_at_the_network_stage() -> None:
    """Issue 28, section 2: an untrusted tenant has no open egress. Its Job on its own pool passes every stage but
    the network one, where the namespace's default-deny admits no route to an internet address."""
    journey = _open_egress(_preview_json("aws-train")["journeys"])
    assert journey["expected"] == "blocked" and journey["expected_stage"] == "network"
    assert journey["verdict"] == "blocked" and journey["stage"] == "network"
    assert journey["blocker"] == "NetworkPolicy/agents/default-deny"
    assert "the internet (example.com, TCP 443)" in journey["reason"]
    assert [s["ok"] for s in journey["stages"]] == [True, True, True, True, True, True, False]


def _egress_opened(view: ClusterView) -> ClusterView:
    """The untrusted tenant's namespace with a NetworkPolicy that lets every pod reach the internet."""
    if view.get("Namespace", "agents") is None:
        return view
    open_egress = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "allow-internet", "namespace": "agents"},
        "spec": {
            "podSelector": {},
            "policyTypes": ["Egress"],
            "egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}],
        },
    }
    return dataclasses.replace(view, objects=(*view.objects, open_egress))


def test_check_fails_when_the_untrusted_tenant_reaches_the_internet(monkeypatch: pytest.MonkeyPatch) -> None:
    real = checks.clusters
    monkeypatch.setattr(checks, "clusters", lambda plan, releases: {
        name: _egress_opened(view) for name, view in real(plan, releases).items()
    })  # fmt: skip
    result = runner.invoke(app, ["check", "--stack", "aws-train", "--project", str(ROOT)])
    assert result.exit_code == 1, result.output
    assert re.search(r"Journeys: 1 of \d+ do not answer as promised", result.output)
    assert re.search(r"NO\s+runs\s+\(promised blocked at network\) agents \(untrusted\): egress", result.output)
