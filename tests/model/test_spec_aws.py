"""Schema rules for AWS pools on EFA fabrics: errors name the YAML field (model/rules/estate.py)."""

from __future__ import annotations

import pytest

from model.load import SpecError, parse_estate
from tests.conftest import example_estate

BASE = "config.gpufleet:estate.sites[0].node_pools"


def _problems(estate: dict) -> list[str]:
    with pytest.raises(SpecError) as err:
        parse_estate(estate, "stacks/Pulumi.aws-train.yaml")
    return err.value.problems


def test_example_aws_train_estate_is_valid() -> None:
    parse_estate(example_estate("aws-train"), "stacks/Pulumi.aws-train.yaml")


def test_efa_pool_rejected_in_another_az_than_its_fabric() -> None:
    estate = example_estate("aws-train")
    estate["sites"][0]["node_pools"][0]["availability_zone"] = "us-east-1b"  # h100 on train-efa (us-east-1a)
    problems = _problems(estate)
    assert len(problems) == 1
    assert problems[0].startswith(f"stacks/Pulumi.aws-train.yaml: {BASE}[0].availability_zone: ")
    assert "train-efa" in problems[0] and "us-east-1a" in problems[0] and "another AZ" in problems[0]


def test_non_efa_pool_rejected_on_an_efa_fabric() -> None:
    estate = example_estate("aws-train")
    estate["sites"][0]["node_pools"][1]["fabric"] = "train-efa"  # l40s: g6e.12xlarge supports EFA, so use xlarge
    estate["sites"][0]["node_pools"][1]["instance_type"] = "g6e.xlarge"
    estate["sites"][0]["node_pools"][1]["scaling"] = {"min": 1, "max": 24}  # one GPU each: quotas still fit
    problems = _problems(estate)
    assert len(problems) == 1
    assert f"{BASE}[1].fabric: " in problems[0]
    assert "g6e.xlarge does not support EFA" in problems[0]
    assert "EFA and non-EFA pools must not share a fabric" in problems[0]


def test_efa_fabric_outside_the_site_azs_rejected() -> None:
    estate = example_estate("aws-train")
    estate["sites"][0]["fabrics"][0]["availability_zone"] = "us-east-1d"
    problems = _problems(estate)
    assert any("sites[0].fabrics[0].availability_zone: us-east-1d is not one of the site's" in p for p in problems)


def test_reserved_capacity_pool_needs_the_reservations_az() -> None:
    estate = example_estate("aws-train")
    estate["sites"][0]["node_pools"][1]["capacity"] = {
        "type": "capacity-reservation",
        "reservation_id": "cr-0123456789abcdef0",
    }
    problems = _problems(estate)
    assert len(problems) == 1 and f"{BASE}[1].availability_zone: " in problems[0]
    assert "cr-0123456789abcdef0" in problems[0]
    estate["sites"][0]["node_pools"][1]["availability_zone"] = "us-east-1b"
    parse_estate(estate, "stacks/Pulumi.aws-train.yaml")


def test_fabric_subnet_cidr_must_lie_inside_the_created_vpc() -> None:
    estate = example_estate("aws-train")
    estate["sites"][0]["fabrics"][0]["subnet_cidr"] = "10.99.0.0/20"
    problems = _problems(estate)
    assert any(
        "sites[0].fabrics[0].subnet_cidr: 10.99.0.0/20 is not inside the site's VPC 10.40.0.0/16" in p for p in problems
    )


def test_fabric_in_an_adopted_vpc_needs_a_subnet_id() -> None:
    estate = example_estate("aws-train")
    estate["sites"][0]["vpc"] = {"vpc_id": "vpc-0abc", "private_subnet_ids": ["subnet-a", "subnet-b"]}
    problems = _problems(estate)
    assert any("sites[0].fabrics[0].subnet_id: site use1 adopts VPC vpc-0abc" in p for p in problems)


def test_pool_label_with_a_prefix_eks_rejects_is_refused_by_the_schema() -> None:
    estate = example_estate("aws-train")
    estate["sites"][0]["node_pools"][1]["labels"] = {"node-role.kubernetes.io/inference": "true"}
    problems = _problems(estate)
    assert len(problems) == 1 and f"{BASE}[1].labels: node-role.kubernetes.io/inference uses a prefix" in problems[0]
