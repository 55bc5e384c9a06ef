"""Privileged Pod Security only on the registered system namespaces, which carry cost labels."""

from __future__ import annotations

import pytest

from components.kubernetes.namespaces import check_registered
from gpufleet.engine.plan import Plan
from model.conventions import PRIVILEGED_NAMESPACES
from model.tags import Tags
from tests.kubernetes.helpers import estate

PSA = ("enforce", "audit", "warn")
NAMESPACE_TYPES = ("kubernetes:core/v1:Namespace", "kubernetes:core/v1:NamespacePatch")


def _namespaces(plan: Plan) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for t in NAMESPACE_TYPES:
        for r in plan.find(t):
            meta = r.inputs["metadata"]
            out.setdefault(meta["name"], {}).update(meta.get("labels") or {})
    return out


def test_register_is_exactly_the_gpu_and_metrics_stacks_system_namespaces() -> None:
    expected = {"gpu-operator", "network-operator", "kube-system", "nvidia-dra-driver-gpu", "monitoring"}
    assert expected == PRIVILEGED_NAMESPACES


@pytest.mark.parametrize("stack", ["aws-train", "onprem", "hybrid"])
def test_only_registered_namespaces_are_privileged(example_plans: dict[str, Plan], stack: str) -> None:
    for name, labels in _namespaces(example_plans[stack]).items():
        levels = {m: labels.get(f"pod-security.kubernetes.io/{m}") for m in PSA}
        privileged = any(level == "privileged" for level in levels.values())
        # An RDMA tenant namespace hands enforcement (only) to its admission policy: baseline + IPC_LOCK.
        rdma = labels.get("gpufleet.io/rdma") == "true" and levels["audit"] == levels["warn"] != "privileged"
        assert not privileged or name in PRIVILEGED_NAMESPACES or rdma, f"{name} is privileged but not registered"


def test_system_namespaces_privileged_in_all_modes_with_cost_labels(example_plans: dict[str, Plan]) -> None:
    expected = {
        "aws-train": {"gpu-operator", "kube-system"},  # operator + EFA plugin
        "onprem": {"gpu-operator", "network-operator"},  # operator + InfiniBand
    }
    for stack, names in expected.items():
        cost = Tags.from_spec(estate(stack)).labels()
        namespaces = _namespaces(example_plans[stack])
        for name in names:
            labels = namespaces[name]
            for mode in PSA:
                assert labels[f"pod-security.kubernetes.io/{mode}"] == "privileged"
            assert cost.items() <= labels.items()


def test_kube_system_is_patched_not_created(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["aws-train"]
    created = [r.inputs["metadata"]["name"] for r in plan.find("kubernetes:core/v1:Namespace")]
    patched = [r.inputs["metadata"]["name"] for r in plan.find("kubernetes:core/v1:NamespacePatch")]
    assert "kube-system" not in created
    assert "kube-system" in patched


def test_unregistered_namespace_is_refused() -> None:
    with pytest.raises(ValueError, match="research"):
        check_registered(["gpu-operator", "research"])
