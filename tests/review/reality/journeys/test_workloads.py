"""Manifests read as workloads: pod counts as Kueue counts them, namespaces, and bad input named by document."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.review.reality.journeys.workloads import ManifestError, read, workload

CONTAINERS: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}]}


def job_spec(**counts: int) -> dict[str, Any]:
    return {**counts, "template": {"spec": CONTAINERS}}


@pytest.mark.parametrize(
    ("doc", "counts"),
    [
        ({"apiVersion": "v1", "kind": "Pod", "spec": CONTAINERS}, [1]),
        # Kueue: min(parallelism, completions) (pkg/controller/jobs/job/job_controller.go podsCount)
        ({"apiVersion": "batch/v1", "kind": "Job", "spec": job_spec(parallelism=4, completions=2)}, [2]),
        ({"apiVersion": "batch/v1", "kind": "Job", "spec": job_spec(completions=5)}, [1]),
        ({"apiVersion": "apps/v1", "kind": "Deployment",
          "spec": {"replicas": 3, "selector": {}, "template": {"spec": CONTAINERS}}}, [3]),
        ({"apiVersion": "batch/v1", "kind": "CronJob",
          "spec": {"schedule": "@daily", "jobTemplate": {"spec": job_spec(parallelism=2)}}}, [2]),
        # replicas x per-replica pods (pkg/controller/jobs/jobset/jobset_controller.go podsCount)
        (
            {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "spec": {"replicatedJobs": [
                {"name": "w", "replicas": 3, "template": {"spec": job_spec(parallelism=2, completions=2)}},
                {"name": "d", "template": {"spec": job_spec()}},
            ]}},
            [6, 1],
        ),
        (
            {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "spec": {"mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": {"spec": CONTAINERS}},
                "Worker": {"replicas": 4, "template": {"spec": CONTAINERS}},
            }}},
            [1, 4],
        ),
    ],
)  # fmt: skip
def test_pod_counts_follow_kueue(doc: dict[str, Any], counts: list[int]) -> None:
    w = workload({**doc, "metadata": {"name": "w"}}, "test")
    assert [p.count for p in w.pod_sets] == counts


def test_the_namespace_is_the_manifests_else_the_tenants_else_default() -> None:
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": CONTAINERS}
    assert workload(doc, "t").namespace == "default"
    assert workload(doc, "t", "research").namespace == "research"
    doc["metadata"]["namespace"] = "product"
    assert workload(doc, "t", "research").namespace == "product"


def test_documents_are_numbered_and_empty_ones_skipped(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text("---\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: []}\n---\nkind: X\n")
    with pytest.raises(ManifestError, match=r"w\.yaml, document 3: apiVersion and kind are required"):
        read([path])


def test_a_manifest_the_api_server_would_refuse_is_bad_input() -> None:
    # the OpenAPI of the pinned Kubernetes version, strict: a typo in a field name, a number where a string goes
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "x", "command": ["sleep", 5], "resource": {}}]}}  # fmt: skip
    with pytest.raises(ManifestError, match=r"command\[1\]: 5 is not of type 'string'"):
        workload(pod, "t")
    mpi = {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": "m"},
           "spec": {"mpiReplicaSpecs": {"Worker": {"template": {"spec": {"containers": [{"name": "w", "imag": "x"}]}}}}}}  # fmt: skip
    with pytest.raises(ManifestError, match=r"pod set worker: spec\.containers\[0\]: unknown field: 'imag'"):
        workload(mpi, "t")


def test_a_kubectl_list_is_read_item_by_item_and_a_bad_one_is_named(tmp_path: Path) -> None:
    # `kubectl get jobs -o yaml` writes one `kind: List` whose items are the objects
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "research"}, "spec": CONTAINERS}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "b"}, "spec": job_spec(parallelism=2)}
    path = tmp_path / "got.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": [pod, job]}))
    a, b = read([path])
    assert (a.id, b.id, b.pods) == ("Pod/research/a", "Job/default/b", 2)
    assert b.source == f"{path}, document 1, item 2"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [pod, {"kind": "Job"}]}))
    with pytest.raises(ManifestError, match=r"got.yaml, document 1, item 2: apiVersion and kind are required"):
        read([path])
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": "nope"}))
    with pytest.raises(ManifestError, match=r"document 1: a List needs `items`"):
        read([path])


@pytest.mark.parametrize(("api", "kind"), [("batch/v1", "JobList"), ("v1", "PodList")])
def test_a_typed_list_is_read_item_by_item(tmp_path: Path, api: str, kind: str) -> None:
    # kubectl applies any *List item by item; the API's own lists leave apiVersion and kind off their items
    # (k8s.io/apimachinery pkg/apis/meta/v1/unstructured/helpers.go decodeToList fills them from the list)
    spec = CONTAINERS if kind == "PodList" else job_spec(parallelism=2)
    typed = {"apiVersion": api, "kind": kind.removesuffix("List"), "metadata": {"name": "a"}, "spec": spec}
    bare = {"metadata": {"name": "b", "namespace": "research"}, "spec": spec}
    path = tmp_path / "got.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": api, "kind": kind, "metadata": {}, "items": [typed, bare]}))
    a, b = read([path])
    item = kind.removesuffix("List")
    assert (a.id, b.id) == (f"{item}/default/a", f"{item}/research/b")
    assert b.source == f"{path}, document 1, item 2"
    path.write_text(yaml.safe_dump({"apiVersion": api, "kind": kind, "items": "nope"}))
    with pytest.raises(ManifestError, match=rf"document 1: a {kind} needs `items`"):
        read([path])
