"""The three examples through every reality check: rendered charts, real schemas, the first `up` simulated.

Today's examples carry real defects, each fixed elsewhere; each is its own strict xfail here, so it flips to a
failure (and must be unmarked) the day its fix lands. Anything else found fails now.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gpufleet.review.first_up import Problem
from tests.reality.conftest import Checked

Defect = Callable[[Problem], bool]


def _servicemonitor(p: Problem) -> bool:
    return p.check == "crd" and p.name.startswith("ServiceMonitor kueue-system/")


def _ipoib(p: Problem) -> bool:
    return p.check == "crd" and p.name.startswith("IPoIBNetwork ")


def _ippool(p: Problem) -> bool:
    return p.name.startswith("IPPool network-operator/") and p.check in ("crd", "namespace")


SERVICEMONITOR = "Kueue enablePrometheus renders a monitoring.coreos.com/v1 ServiceMonitor and nothing installs its CRD"
IPOIB = "IPoIBNetwork objects do not wait for the Network Operator release that installs their CRD"
IPPOOL = "IPPool does not wait for the NicClusterPolicy (nvIpam) whose reconcile applies its CRD, nor for its namespace"

# (stack, defect id, predicate, reason, how many problems it causes today).
KNOWN: list[tuple[str, str, Defect, str, int]] = [
    ("aws-train", "kueue-servicemonitor", _servicemonitor, SERVICEMONITOR, 1),
    ("onprem", "ipoib-before-crd", _ipoib, IPOIB, 2),
    ("onprem", "ippool-before-crd", _ippool, IPPOOL, 2),
    ("hybrid", "ipoib-before-crd", _ipoib, IPOIB, 2),
    ("hybrid", "ippool-before-crd", _ippool, IPPOOL, 2),
]


@pytest.mark.parametrize("stack", ["aws-train", "onprem", "hybrid"])
def test_example_has_no_problem_beyond_the_known_defects(stack: str, checked_examples: dict[str, Checked]) -> None:
    defects = [d for s, _, d, _, _ in KNOWN if s == stack]
    unknown = [p.message for p in checked_examples[stack].first_up.problems if not any(d(p) for d in defects)]
    assert unknown == []


@pytest.mark.parametrize(
    ("stack", "defect"),
    [pytest.param(s, d, id=f"{s}-{i}", marks=pytest.mark.xfail(strict=True, reason=r)) for s, i, d, r, _ in KNOWN],
)
def test_example_is_free_of_defect(stack: str, defect: Defect, checked_examples: dict[str, Checked]) -> None:
    assert [p.message for p in checked_examples[stack].first_up.problems if defect(p)] == []


@pytest.mark.parametrize("stack", ["aws-train", "onprem", "hybrid"])
def test_every_rendered_and_planned_object_was_validated(stack: str, checked_examples: dict[str, Checked]) -> None:
    checked = checked_examples[stack]
    rendered = sum(len(r.all_objects()) for r in checked.releases.values())
    assert checked.first_up.checked == rendered + len(checked.plan.kubernetes_objects())
    assert checked.first_up.unchecked == []
