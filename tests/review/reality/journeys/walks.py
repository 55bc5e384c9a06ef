"""Walks for stage tests: the example estates' clusters, and pod sets as a user writes them plus what Kueue
injects (the ResourceFlavor's nodeLabels and tolerations, read from the plan's own flavor)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from gpufleet.review.reality.journeys.core import ClusterView, PodSet, Walk, Workload
from model.spec import EstateSpec


@dataclass
class Estate:
    spec: EstateSpec
    clusters: dict[str, ClusterView]


def container(requests: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"name": "main", "image": "nvcr.io/nvidia/pytorch:25.01-py3", "resources": {"limits": requests}, **extra}


def walk(
    estate: Estate,
    cluster: str,
    namespace: str,
    pods: int,
    spec: dict[str, Any],
    flavor: str | None = None,
    kind: str = "Job",
    labels: dict[str, str] | None = None,
    manifest_spec: dict[str, Any] | None = None,
) -> Walk:
    """A workload of one pod set (`pods` pods of `spec`) on `cluster`, admitted by Kueue to `flavor` if given."""
    labels = labels or {"app": "train"}
    pod_set = PodSet("main", pods, copy.deepcopy(spec), labels)
    api = {"Pod": "v1", "StatefulSet": "apps/v1"}.get(kind, "batch/v1")
    manifest = {"apiVersion": api, "kind": kind, "spec": manifest_spec or {}}
    workload = Workload(api, kind, "train", namespace, {}, {}, (pod_set,), manifest, "test")
    view = estate.clusters[cluster]
    w = Walk(workload, view, estate.clusters, estate.spec)
    if flavor is not None:
        rf = view.get("ResourceFlavor", flavor)
        assert rf is not None, f"no ResourceFlavor {flavor} on {cluster}"
        for p in w.pod_sets:
            p.spec.setdefault("nodeSelector", {}).update(rf["spec"].get("nodeLabels") or {})
            p.spec.setdefault("tolerations", []).extend(rf["spec"].get("tolerations") or [])
        w.flavors = {"main": flavor}
        w.pools = {"main": [flavor]}
    return w
