"""`gpufleet check --aws` on reserved pools: the reservation EC2 holds, and the Capacity Block offerings it sells.

moto answers neither DescribeCapacityReservations nor DescribeCapacityBlockOfferings, so a botocore Stubber gives
the documented responses (request and response shapes checked against botocore's EC2 model): a
CapacityBlockOffering has CapacityBlockOfferingId, InstanceType, AvailabilityZone, InstanceCount, StartDate,
EndDate, CapacityBlockDurationHours, UpfrontFee (a string) and CurrencyCode (EC2 API reference,
https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CapacityBlockOffering.html).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from gpufleet.burst.aws import Aws
from gpufleet.review.reality.aws_account import AccountCheck, reservation_checks
from model.load import parse_estate
from model.spec import AwsSite
from tests.conftest import example_estate

OFFERING = "cb-0123456789abcdefg"
START = dt.datetime(2026, 12, 3, 11, 30, tzinfo=dt.UTC)
RESERVATION = "cr-0123456789abcdef0"


@pytest.fixture
def ec2() -> Iterator[tuple[Aws, Stubber]]:
    session = boto3.session.Session(region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    aws = Aws("us-east-1", session=session, sleep=lambda _: None)
    with Stubber(aws.ec2) as stub:
        yield aws, stub
        stub.assert_no_pending_responses()


def _site(capacity: dict[str, Any], max_nodes: int = 2) -> AwsSite:
    estate = example_estate("aws-train")
    estate["sites"][0]["node_pools"] = [
        {"name": "block", "role": "training", "instance_type": "p5en.48xlarge", "fabric": "train-efa",
         "capacity": capacity, "scaling": {"max": max_nodes}}
    ]  # fmt: skip
    estate["tenants"] = [{"name": "research", "gpu_quota": {"block": 16}}]
    site = parse_estate(estate, "s.yaml").sites[0]
    assert isinstance(site, AwsSite)
    return site


def _offering(offering_id: str, fee: str, zone: str = "us-east-1a") -> dict[str, Any]:
    return {
        "CapacityBlockOfferingId": offering_id, "InstanceType": "p5en.48xlarge", "AvailabilityZone": zone,
        "InstanceCount": 2, "StartDate": START, "EndDate": START + dt.timedelta(days=7),
        "CapacityBlockDurationHours": 168, "UpfrontFee": fee, "CurrencyCode": "USD",
    }  # fmt: skip


BUY = {"type": "capacity-block", "instances": 2, "availability_zone": "us-east-1a",
       "block": {"offering_id": OFFERING, "days": 7, "start": "2026-12-03T11:30:00Z", "upfront_usd": 18453.12}}  # fmt: skip
ASKED = {"InstanceType": "p5en.48xlarge", "InstanceCount": 2, "CapacityDurationHours": 168, "StartDateRange": START}


def test_the_offerings_are_printed_and_the_stacks_own_is_held_to_its_fee(ec2: tuple[Aws, Stubber]) -> None:
    aws, stub = ec2
    offerings = [_offering(OFFERING, "18453.12"), _offering("cb-0fedcba9876543210", "17990.40", "us-east-1b")]
    stub.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": offerings}, ASKED)
    result = AccountCheck()
    reservation_checks(_site(BUY), aws, result)
    assert result.problems == []
    assert (
        "pool block of site use1: EC2 offers cb-0fedcba9876543210: 2 x p5en.48xlarge in us-east-1b from "
        "2026-12-03 11:30 UTC to 2026-12-10 11:30 UTC, upfront 17990.40 USD"
    ) in result.checks
    assert f"pool block of site use1: offering {OFFERING} matches the stack (fee, AZ, start, end)" in result.checks


def test_an_offering_whose_fee_differs_from_the_stacks_is_a_problem(ec2: tuple[Aws, Stubber]) -> None:
    aws, stub = ec2
    stub.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": [_offering(OFFERING, "19000.00")]},
                      ASKED)  # fmt: skip
    result = AccountCheck()
    reservation_checks(_site(BUY), aws, result)
    assert result.problems == [
        f"pool block of site use1: offering {OFFERING}: its UpfrontFee is 19,000.00, not block.upfront_usd 18,453.12"
    ]


def test_an_adopted_reservation_smaller_than_the_pool_or_elsewhere_is_a_problem(ec2: tuple[Aws, Stubber]) -> None:
    aws, stub = ec2
    cr = {"CapacityReservationId": RESERVATION, "InstanceType": "p5en.48xlarge", "AvailabilityZone": "us-east-1b",
          "TotalInstanceCount": 2, "State": "scheduled", "ReservationType": "capacity-block"}  # fmt: skip
    stub.add_response(
        "describe_capacity_reservations", {"CapacityReservations": [cr]}, {"CapacityReservationIds": [RESERVATION]}
    )
    adopt = {"type": "capacity-block", "reservation_id": RESERVATION, "block": {"days": 7}}
    result = AccountCheck()
    reservation_checks(_site(adopt, max_nodes=4), aws, result)
    assert result.problems == [
        f"pool block of site use1: reservation {RESERVATION} (2 x p5en.48xlarge in us-east-1b, scheduled): it holds "
        "2 instances, fewer than the pool's 4 at most; it is in us-east-1b, not the pool's us-east-1a"
    ]


def test_an_offering_or_adopted_block_whose_dates_differ_from_the_stacks_is_a_problem(ec2: tuple[Aws, Stubber]) -> None:
    """EC2 blocks end at 11:30 UTC (EC2 user guide, ec2-capacity-blocks), so check --aws holds the stack's end to
    EndDate, for a block to buy and for an adopted one (and the adopted one's start to StartDate)."""
    aws, stub = ec2
    late = {**_offering(OFFERING, "18453.12"), "EndDate": START + dt.timedelta(days=8)}
    stub.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": [late]}, ASKED)
    result = AccountCheck()
    reservation_checks(_site(BUY), aws, result)
    assert result.problems == [
        f"pool block of site use1: offering {OFFERING}: it ends 2026-12-11 11:30 UTC, not the block's end "
        "2026-12-10 11:30 UTC (give block.end: offering EndDate)"
    ]
    cr = {"CapacityReservationId": RESERVATION, "InstanceType": "p5en.48xlarge", "AvailabilityZone": "us-east-1a",
          "TotalInstanceCount": 2, "State": "scheduled", "ReservationType": "capacity-block",
          "StartDate": START + dt.timedelta(days=1), "EndDate": START + dt.timedelta(days=8)}  # fmt: skip
    stub.add_response(
        "describe_capacity_reservations", {"CapacityReservations": [cr]}, {"CapacityReservationIds": [RESERVATION]}
    )
    adopt = {"type": "capacity-block", "reservation_id": RESERVATION, "block": {"days": 7, "start": START.isoformat()}}
    result = AccountCheck()
    reservation_checks(_site(adopt), aws, result)
    assert result.problems == [
        f"pool block of site use1: reservation {RESERVATION} (2 x p5en.48xlarge in us-east-1a, scheduled): it "
        "starts 2026-12-04 11:30 UTC, not block.start 2026-12-03 11:30 UTC; it ends 2026-12-11 11:30 UTC, not the "
        "block's end 2026-12-10 11:30 UTC (give block.end: reservation EndDate)"
    ]


def test_an_adopted_reservation_of_the_other_type_is_a_problem(ec2: tuple[Aws, Stubber]) -> None:
    """A capacity-block pool adopts a Capacity Block (ReservationType capacity-block), an ODCR pool an ODCR
    (ReservationType default): EC2 API reference, CapacityReservation."""
    aws, stub = ec2
    for kind, held in (("capacity-block", "default"), ("capacity-reservation", "capacity-block")):
        cr = {"CapacityReservationId": RESERVATION, "InstanceType": "p5en.48xlarge", "AvailabilityZone": "us-east-1a",
              "TotalInstanceCount": 2, "State": "active", "ReservationType": held}  # fmt: skip
        stub.add_response(
            "describe_capacity_reservations", {"CapacityReservations": [cr]}, {"CapacityReservationIds": [RESERVATION]}
        )
        result = AccountCheck()
        reservation_checks(_site({"type": kind, "reservation_id": RESERVATION, "block": {"days": 7}}
                                 if kind == "capacity-block" else {"type": kind, "reservation_id": RESERVATION}),
                           aws, result)  # fmt: skip
        assert result.problems == [
            f"pool block of site use1: reservation {RESERVATION} (2 x p5en.48xlarge in us-east-1a, active): its "
            f"ReservationType is {held}, not {'default' if held == 'capacity-block' else 'capacity-block'} "
            f"(capacity.type {kind})"
        ]


def test_an_offering_not_on_sale_is_a_problem_unless_the_pool_bought_it(ec2: tuple[Aws, Stubber]) -> None:
    aws, stub = ec2
    other = [_offering("cb-0fedcba9876543210", "17990.40", "us-east-1b")]
    tagged = {"Filters": [{"Name": "tag:cluster", "Values": ["c"]}, {"Name": "tag:pool", "Values": ["block"]}]}
    stub.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": other}, ASKED)
    stub.add_response("describe_capacity_reservations", {"CapacityReservations": []}, tagged)
    result = AccountCheck()
    reservation_checks(_site(BUY), aws, result, {"cluster": "c"})
    assert result.problems == [
        f"pool block of site use1: offering {OFFERING} is not on sale and no reservation is tagged with pool block: "
        "it was sold to someone else or expired; pick one of those above before the first `up`"
    ]
    stub.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": other}, ASKED)
    stub.add_response("describe_capacity_reservations", {"CapacityReservations": [{"CapacityReservationId": RESERVATION}]},
                      tagged)  # fmt: skip
    result = AccountCheck()
    reservation_checks(_site(BUY), aws, result, {"cluster": "c"})
    assert result.problems == []
    assert (
        f"pool block of site use1: offering {OFFERING} is no longer on sale: bought by this stack ({RESERVATION})"
        in (result.checks)
    )
