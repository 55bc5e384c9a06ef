"""The three examples through every reality check: rendered charts, real schemas, the first `up` simulated.

The examples carried real defects when these checks were written (each found by them, each since fixed on main):
Kueue's ServiceMonitor without the Prometheus Operator CRD (aws-train), IPoIBNetwork and IPPool created before their
CRDs and IPPool before its namespace (onprem, hybrid), the GPU Operator and Kueue releases not waiting for a node
(aws-train, hybrid), the hybrid cloud API private with no path. Each keeps a named test so its return is named.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gpufleet.charts.operator_crds import CONFIG_FILE, applied_objects
from gpufleet.review.reality.first_up import Problem
from tests.review.reality.conftest import Checked

Defect = Callable[[Problem], bool]


def _servicemonitor(p: Problem) -> bool:
    return p.check == "crd" and p.name.startswith("ServiceMonitor kueue-system/")


def _ipoib(p: Problem) -> bool:
    return p.check == "crd" and p.name.startswith("IPoIBNetwork ")


def _ippool(p: Problem) -> bool:
    return p.name.startswith("IPPool network-operator/") and p.check in ("crd", "namespace")


def _release_without_node(p: Problem) -> bool:
    return p.check == "node"


def _private_api(p: Problem) -> bool:
    return p.check == "reach"


# (stack, defect id, predicate): the defects the checks found in the examples, one test each.
FOUND: list[tuple[str, str, Defect]] = [
    ("aws-train", "kueue-servicemonitor-without-crd", _servicemonitor),
    ("aws-train", "releases-before-a-node", _release_without_node),
    ("onprem", "ipoib-before-crd", _ipoib),
    ("onprem", "ippool-before-crd-and-namespace", _ippool),
    ("hybrid", "ipoib-before-crd", _ipoib),
    ("hybrid", "ippool-before-crd-and-namespace", _ippool),
    ("hybrid", "releases-before-a-node", _release_without_node),
    ("hybrid", "cloud-api-without-path", _private_api),
]


@pytest.mark.parametrize("stack", ["aws-train", "onprem", "hybrid"])
def test_example_first_up_has_no_problem(stack: str, checked_examples: dict[str, Checked]) -> None:
    assert [p.message for p in checked_examples[stack].first_up.problems] == []


@pytest.mark.parametrize("stack", ["aws-train", "onprem", "hybrid"])
def test_every_example_release_is_rendered_from_the_test_cache(
    stack: str, checked_examples: dict[str, Checked]
) -> None:
    # The test cache holds every pinned chart (`.ci/run` pulls what it lacks): a release left unrendered fails.
    checked = checked_examples[stack]
    assert checked.releases and [k for k, r in checked.releases.items() if not r.rendered] == []


@pytest.mark.parametrize(("stack", "defect"), [pytest.param(s, d, id=f"{s}-{i}") for s, i, d in FOUND])
def test_example_is_free_of_defect(stack: str, defect: Defect, checked_examples: dict[str, Checked]) -> None:
    assert [p.message for p in checked_examples[stack].first_up.problems if defect(p)] == []


@pytest.mark.parametrize("stack", ["aws-train", "onprem", "hybrid"])
def test_every_rendered_and_planned_object_was_validated(stack: str, checked_examples: dict[str, Checked]) -> None:
    checked = checked_examples[stack]
    rendered = sum(len(r.all_objects()) for r in checked.releases.values())
    applied = sum(len(applied_objects(r.inputs["file"])) for r in checked.plan.find(CONFIG_FILE))
    assert checked.first_up.checked == rendered + len(checked.plan.kubernetes_objects()) + applied
    assert checked.first_up.unchecked == []
