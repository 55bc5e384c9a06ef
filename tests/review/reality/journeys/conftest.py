"""Journey fixtures: an example estate's clusters, built once per session, and its spec."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gpufleet.charts.cache import ChartCache
from gpufleet.engine.synth import synth
from gpufleet.review.reality.checks import render
from gpufleet.review.reality.journeys.core import ClusterView, Journey
from gpufleet.review.reality.journeys.estate import clusters
from gpufleet.review.reality.journeys.walk import walk
from gpufleet.review.reality.journeys.workloads import read, workload
from model.load import read_stack
from tests.conftest import ROOT
from tests.review.reality.journeys import walks

MANIFESTS = Path(__file__).parent / "manifests"


@dataclass
class Estate:
    clusters: dict[str, ClusterView]
    spec: Any

    def walk(self, doc_or_file: dict[str, Any] | str, tenant: str | None = None) -> list[Journey]:
        """Journeys of a manifest dict or of a file under manifests/."""
        if isinstance(doc_or_file, str):
            loads = read([MANIFESTS / doc_or_file], tenant)
        else:
            loads = [workload(doc_or_file, "test", tenant)]
        return [walk(w, self.clusters, self.spec) for w in loads]


_BUILT: dict[str, Estate] = {}


@pytest.fixture(scope="session")
def estate(chart_cache: ChartCache) -> Callable[[str], Estate]:
    """An example stack's estate (synthesized and rendered once per session)."""

    def build(stack: str) -> Estate:
        if stack not in _BUILT:
            plan = synth(ROOT, stack)
            _BUILT[stack] = Estate(clusters(plan, render(plan, chart_cache)), read_stack(ROOT, stack).estate())
        return _BUILT[stack]

    return build


@pytest.fixture(scope="session")
def estates(estate: Callable[[str], Estate]) -> dict[str, walks.Estate]:
    """The example estates the stage tests build walks on."""
    return {s: walks.Estate(estate(s).spec, estate(s).clusters) for s in ("aws-train", "onprem", "hybrid")}
