"""Where a workload is submitted: the manager of a hybrid estate, else the named, the only or the holding site."""

from __future__ import annotations

import pytest

from gpufleet.review.reality.journeys.core import ClusterView
from gpufleet.review.reality.journeys.estate import MANAGER
from gpufleet.review.reality.journeys.walk import TargetError, target
from gpufleet.review.reality.journeys.workloads import workload


def view(name: str, *namespaces: str) -> ClusterView:
    objs = tuple({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in namespaces)
    return ClusterView(name, None if name == MANAGER else name, objs)


POD = workload(
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "research"},
     "spec": {"containers": [{"name": "c"}]}},
    "test",
)  # fmt: skip


def test_a_hybrid_estate_submits_to_its_manager() -> None:
    views = {MANAGER: view(MANAGER), "a": view("a", "research"), "b": view("b")}
    assert target(POD, views).name == MANAGER


def test_several_sites_submit_to_the_one_holding_the_namespace_or_the_named_one() -> None:
    views = {"a": view("a", "research"), "b": view("b", "product")}
    assert target(POD, views).name == "a"
    assert target(POD, views, "b").name == "b"
    with pytest.raises(TargetError, match="--site c: no such site"):
        target(POD, views, "c")


def test_several_sites_holding_the_namespace_need_site() -> None:
    views = {"a": view("a", "research"), "b": view("b", "research")}
    with pytest.raises(TargetError, match="choose one with --site"):
        target(POD, views)
