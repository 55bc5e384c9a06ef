"""The Dallas Local Zone of a GB200 pool is a fabric's zone only: EKS refuses cluster subnets in a Local Zone
(EKS user guide, network-reqs: "The subnets can't reside in AWS Outposts, AWS Wavelength, or an AWS Local Zone"),
so a site zone there is refused naming the field, and the fabric's subnet is the only thing gpufleet builds there."""

from __future__ import annotations

import pytest

from gpufleet.engine.plan import Plan
from gpufleet.engine.synth import synth
from model.load import SpecError, parse_estate
from model.subnets import local_zone
from tests.aws.ultraserver import ZONE, gb200_config
from tests.conftest import write_project

SUBNET = "aws:ec2/subnet:Subnet"


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    return synth(write_project(tmp_path_factory.mktemp("gb200z"), gb200_config()), "test")


def test_a_local_zone_among_the_site_zones_is_refused_naming_the_field() -> None:
    config = gb200_config()
    config["gpufleet:estate"]["sites"][0]["availability_zones"].append(ZONE)
    with pytest.raises(SpecError) as err:
        parse_estate(config["gpufleet:estate"], "stacks/Pulumi.test.yaml")
    assert f"sites[0].availability_zones[3]: {ZONE} is a Local Zone" in str(err.value)
    assert "network-reqs" in str(err.value)


def test_local_zone_names() -> None:
    assert local_zone("us-east-1", "us-east-1-dfw-2a")
    assert not local_zone("us-east-1", "us-east-1a")
    assert not local_zone("us-east-1", "us-east-1-wl1-bos-wlz-1")  # a Wavelength Zone is no fabric zone either


def test_only_the_fabric_subnet_is_in_the_local_zone_opted_in_and_routed_through_a_site_zone(plan: Plan) -> None:
    zones = {r.inputs.get("availabilityZone") for r in plan.find(SUBNET)}
    assert ZONE in zones
    (fabric,) = [r for r in plan.find(SUBNET) if r.inputs.get("availabilityZone") == ZONE]
    assert fabric.name.endswith("nvl72-efa-subnet")
    assert not [r for r in plan.find("aws:ec2/natGateway:NatGateway") if ZONE in r.name]
    (group,) = plan.find("aws:ec2/availabilityZoneGroup:AvailabilityZoneGroup")
    assert (group.inputs["groupName"], group.inputs["optInStatus"]) == ("us-east-1-dfw-2", "opted-in")
    (assoc,) = [r for r in plan.find("aws:ec2/routeTableAssociation:RouteTableAssociation") if "nvl72-efa" in r.name]
    assert assoc.inputs.get("routeTableId")
