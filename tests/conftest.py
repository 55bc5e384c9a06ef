"""Shared test helpers: example stacks as dicts, and synthesizing an estate dict in a temporary project."""

from __future__ import annotations

import copy
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.engine.plan import Plan
from gpufleet.engine.synth import synth
from model.load import ESTATE_KEY, parse_estate, read_stack
from model.spec import EstateSpec

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ("aws-train", "aws-train-west", "onprem", "hybrid")
# Tests render the pinned charts from the chart cache inside the clone, which `.ci/run` fills with
# `gpufleet charts pull`, unless GPUFLEET_CHART_CACHE names another cache.
TEST_CHART_CACHE = ROOT / ".cache" / "charts"
os.environ.setdefault("GPUFLEET_CHART_CACHE", str(TEST_CHART_CACHE))


def example_config(stack: str) -> dict[str, Any]:
    """The full `config:` mapping of an example stack file (namespaced keys), deep-copied for mutation."""
    return copy.deepcopy(read_stack(ROOT, stack).config)


def example_estate(stack: str) -> dict[str, Any]:
    return example_config(stack)[ESTATE_KEY]


def write_project(tmp: Path, config: dict[str, Any], stack: str = "test") -> Path:
    """A throwaway copy of the project with one stack file holding `config`."""
    shutil.copy(ROOT / "Pulumi.yaml", tmp / "Pulumi.yaml")
    shutil.copy(ROOT / "__main__.py", tmp / "__main__.py")
    (tmp / "stacks").mkdir(exist_ok=True)
    (tmp / "stacks" / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": config}, sort_keys=False))
    return tmp


@pytest.fixture
def synth_config(tmp_path: Path) -> Callable[[dict[str, Any]], Plan]:
    """Synthesize a full config mapping (as in a stack file) in a temporary project."""

    def run(config: dict[str, Any]) -> Plan:
        return synth(write_project(tmp_path, config), "test")

    return run


@pytest.fixture(scope="session")
def broken(tmp_path_factory: pytest.TempPathFactory) -> tuple[Plan, EstateSpec]:
    """The deliberately broken stack (tests/policies/broken_stack.py) synthesized once per session."""
    from tests.policies.broken_stack import broken_config

    project = write_project(tmp_path_factory.mktemp("broken"), broken_config())
    return synth(project, "test"), parse_estate(broken_config()[ESTATE_KEY], "broken")


@pytest.fixture(scope="session")
def example_plans() -> dict[str, Plan]:
    """Each example stack synthesized once per test session."""
    return {s: synth(ROOT, s) for s in EXAMPLES}
