"""`gpufleet journey`: exit codes, JSON shape, and bad manifests refused with the file and document named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.badinput import assert_bad_input, invoke
from tests.conftest import ROOT

MANIFESTS = ROOT / "tests" / "review" / "reality" / "journeys" / "manifests"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("kind: Job\n  bad: [\n", "not YAML"),
        ("- a\n- b\n", "not a mapping"),
        ("apiVersion: batch/v1\nmetadata: {name: x}\n", "apiVersion and kind are required"),
        ("apiVersion: batch/v1\nkind: Job\nmetadata: {}\nspec: {}\n", "metadata.name"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {}\n", "not a workload gpufleet reads"),
        ("apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec: {parallelism: -1}\n", "parallelism"),
        (
            "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n"
            "spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: lots}}}]}\n",
            "spec.containers[0].resources.limits.nvidia.com/gpu: 'lots' is not a quantity",
        ),
        ("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [1]}\n", "list of mappings"),
    ],
)
def test_a_bad_manifest_exits_2_naming_the_file_and_document(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "job.yaml"
    path.write_text("---\n# first\n---\n" + text)
    answer = invoke(["journey", "-s", "aws-train", str(path)], ROOT)
    assert_bad_input(answer, str(path), words)
    if words != "not YAML":
        assert "document 2" in answer.stderr


def test_a_directory_is_not_a_manifest(tmp_path: Path) -> None:
    assert_bad_input(invoke(["journey", "-s", "aws-train", str(tmp_path)], ROOT), str(tmp_path), "not a regular file")


def test_an_unknown_tenant_exits_2(tmp_path: Path) -> None:
    answer = invoke(["journey", "-s", "aws-train", str(MANIFESTS / "efa-gang.yaml"), "--tenant", "nobody"], ROOT)
    assert_bad_input(answer, "--tenant nobody")


def test_journey_json_and_exit_1_when_one_workload_is_blocked() -> None:
    files = [str(MANIFESTS / "efa-gang.yaml"), str(MANIFESTS / "nccl-tests-mpijob.yaml")]
    answer = invoke(["journey", "-s", "aws-train", *files, "-f", "json"], ROOT)
    assert answer.code == 1, answer.stderr[-600:]
    doc = json.loads(answer.stdout)
    runs, mpi = doc["journeys"]
    assert runs["workload"] == "Job/research/nccl-allreduce" and runs["verdict"] == "runs" and runs["stage"] is None
    assert [s["stage"] for s in runs["stages"]] == [
        "api",
        "admission",
        "queueing",
        "topology",
        "placement",
        "storage",
        "network",
    ]
    assert mpi["verdict"] == "blocked" and mpi["stage"] == "api" and "MPI Operator" in mpi["unblock"]
    assert set(runs) >= {"workload", "verdict", "stage", "reason", "placement", "stages"}


def test_journey_text_exits_0_when_every_workload_runs() -> None:
    answer = invoke(["journey", "-s", "aws-train", str(MANIFESTS / "efa-gang.yaml")], ROOT)
    assert answer.code == 0, answer.stderr[-600:]
    assert answer.stdout.startswith("runs     Job/research/nccl-allreduce")


def test_without_the_charts_journey_exits_2_saying_to_pull_them(tmp_path: Path) -> None:
    """An empty chart cache renders no release, so no node offers a GPU: say so instead of blocking every job."""
    answer = invoke(["journey", "-s", "aws-train", str(MANIFESTS / "efa-gang.yaml"), "--chart-cache", str(tmp_path)])
    assert_bad_input(answer, "gpufleet charts pull", "GPUFLEET_CHART_CACHE", str(tmp_path))
    assert "allocatable" not in answer.stdout + answer.stderr
