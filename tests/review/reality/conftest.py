"""Reality-check fixtures: the chart cache tests render from, and each example checked once per session.

Tests render the upstream chart sources at the pinned versions: tests/conftest.py points GPUFLEET_CHART_CACHE at
the copy CI keeps beside the clone unless it is already set.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpufleet.charts.cache import ENV_VAR, ChartCache
from gpufleet.charts.render import RenderedRelease, render_plan
from gpufleet.engine.plan import Plan
from gpufleet.review.reality.first_up import FirstUp, simulate
from model.load import read_stack
from model.spec import EstateSpec
from tests.conftest import EXAMPLES, ROOT


def chart_cache_root() -> Path:
    root = Path(os.environ[ENV_VAR])  # set by tests/conftest.py
    if not root.is_dir():
        pytest.fail(f"chart sources for the tests not found at {root}: set {ENV_VAR} to a chart cache folder")
    return root


@pytest.fixture(scope="session")
def chart_cache() -> ChartCache:
    return ChartCache(chart_cache_root())


@dataclass
class Checked:
    plan: Plan
    spec: EstateSpec
    releases: dict[str, RenderedRelease]
    first_up: FirstUp


@pytest.fixture(scope="session")
def checked_examples(example_plans: dict[str, Plan], chart_cache: ChartCache) -> dict[str, Checked]:
    """Each example synthesized, rendered and simulated once per session."""
    out = {}
    for stack in EXAMPLES:
        plan = example_plans[stack]
        spec = read_stack(ROOT, stack).estate()
        releases = render_plan(plan, chart_cache)
        out[stack] = Checked(plan, spec, releases, simulate(plan, spec, releases))
    return out
