"""ClusterView lookups: the first object of a kind by name (and namespace), and a namespace's objects in order."""

from __future__ import annotations

from typing import Any

from gpufleet.review.reality.journeys.core import ClusterView


def obj(kind: str, name: Any, namespace: str | None = None, n: int = 0) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": "v1", "kind": kind, "metadata": meta, "n": n}


def test_get_finds_the_first_object_of_the_kind_by_name_and_namespace() -> None:
    objects = (
        obj("Role", "member", "a", 1),
        obj("Role", "member", "b", 2),
        obj("Role", "member", "a", 3),
        obj("RoleBinding", "member", "b", 4),
        {"apiVersion": "v1", "kind": "Role"},  # no metadata
        obj("Role", ["not", "hashable"], "a", 5),
    )
    view = ClusterView("c", "c", objects)
    found = [view.get("Role", "member", "a"), view.get("Role", "member", "b"), view.get("Role", "member")]
    assert [o and o["n"] for o in found] == [1, 2, 1]
    assert view.get("Role", "member", "c") is None
    assert view.get("Role", "other") is None
    assert view.get("ClusterRole", "member") is None
    assert view.get("RoleBinding", "member", "b") is objects[3]


def test_in_namespace_keeps_the_views_order_and_gives_a_new_list() -> None:
    objects = tuple(obj("LocalQueue", f"q{i}", "a" if i % 2 else "b", i) for i in range(6))
    view = ClusterView("c", "c", objects)
    assert [o["n"] for o in view.in_namespace("LocalQueue", "a")] == [1, 3, 5]
    view.in_namespace("LocalQueue", "a").clear()
    assert [o["n"] for o in view.in_namespace("LocalQueue", "b")] == [0, 2, 4]
    assert len(view.in_namespace("LocalQueue", "a")) == 3
    assert view.in_namespace("LocalQueue", "c") == []
