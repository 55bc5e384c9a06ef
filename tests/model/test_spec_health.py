"""Pool health in the stack file: one remediator, EKS node repair's limits, detectors the site can run."""

from __future__ import annotations

from typing import Any

import pytest

from model.health import estate_health
from model.load import SpecError, parse_estate
from tests.conftest import example_estate

AWS = "stacks/Pulumi.aws-train.yaml"
BASE = "config.gpufleet:estate.sites[0].node_pools"


def _problems(estate: dict[str, Any], path: str = AWS) -> list[str]:
    with pytest.raises(SpecError) as err:
        parse_estate(estate, path)
    return err.value.problems


def test_each_pool_has_detectors_and_one_remediator_by_default() -> None:
    aws = {h.pool: h for h in estate_health(parse_estate(example_estate("aws-train"), AWS))}
    assert aws["l40s"].detectors == ("node-monitoring-agent", "dcgm")
    assert aws["l40s"].remediator == "eks-node-repair"
    onprem = {h.pool: h for h in estate_health(parse_estate(example_estate("onprem"), "stacks/Pulumi.onprem.yaml"))}
    assert onprem["train"].detectors == ("dcgm",) and onprem["train"].remediator == "none"
    assert onprem["train"].repair is None


def test_repair_limits_are_a_count_or_a_percentage() -> None:
    estate = example_estate("aws-train")
    estate["sites"][0]["node_pools"][1]["health"] = {"repair": {"max_unhealthy": "120%"}}
    problems = _problems(estate)
    assert len(problems) == 1 and f"{BASE}[1].health.repair.max_unhealthy" in problems[0], problems


def test_no_unhealthy_threshold_by_default_and_a_warning_when_a_percentage_is_under_one_node() -> None:
    # EKS NodeRepairConfig: repair stops *above* the threshold; 20% of at most 4 nodes is under one node.
    estate = example_estate("aws-train")
    pools = {h.pool: h for h in estate_health(parse_estate(estate, AWS))}
    assert pools["l40s"].repair == {"enabled": True, "max_parallel_nodes_repaired_count": 1}
    assert all(not h.warnings for h in pools.values())
    estate["sites"][0]["node_pools"][1]["health"] = {"repair": {"max_unhealthy": "20%"}}  # l40s, max 6
    estate["sites"][0]["node_pools"][2]["health"] = {"repair": {"max_unhealthy": "20%"}}  # agents-l40s, max 4
    pools = {h.pool: h for h in estate_health(parse_estate(estate, AWS))}
    assert pools["l40s"].warnings == ()
    assert pools["agents-l40s"].warnings == (
        "max_unhealthy 20% of at most 4 nodes is under one node: EKS node repair stops at the first unhealthy node; "
        "set a count such as 1",
    )


def test_repair_settings_rejected_with_another_remediator() -> None:
    estate = example_estate("aws-train")
    estate["sites"][0]["node_pools"][1]["health"] = {"remediator": "nvsentinel-janitor", "repair": {"max_parallel": 2}}
    problems = _problems(estate)
    assert len(problems) == 1 and "repair is only allowed with remediator eks-node-repair" in problems[0]


def test_eks_node_repair_needs_the_node_monitoring_agent() -> None:
    estate = example_estate("aws-train")
    estate["sites"][0]["node_pools"][1]["health"] = {"detectors": ["dcgm"]}
    problems = _problems(estate)
    assert len(problems) == 1 and "keep node-monitoring-agent in detectors" in problems[0]


def test_two_overrides_for_one_condition_and_reason_rejected() -> None:
    estate = example_estate("aws-train")
    override = {"condition": "AcceleratedHardwareReady", "reason": "NvidiaXID79Error", "action": "Reboot",
                "wait_minutes": 10}  # fmt: skip
    estate["sites"][0]["node_pools"][1]["health"] = {"repair": {"overrides": [override, override]}}
    problems = _problems(estate)
    assert len(problems) == 1 and "two overrides for AcceleratedHardwareReady" in problems[0]


@pytest.mark.parametrize(
    ("condition", "reason"),
    [("KernelReady", "NvidiaXID79Error"), ("AcceleratedHardwareReady", "NvidiaXID13Error"),
     ("AcceleratedHardwareReady", "NvidiaXID79Warning"), ("StorageReady", "EBSVolumeIOPSExceeded")],
)  # fmt: skip
def test_an_override_for_a_reason_the_agent_never_sets_is_refused_with_the_choices(condition: str, reason: str) -> None:
    # aws/eks-node-monitoring-agent v1.7.0: pkg/reasons/reasons.yaml (Fatal reasons set the condition; Warning
    # ones are events) and WellKnownXidCodes in monitors/nvidia/dcgm/dcgm_policies.go (XID 13 is only a warning).
    estate = example_estate("aws-train")
    override = {"condition": condition, "reason": reason, "action": "Reboot", "wait_minutes": 10}
    estate["sites"][0]["node_pools"][1]["health"] = {"repair": {"overrides": [override]}}
    problems = _problems(estate)
    assert len(problems) == 1 and f"never sets {condition} with reason {reason}" in problems[0], problems
    if condition == "KernelReady":
        assert "KernelReady reasons: ForkFailedOutOfPIDs" in problems[0]


def test_the_agents_templated_reasons_are_accepted() -> None:
    estate = example_estate("aws-train")
    overrides = [
        {"condition": "AcceleratedHardwareReady", "reason": r, "action": "Reboot", "wait_minutes": 10}
        for r in ("NvidiaXID48Error", "DCGMHealthCode12", "NvidiaDoubleBitError")
    ]
    estate["sites"][0]["node_pools"][1]["health"] = {"repair": {"overrides": overrides}}
    parse_estate(estate, AWS)


def test_bare_metal_pool_cannot_name_eks_node_repair() -> None:
    estate = example_estate("onprem")
    estate["sites"][0]["node_pools"][0]["health"] = {"remediator": "eks-node-repair"}
    problems = _problems(estate, "stacks/Pulumi.onprem.yaml")
    assert len(problems) == 1 and "eks-node-repair exists only on EKS node groups" in problems[0]


def test_dcgm_detector_rejected_without_the_gpu_operator() -> None:
    estate = example_estate("onprem")
    site = estate["sites"][0]
    site["kubernetes"]["gpu_stack"] = "device-plugin"
    site["kubernetes"]["driver_managed_by"] = "host"
    site["node_pools"][0]["health"] = {"detectors": ["dcgm"]}
    problems = [p for p in _problems(estate, "stacks/Pulumi.onprem.yaml") if "health.detectors" in p]
    assert len(problems) == 1 and "gpu_stack is device-plugin" in problems[0], problems
