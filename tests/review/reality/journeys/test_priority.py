"""Priority classes a workload names must exist: the Priority admission plugin refuses a pod naming an unknown
PriorityClass (https://kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/), and Kueue cannot
build the Workload of a job whose WorkloadPriorityClass label, or whose pods' PriorityClass, does not exist
(kubernetes-sigs/kueue at versions.KUEUE, pkg/controller/jobframework/reconciler.go ExtractPriority, and
pkg/util/priority/priority.go: the Get fails, so no Workload is created)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from tests.review.reality.journeys.conftest import Estate
from tests.review.reality.journeys.test_walk import RESTRICTED_POD_SPEC, job


def _pod(priority_class: str) -> dict[str, Any]:
    spec = copy.deepcopy(RESTRICTED_POD_SPEC)
    spec["priorityClassName"] = priority_class
    meta = {"name": "p", "namespace": "research", "labels": {"kueue.x-k8s.io/queue-name": "research"}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def test_a_pod_naming_an_unknown_priority_class_is_refused_at_admission(estate: Callable[[str], Estate]) -> None:
    (j,) = estate("aws-train").walk(_pod("urgent"))
    stop = j.blocked_at
    assert stop is not None and stop.name == "admission" and stop.blocker == "PriorityClass/urgent"
    assert "training" in stop.unblock and "system-node-critical" in stop.unblock
    for name in ("training", "system-cluster-critical"):  # the estate's classes and Kubernetes' own
        (ok,) = estate("aws-train").walk(_pod(name))
        assert ok.verdict == "runs", ok.to_dict()


def test_a_job_naming_an_unknown_priority_class_stays_suspended_by_kueue(estate: Callable[[str], Estate]) -> None:
    doc = job("research", "research", 1, {"nvidia.com/gpu": 1})
    doc["spec"]["template"]["spec"]["priorityClassName"] = "urgent"
    (j,) = estate("aws-train").walk(doc)
    stop = j.blocked_at
    assert stop is not None and stop.name == "queueing" and stop.blocker == "PriorityClass/urgent"
    assert "cannot create the Workload" in stop.detail


def test_an_unknown_workload_priority_class_label_keeps_the_job_suspended(estate: Callable[[str], Estate]) -> None:
    doc = job("research", "research", 1, {"nvidia.com/gpu": 1})
    doc["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "urgent"
    (j,) = estate("aws-train").walk(doc)
    stop = j.blocked_at
    assert stop is not None and stop.name == "queueing" and stop.blocker == "WorkloadPriorityClass/urgent"
    assert "batch" in stop.unblock and "training" in stop.unblock
    doc["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "training"
    (ok,) = estate("aws-train").walk(doc)
    assert ok.verdict == "runs", ok.to_dict()


def test_hybrid_the_manager_judges_the_workload_priority_class(estate: Callable[[str], Estate]) -> None:
    doc = job("research", "research", 1, {"nvidia.com/gpu": 1})
    doc["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "urgent"
    (j,) = estate("hybrid").walk(doc)
    stop = j.blocked_at
    assert stop is not None and stop.name == "queueing" and stop.blocker == "WorkloadPriorityClass/urgent"


def _pod_based(kind: str, priority_class: str) -> dict[str, Any]:
    spec = copy.deepcopy(RESTRICTED_POD_SPEC)
    spec["restartPolicy"] = "Always"
    labels = {"kueue.x-k8s.io/queue-name": "research", "kueue.x-k8s.io/priority-class": priority_class}
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": "serve", "namespace": "research", "labels": labels},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "serve"}},
                 "template": {"metadata": {"labels": {"app": "serve"}}, "spec": spec}},
    }  # fmt: skip


def test_a_pod_based_workloads_own_priority_class_label_reaches_its_pods(estate: Callable[[str], Estate]) -> None:
    """Kueue copies a Deployment's (StatefulSet's) own kueue.x-k8s.io/priority-class label onto its pods
    (kubernetes-sigs/kueue v0.19.2 pkg/controller/jobs/deployment/deployment_webhook.go Default, and
    pkg/controller/jobs/statefulset/statefulset_pod_reconciler.go), so an unknown class there blocks them."""
    for kind in ("Deployment", "StatefulSet"):
        (j,) = estate("aws-train").walk(_pod_based(kind, "urgent"))
        stop = j.blocked_at
        assert stop is not None and stop.name == "queueing", (kind, j.to_dict())
        assert stop.blocker == "WorkloadPriorityClass/urgent"
        (ok,) = estate("aws-train").walk(_pod_based(kind, "training"))
        assert ok.verdict == "runs", (kind, ok.to_dict())
