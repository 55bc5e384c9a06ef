"""`gpufleet verify` on the command line: the plan without a cluster, bad input (exit 2), a run against the fake
API (exit 0 / 1), the Markdown report, and Ctrl-C (exit 130 after cleanup)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.verify import access
from gpufleet.verify.kube import ClusterApi
from tests.conftest import ROOT
from tests.verify.fake_kube import FakeBatch, FakeCluster, FakeCore

runner = CliRunner()


def invoke(*args: str) -> Any:
    return runner.invoke(app, ["verify", "-C", str(ROOT), *args])


def test_plan_prints_checks_marks_and_sources_without_a_cluster() -> None:
    r = invoke("-s", "aws-train", "--plan")
    assert r.exit_code == 0, r.output
    assert "fabric/use1/h100/multi-node" in r.output and ">= 389.7 GB/s" in r.output
    assert "nccl-tests doc/PERFORMANCE.md" in r.output and "throughput_warning" in r.output
    assert "tag only (no published digest found)" in r.output


def test_plan_json_lists_every_check() -> None:
    r = invoke("-s", "onprem", "--plan", "-f", "json", "--only", "gpus")
    doc = json.loads(r.output)
    assert [c["id"] for c in doc["checks"]] == ["gpus/dc1/train", "gpus/dc1/dev"]
    assert doc["checks"][1]["status"] == "skipped"


def test_help_describes_the_suite() -> None:
    r = invoke("--help")
    assert r.exit_code == 0
    for word in ("NCCL", "DCGM", "fio", "tenancy", "telemetry", "--degraded", "--plan"):
        assert word in r.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--only", "fabric,gpu"], "--only: gpu not one of fabric,gpus,storage,tenancy,telemetry"),
        (["--pool", "nope"], "--pool: nope not a node pool of stack onprem"),
        (["--kubeconfig", "other=/x"], "other is not a site of the estate"),
        ([], "site dc1: no kubeconfig. Pass --kubeconfig dc1=PATH, or --pulumi-secrets"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(args: list[str], message: str) -> None:
    r = invoke("-s", "onprem", *args)
    assert r.exit_code == 2
    assert message in " ".join(r.output.split())
    assert "Traceback" not in r.output


def test_missing_stack_exits_2_naming_the_file() -> None:
    r = invoke("-s", "nope", "--plan")
    assert r.exit_code == 2 and "Pulumi.nope.yaml" in r.output


def fake_access(monkeypatch: pytest.MonkeyPatch, cluster: FakeCluster) -> None:
    monkeypatch.setattr(access, "kubeconfig_for", lambda *a, **k: ({}, None))
    monkeypatch.setattr(
        access, "cluster_api", lambda doc, ctx: (ClusterApi(FakeCore(cluster), FakeBatch(cluster)), "v1.34.2")
    )


def test_run_writes_the_markdown_report_and_exits_1_on_a_failed_mandatory_check(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cluster = FakeCluster(pool_nodes={"h100": ["n1"]})  # the exporter scrape shows 1 of 8 GPUs: telemetry fails
    fake_access(monkeypatch, cluster)
    report = tmp_path / "acceptance.md"
    r = invoke("-s", "aws-train", "--only", "telemetry,gpus", "--pool", "h100", "--report", str(report))
    assert r.exit_code == 1, r.output
    assert "NOT ACCEPTED" in r.output
    text = report.read_text()
    assert "| Kubernetes on site `use1` | v1.34.2 |" in text and "## Not tested" in text
    assert "| PASS | gpus/use1/h100" in text
    assert cluster.deleted_namespaces and cluster.deleted_namespaces[0].startswith("gpufleet-verify-")


def test_run_exits_0_when_every_mandatory_check_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_access(monkeypatch, FakeCluster(pool_nodes={"h100": ["n1", "n2"]}))
    r = invoke("-s", "aws-train", "--only", "fabric", "-f", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output[r.output.index("{") :])
    assert doc["accepted"] is True and doc["results"][0]["measured"] == "487.1 GB/s"


def test_ctrl_c_cleans_up_and_exits_130(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = FakeCluster(pool_nodes={"h100": ["n1", "n2"]}, interrupt_on="read_namespaced_job_status")
    fake_access(monkeypatch, cluster)
    r = invoke("-s", "aws-train", "--only", "fabric")
    assert r.exit_code == 130
    assert "interrupted" in r.output and "deleted namespace gpufleet-verify-" in r.output
    assert len(cluster.deleted_namespaces) == 1


def test_a_failed_node_is_quarantined_and_return_takes_it_back(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.verify.fake_kube import dcgm_document

    cluster = FakeCluster(pool_nodes={"h100": ["n1", "n2"]})
    cluster.logs = lambda job, ns: dcgm_document("Fail", "XID 79 on GPU 3") if job == "dcgm-2" else dcgm_document()
    fake_access(monkeypatch, cluster)
    r = invoke("-s", "aws-train", "--only", "gpus", "--pool", "h100")
    assert r.exit_code == 1, r.output
    assert "quarantined: site use1: n2 (verify); return a repaired node with `gpufleet verify" in r.output
    assert [t["key"] for t in cluster.taints["n2"]] == ["gpufleet.io/quarantine"]
    r = invoke("-s", "aws-train", "--return", "n2")
    assert r.exit_code == 0, r.output
    assert "returned node n2 on site use1 (it was quarantined: verify)" in r.output
    assert cluster.taints["n2"] == []


def test_return_refuses_a_node_gpufleet_did_not_quarantine(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_access(monkeypatch, FakeCluster(pool_nodes={"h100": ["n1"]}))
    r = invoke("-s", "aws-train", "--return", "n1")
    assert r.exit_code == 2 and "carries no gpufleet.io/quarantine taint" in r.output, r.output


def test_return_on_a_hybrid_estate_needs_the_site(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_access(monkeypatch, FakeCluster(pool_nodes={"h100": ["n1"]}))
    r = invoke("-s", "hybrid", "--return", "n1")
    assert r.exit_code == 2 and "say which site with --site" in r.output, r.output
