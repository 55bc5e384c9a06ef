"""`gpufleet check --aws` against moto (EC2: AZs, offerings by AZ ID, instances) with Service Quotas stubbed
(tests/aws_stubs.py): the quota each GPU pool launches under, too small and large enough, and offerings judged by
the account's own AZ-name-to-ID mapping (issue 31)."""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator
from typing import Any
from unittest import mock

import boto3
import pytest
from moto import mock_aws

from gpufleet.burst.aws import Aws
from gpufleet.review.reality.aws_account import check_account
from model.spec import EstateSpec
from tests.aws_stubs import Quotas
from tests.conftest import example_estate

P, G = "L-417A185B", "L-DB2E81BA"  # Running On-Demand P / G and VT instances


@pytest.fixture(scope="module")
def moto() -> Iterator[None]:
    env = {"MOTO_EC2_LOAD_DEFAULT_AMIS": "false", "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    with mock.patch.dict(os.environ, env), mock_aws():
        yield


@pytest.fixture
def aws(moto: None) -> Aws:
    return Aws("us-east-1", session=boto3.session.Session(region_name="us-east-1"))


def _check(aws: Aws, spec: EstateSpec, p: float, g: float) -> Any:
    quotas = Quotas(aws)
    quotas.value(P, p)  # asked in quota-code order, as the estate draws on them
    quotas.value(G, g)
    try:
        return check_account(spec, lambda region: aws)
    finally:
        quotas.stub.deactivate()


def _spec(**h100: Any) -> EstateSpec:
    raw = copy.deepcopy(example_estate("aws-train"))
    raw["sites"][0]["node_pools"][0].update(h100)
    return EstateSpec.model_validate(raw)


def test_a_quota_below_the_desired_size_fails_the_first_up_and_says_what_to_request(aws: Aws) -> None:
    # A fresh account has 0 vCPUs for P instances (https://docs.aws.amazon.com/ec2/latest/instancetypes/
    # ec2-instance-quotas.html); aws-train's h100 pool needs 2 x 192 at desired size and 4 x 192 at most.
    result = _check(aws, _spec(), p=0, g=1000)
    assert result.problems == [
        "EC2 quota L-417A185B (Running On-Demand P instances) in us-east-1 is 0 vCPUs with 0 in use (running P "
        "instances, this estate's own left out); the pools need 384 at desired size, so the first `up` fails with "
        "VcpuLimitExceeded. Request at least 1152 vCPUs (1152 while node group updates roll, plus what runs)"
    ]
    assert any(c.startswith("EC2 quota L-DB2E81BA (Running On-Demand G and VT instances) in us-east-1 is 1000")
               and "room for the pools' 616 vCPUs while updates roll" in c for c in result.checks)  # fmt: skip


def test_a_quota_between_desired_and_max_size_is_a_problem_too(aws: Aws) -> None:
    result = _check(aws, _spec(), p=500, g=1000)
    assert len(result.problems) == 1
    assert (
        "the pools need 768 at most, so they cannot grow to their max. Request at least 1152 vCPUs"
        in (result.problems[0])
    )


def test_a_quota_for_the_max_size_but_not_an_update_roll_is_a_problem(aws: Aws) -> None:
    """EKS raises a group's maximum and desired size by the larger of up to 2 x its AZs and maxUnavailable before it
    drains old nodes (managed-node-update-behavior, "Scale up phase"): h100 at max 4 launches 2 more p5 nodes."""
    result = _check(aws, _spec(), p=768, g=616)
    (problem,) = result.problems
    assert "a node group update (a Kubernetes or AMI bump) at max size launches new nodes" in problem
    assert "needs 1152" in problem and "Request at least 1152 vCPUs" in problem


def test_quotas_large_enough_and_offered_azs_pass(aws: Aws) -> None:
    result = _check(aws, _spec(), p=1152, g=616)
    assert result.problems == []
    # moto's account maps us-east-1a to use1-az6, which offers p5.48xlarge.
    assert "pool h100 of site use1: p5.48xlarge offered in us-east-1a (use1-az6 in this account)" in result.checks


def test_running_instances_of_the_family_count_against_the_quota(aws: Aws) -> None:
    run = aws.ec2.run_instances(ImageId="ami-12c6146b", InstanceType="p4d.24xlarge", MinCount=1, MaxCount=1)
    ids = [i["InstanceId"] for i in run["Instances"]]
    try:
        result = _check(aws, _spec(), p=1152, g=616)  # 96 P vCPUs already run
    finally:
        aws.ec2.terminate_instances(InstanceIds=ids)
    assert len(result.problems) == 1 and "with 96 in use" in result.problems[0]
    assert "Request at least 1248 vCPUs" in result.problems[0]


def test_offerings_are_judged_by_this_accounts_az_ids_not_another_accounts_names(aws: Aws) -> None:
    # AZ names map to AZs per account (https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html):
    # p5en.48xlarge is offered in use1-az2 and use1-az6 only. In moto's account us-east-1a is use1-az6; in this one
    # it is use1-az3, so the same stack file's EFA fabric in us-east-1a cannot get p5en nodes.
    other_account = {"us-east-1a": "use1-az3", "us-east-1b": "use1-az6", "us-east-1c": "use1-az2"}

    def zones(params: Any, **_: Any) -> Any:
        class _Http:
            status_code = 200

        azs = [{"ZoneName": n, "ZoneId": i, "RegionName": "us-east-1", "State": "available"}
               for n, i in other_account.items()]  # fmt: skip
        return _Http(), {"AvailabilityZones": azs, "ResponseMetadata": {"HTTPStatusCode": 200}}

    aws.ec2.meta.events.register("before-call.ec2.DescribeAvailabilityZones", zones)
    try:
        result = _check(aws, _spec(instance_type="p5en.48xlarge"), p=1152, g=616)
    finally:
        aws.ec2.meta.events.unregister("before-call.ec2.DescribeAvailabilityZones", zones)
    assert (
        "pool h100 of site use1: EC2 does not offer p5en.48xlarge in us-east-1a (use1-az3 in this account); it is "
        "offered in us-east-1c (use1-az2), us-east-1b (use1-az6): move the pool (or its fabric) there"
    ) in result.problems
    # g6e is not offered in use1-az3 either: the L40S pools spread over the site's AZs meet it in us-east-1a too.
    assert all(" in us-east-1a (use1-az3 in this account)" in p for p in result.problems)
    assert len(result.problems) == 3


def test_an_estate_without_aws_sites_reads_nothing() -> None:
    def refuse(region: str) -> Aws:
        raise AssertionError(f"asked AWS in {region}")

    result = check_account(EstateSpec.model_validate(example_estate("onprem")), refuse)
    assert result.problems == [] and result.checks == ["the estate has no AWS site: nothing to read"]


def test_the_estates_own_running_nodes_are_not_counted_twice(aws: Aws) -> None:
    """A deployed, correctly sized estate passes: its 2 running p5 nodes (tagged by EKS with the estate's cluster)
    are within the pools' max of 4 x 192 vCPUs (plus 2 while an update rolls), which the 1152-vCPU quota holds. Anyone else's p5 still counts."""
    tags = [{"ResourceType": "instance", "Tags": [{"Key": "eks:cluster-name", "Value": "train-prod-use1"}]}]
    run = aws.ec2.run_instances(
        ImageId="ami-12c6146b", InstanceType="p5.48xlarge", MinCount=2, MaxCount=2, TagSpecifications=tags
    )
    ids = [i["InstanceId"] for i in run["Instances"]]
    try:
        result = _check(aws, _spec(), p=1152, g=616)
        other = aws.ec2.run_instances(ImageId="ami-12c6146b", InstanceType="p5.48xlarge", MinCount=1, MaxCount=1)
        ids += [i["InstanceId"] for i in other["Instances"]]
        crowded = _check(aws, _spec(), p=1152, g=616)
    finally:
        aws.ec2.terminate_instances(InstanceIds=ids)
    assert result.problems == [], result.problems
    assert len(crowded.problems) == 1 and "with 192 in use" in crowded.problems[0]
