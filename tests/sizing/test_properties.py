"""Properties of the sizing arithmetic, over generated inputs."""

from __future__ import annotations

import itertools
from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from gpufleet.sizing.arithmetic import installed_equivalents, memory_fit, memory_need, nodes_for, q, scenarios
from gpufleet.sizing.workloads import PERIOD_HOURS
from model import catalog
from tests.sizing.helpers import wclass, wfile

hours = st.decimals(min_value="0.5", max_value="100000", places=2).map(lambda d: Fraction(str(d)))
device_hours = st.integers(min_value=1, max_value=PERIOD_HOURS["week"]).map(Fraction)
utilisations = st.lists(st.integers(min_value=1, max_value=100), min_size=2, max_size=5, unique=True)


@given(hours, device_hours, utilisations)
def test_installed_equivalent_decreases_as_utilisation_rises(gpu_hours, per_device, utils) -> None:  # type: ignore[no-untyped-def]
    got = [installed_equivalents(gpu_hours, per_device, Fraction(u)) for u in sorted(utils)]
    assert all(a > b for a, b in itertools.pairwise(got))


@given(hours, st.integers(min_value=1, max_value=168), utilisations, st.integers(0, 20), st.integers(0, 20))
def test_rounding_never_under_provisions(gpu_hours, per_device, utils, failure, growth) -> None:  # type: ignore[no-untyped-def]
    planning = wfile(
        hours_per_device=per_device, utilisation_pct=utils, failure_reserve_pct=failure, growth_pct=growth
    ).planning
    for s in scenarios(gpu_hours, planning):
        # the rounded installed GPUs deliver at least the demand at that utilisation, reserves on top
        assert s.equivalents_rounded * per_device * s.utilisation_pct / 100 >= gpu_hours
        assert s.rounded >= s.total >= s.equivalents
        assert s.rounded - 1 < s.total


@given(st.integers(min_value=0, max_value=10_000), st.sampled_from([1, 4, 8]))
def test_whole_nodes_hold_the_gpus_and_no_more_than_one_node_extra(gpus, per_node) -> None:  # type: ignore[no-untyped-def]
    n = nodes_for(gpus, per_node)
    assert n * per_node >= gpus > (n - 1) * per_node or gpus == n == 0


@given(
    st.decimals(min_value="0.1", max_value="2000", places=1),
    st.sampled_from(["training", "fine-tuning", "online-inference", "batch-inference"]),
    st.sampled_from(sorted(catalog.gpu_models())),
)
def test_gpus_needed_is_the_smallest_set_that_holds_the_run(params, kind, gpu_id) -> None:  # type: ignore[no-untyped-def]
    objective = {"deadline_hours": 10, "latency_p95_ms": None}
    if kind == "online-inference":
        objective = {"deadline_hours": None, "latency_p95_ms": 100}
    c = wclass(kind=kind, parameters_billion=float(params), **objective)
    need = memory_need(c)
    fit = memory_fit(need, catalog.gpu_model(gpu_id))
    assert need.states_gb == q(float(params)) * need.bytes_per_parameter
    assert fit.gpus_needed * fit.gpu_memory_gb >= need.required_gb
    assert (fit.gpus_needed - 1) * fit.gpu_memory_gb < need.required_gb
