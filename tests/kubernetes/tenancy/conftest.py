"""Fixtures for the tenancy and scheduling tests: example plans synthesized lazily, once per session each."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from gpufleet.engine.plan import Plan, PlanResource
from gpufleet.engine.synth import synth
from model.load import parse_estate
from model.spec import EstateSpec
from tests.conftest import ROOT, example_estate

Mutate = Callable[[dict[str, Any]], None]


@pytest.fixture(scope="session")
def plan_of() -> Callable[[str], Plan]:
    """`plan_of(stack)`: the example stack's plan, synthesized on first use (a broken stack fails only its tests)."""
    cache: dict[str, Plan] = {}

    def get(stack: str) -> Plan:
        if stack not in cache:
            cache[stack] = synth(ROOT, stack)
        return cache[stack]

    return get


def estate(stack: str, mutate: Mutate | None = None) -> EstateSpec:
    raw = example_estate(stack)
    if mutate is not None:
        mutate(raw)
    return parse_estate(raw, f"Pulumi.{stack}.yaml")


def k8s_objects(plan: Plan, kind: str, anywhere: bool = False) -> list[PlanResource]:
    """Kubernetes objects of a kind built by the sites' ClusterStacks (`anywhere`: also by other components,
    e.g. the hybrid MultiKueue wiring's worker-side tenant namespaces)."""
    return [
        r
        for r in plan.kubernetes_objects()
        if r.inputs.get("kind") == kind and (anywhere or "gpufleet:kubernetes:ClusterStack$" in r.key)
    ]


def k8s_object(plan: Plan, kind: str, name: str, namespace: str | None = None) -> PlanResource:
    found = [
        r
        for r in k8s_objects(plan, kind)
        if r.inputs["metadata"].get("name") == name and r.inputs["metadata"].get("namespace") == namespace
    ]
    assert len(found) == 1, f"expected one {kind} {namespace}/{name}, found {len(found)}"
    return found[0]


def in_namespace(plan: Plan, kind: str, namespace: str) -> list[PlanResource]:
    return [r for r in k8s_objects(plan, kind) if r.inputs["metadata"].get("namespace") == namespace]
