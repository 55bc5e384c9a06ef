"""A Capacity Block bought as code, and its end modelled like a burst window.

- Bought from an offering with aws.ec2.CapacityBlockReservation, which AWS never refunds: "Once created, a
  reservation is valid for the duration of the provided capacityBlockOfferingId and cannot be deleted.
  Performing a destroy will only remove the resource from state"
  (https://www.pulumi.com/registry/packages/aws/api-docs/ec2/capacityblockreservation/).
- EC2 terminates what still runs thirty minutes before the block ends (EC2 user guide, capacity-blocks-using), so
  admission to its flavor stops before then and, after the end, its node group holds nothing.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from gpufleet.engine.plan import Plan, PlanResource
from gpufleet.engine.synth import synth_stack
from model.conventions import POOL_TAG
from model.load import read_stack
from tests.conftest import example_config, write_project

OFFERING = "cb-0123456789abcdefg"
BLOCK_TYPE = "aws:ec2/capacityBlockReservation:CapacityBlockReservation"
LT = "aws:ec2/launchTemplate:LaunchTemplate"
NG = "aws:eks/nodeGroup:NodeGroup"
CQ = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
# The block runs 2026-12-03 11:30 to 2026-12-10 11:30 UTC; admission stops an hour before its end.
ACTIVE = dt.datetime(2026, 12, 5, 11, 30, tzinfo=dt.UTC)
DRAINING = dt.datetime(2026, 12, 10, 10, 45, tzinfo=dt.UTC)
ENDED = dt.datetime(2026, 12, 10, 12, 0, tzinfo=dt.UTC)


def bought_block_config() -> dict[str, Any]:
    """aws-train plus a two-instance p5en block bought from an offering, with quota for the research tenant."""
    config = example_config("aws-train")
    estate = config["gpufleet:estate"]
    estate["sites"][0]["node_pools"].append(
        {"name": "h200-block", "role": "training", "instance_type": "p5en.48xlarge", "fabric": "train-efa",
         "capacity": {"type": "capacity-block", "instances": 2, "availability_zone": "us-east-1a",
                      "block": {"offering_id": OFFERING, "days": 7, "start": "2026-12-03T11:30:00Z",
                                "upfront_usd": 18453.12}},
         "scaling": {"max": 2}}
    )  # fmt: skip
    research = next(t for t in estate["tenants"] if t["name"] == "research")
    research["gpu_quota"]["h200-block"] = 16
    return config


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> dict[dt.datetime, Plan]:
    project: Path = write_project(tmp_path_factory.mktemp("block"), bought_block_config())
    stack_file = read_stack(project, "test")
    return {now: synth_stack(project, "test", stack_file, now=now) for now in (ACTIVE, DRAINING, ENDED)}


def _gpu_quota(plan: Plan, tenant: str, flavor: str) -> dict[str, Any]:
    cq = plan.one(CQ, f"use1-k8s-kueue-cq-{tenant}")
    (group,) = [g for g in cq.inputs["spec"]["resourceGroups"] if flavor in [f["name"] for f in g["flavors"]]]
    (f,) = [f for f in group["flavors"] if f["name"] == flavor]
    return next(r for r in f["resources"] if r["name"] == "nvidia.com/gpu")


def test_a_bought_block_is_purchased_once_and_never_deleted_by_destroy(plans: dict[dt.datetime, Plan]) -> None:
    plan = plans[ACTIVE]
    (block,) = plan.find(BLOCK_TYPE)
    assert block.inputs["capacityBlockOfferingId"] == OFFERING
    assert block.inputs["instancePlatform"] == "Linux/UNIX"
    assert block.inputs["tags"][POOL_TAG] == "h200-block"
    assert block.protect and block.retain_on_delete
    lt: PlanResource = plan.one(LT, "use1-h200-block-lt")
    target = lt.inputs["capacityReservationSpecification"]["capacityReservationTarget"]
    assert target["capacityReservationId"] == "use1-h200-block-block-id"  # the purchased reservation's id
    assert lt.inputs["instanceMarketOptions"] == {"marketType": "capacity-block"}


def test_preview_warns_how_many_days_the_block_has_left(plans: dict[dt.datetime, Plan]) -> None:
    (warning,) = [w for w in plans[ACTIVE].warnings if "capacity block" in w]
    assert "pool h200-block: capacity block (bought from offering cb-0123456789abcdefg) ends in 5 days" in warning
    assert "(2026-12-10 11:30 UTC)" in warning and "stops admitting to its flavor at 2026-12-10 10:30 UTC" in warning


def test_admission_to_the_blocks_flavor_stops_an_hour_before_its_end(plans: dict[dt.datetime, Plan]) -> None:
    assert _gpu_quota(plans[ACTIVE], "research", "h200-block") == {
        "name": "nvidia.com/gpu", "nominalQuota": 16, "borrowingLimit": 8
    }  # fmt: skip
    assert _gpu_quota(plans[DRAINING], "research", "h200-block") == {
        "name": "nvidia.com/gpu", "nominalQuota": 0, "borrowingLimit": 0
    }  # fmt: skip
    assert _gpu_quota(plans[DRAINING], "research", "h100")["nominalQuota"] == 24  # other flavors keep theirs
    # While draining, the node group is EKS's to scale down: its desired size is still not the stack's.
    ng = plans[DRAINING].one(NG, "use1-h200-block-ng")
    assert "scalingConfig.desiredSize" in ng.ignore_changes


def test_after_the_end_the_node_group_holds_nothing(plans: dict[dt.datetime, Plan]) -> None:
    ng = plans[ENDED].one(NG, "use1-h200-block-ng")
    assert ng.inputs["scalingConfig"] == {"minSize": 0, "desiredSize": 0, "maxSize": 1}  # EKS's least max
    assert "scalingConfig.desiredSize" not in ng.ignore_changes
    (warning,) = [w for w in plans[ENDED].warnings if "capacity block" in w]
    assert "ended 2026-12-10 11:30 UTC: its node group is held at 0" in warning
