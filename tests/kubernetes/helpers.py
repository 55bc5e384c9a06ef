"""Helpers for the GPU-stack tests: example estates with small changes, and release values from a plan."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

from gpufleet.engine.plan import Plan, PlanResource
from model.load import parse_estate
from model.spec import EstateSpec
from tests.conftest import example_estate

Mutate = Callable[[dict[str, Any]], None]


def estate(stack: str, mutate: Mutate | None = None) -> EstateSpec:
    raw = example_estate(stack)
    if mutate is not None:
        mutate(raw)
    return parse_estate(raw, f"Pulumi.{stack}.yaml")


def release(plan: Plan, release_name: str) -> PlanResource:
    """The Helm release whose Helm `name` is `release_name` (exactly one)."""
    found = [r for r in plan.helm_releases() if r.inputs.get("name") == release_name]
    assert len(found) == 1, f"expected one release {release_name}, found {[r.name for r in found]}"
    return found[0]


def releases(plan: Plan, chart: str) -> list[PlanResource]:
    return [r for r in plan.helm_releases() if r.inputs.get("chart") == chart]


def parse(text: str) -> Any:
    return yaml.safe_load(text)


def time_sliced_pool(raw: dict[str, Any]) -> None:
    """aws-train plus an L40S pool time-sliced 4 ways, dedicated to the product tenant."""
    raw["sites"][0]["node_pools"].append(
        {
            "name": "l40s-shared",
            "role": "interactive",
            "instance_type": "g6e.xlarge",
            "dedicated_to": "product",
            "sharing": {"mode": "time-slicing", "replicas": 4},
            "scaling": {"min": 0, "max": 2},
        }
    )
