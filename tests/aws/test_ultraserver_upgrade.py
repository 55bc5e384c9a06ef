"""Day 2 of an UltraServer pool: EKS user guide ml-eks-nvidia-ultraserver, "When upgrading EKS managed node groups
with P6e-GB200 UltraServers, you must set the desired size of the node group to 0 before upgrading." `gpufleet
diff` refuses a minor or AMI release change that replaces such a group's nodes while the stack keeps it above 0."""

from __future__ import annotations

import copy
from typing import Any

from model.rules.upgrade import ULTRASERVER_RULE, ultraserver_upgrade_problems
from tests.aws.ultraserver import gb200_config


def _estate() -> dict[str, Any]:
    return gb200_config()["gpufleet:estate"]


def _gb200(estate: dict[str, Any]) -> dict[str, Any]:
    return estate["sites"][0]["node_pools"][-1]


def test_an_ami_release_bump_of_a_running_ultraserver_group_is_refused() -> None:
    base = _estate()
    _gb200(base)["scaling"] = {"min": 18, "max": 18}
    head = copy.deepcopy(base)
    _gb200(head)["ami_release"] = "1.34.9-20260714"
    (problem,) = ultraserver_upgrade_problems(base, head, "stacks/Pulumi.test.yaml")
    assert "sites[0].node_pools[3].scaling.desired: pool gb200 is an UltraServer node group" in problem
    assert ULTRASERVER_RULE in problem and "desiredSize=0" in problem


def test_a_minor_bump_is_refused_for_a_group_at_desired_above_zero_and_allowed_at_zero() -> None:
    base = _estate()
    _gb200(base)["scaling"] = {"min": 0, "desired": 9, "max": 18}
    head = copy.deepcopy(base)
    head["sites"][0].setdefault("cluster", {})["version"] = "1.35"
    base["sites"][0].setdefault("cluster", {})["version"] = "1.34"
    assert len(ultraserver_upgrade_problems(base, head, "f")) == 1
    _gb200(head)["scaling"] = {"min": 0, "desired": 0, "max": 18}
    assert ultraserver_upgrade_problems(base, head, "f") == []


def test_other_pools_and_unchanged_stacks_are_not_judged() -> None:
    base = _estate()
    _gb200(base)["scaling"] = {"min": 18, "max": 18}
    assert ultraserver_upgrade_problems(base, copy.deepcopy(base), "f") == []
    head = copy.deepcopy(base)
    head["sites"][0]["node_pools"][0]["ami_release"] = "1.34.9-20260714"  # not an UltraServer pool
    assert ultraserver_upgrade_problems(base, head, "f") == []
