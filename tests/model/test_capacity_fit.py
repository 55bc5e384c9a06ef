"""A pool fits the reservation it runs in, and a block is bought from an offering with the offering's facts.

EC2 user guide, capacity-blocks-launch: "Your instance can't launch in a subnet in a different Availability Zone
from the Availability Zone where your Capacity Block is located"; a reservation launches no more instances than
it holds (capacity-blocks-launch: "Launching an instance into a Capacity Block reduces the available capacity by
the number of instances launched").
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from model import blocks
from model.load import SpecError, parse_estate
from model.spec import AwsNodePool
from tests.conftest import example_estate

RESERVATION = "cr-0123456789abcdef0"
POOLS = "config.gpufleet:estate.sites[0].node_pools"


def _estate(*capacities: dict[str, Any], max_nodes: int = 2, fabric: str | None = "train-efa") -> dict[str, Any]:
    """aws-train plus one p5en pool per capacity (on train-efa, in us-east-1a, unless `fabric` is None)."""
    estate = example_estate("aws-train")
    for i, capacity in enumerate(capacities):
        pool: dict[str, Any] = {"name": f"block{i}", "role": "training", "instance_type": "p5en.48xlarge",
                                "capacity": capacity, "scaling": {"max": max_nodes}}  # fmt: skip
        if fabric:
            pool["fabric"] = fabric
        else:
            pool["availability_zone"] = "us-east-1b"
        estate["sites"][0]["node_pools"].append(pool)
    return estate


def _problems(estate: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as err:
        parse_estate(estate, "s.yaml")
    return [p.removeprefix("s.yaml: ") for p in err.value.problems]


def _block(**extra: Any) -> dict[str, Any]:
    return {"type": "capacity-block", "reservation_id": RESERVATION, "block": {"days": 7, "upfront_usd": 1000.0},
            **extra}  # fmt: skip


def test_a_pool_larger_than_its_reservation_is_refused_naming_scaling_max() -> None:
    (problem,) = _problems(_estate(_block(instances=2), max_nodes=4))
    assert problem == (
        f"{POOLS}[3].scaling.max: pool block0 may reach 4 nodes, more than the 2 instances capacity-block "
        f"{RESERVATION} holds; lower scaling.max to 2 or less, or reserve more"
    )
    parse_estate(_estate(_block(instances=2), max_nodes=2), "s.yaml")


def test_two_pools_on_one_reservation_share_its_instances() -> None:
    odcr = {"type": "capacity-reservation", "reservation_id": RESERVATION, "instances": 3}
    problems = _problems(_estate(odcr, odcr, max_nodes=2))
    assert (
        f"{POOLS}[3].scaling.max: pool block0 may reach 4 nodes (with block1), more than the 3 instances"
        in (problems[0])
    )
    assert len(problems) == 2


def test_a_pool_outside_its_reservations_az_is_refused() -> None:
    (problem,) = _problems(_estate(_block(availability_zone="us-east-1b")))
    assert problem.startswith(f"{POOLS}[3].fabric: pool block0 runs in us-east-1a (fabric train-efa), but ")
    assert "is in us-east-1b: instances launch into a reservation only from a subnet in its AZ" in problem
    (problem,) = _problems(_estate(_block(availability_zone="us-east-1a"), fabric=None))
    assert problem.startswith(f"{POOLS}[3].availability_zone: pool block0 runs in us-east-1b (availability_zone)")


def test_a_block_holds_only_the_instance_counts_aws_sells() -> None:
    (problem,) = _problems(_estate(_block(instances=3), max_nodes=2))
    assert problem == (f"{POOLS}[3].capacity: instances 3: a capacity block holds 1, 2, 4, 8, 16, 32 or 64 instances")


def test_buying_an_offering_needs_the_offerings_facts_and_no_reservation_id() -> None:
    buy = {"type": "capacity-block", "block": {"days": 7, "offering_id": "cb-0123456789abcdefg"}}
    (problem,) = _problems(_estate(buy))
    assert problem == (
        f"{POOLS}[3].capacity: buying offering cb-0123456789abcdefg needs block.start, "
        "block.upfront_usd, instances, availability_zone: the offering's StartDate, UpfrontFee, InstanceCount and "
        "AvailabilityZone (`gpufleet check --aws` prints them)"
    )
    both = {**buy, "reservation_id": RESERVATION}
    (problem,) = _problems(_estate(both))
    assert "a block bought with block.offering_id has no reservation_id yet" in problem


def test_a_blocks_phases_follow_its_end() -> None:
    capacity = _block(instances=2)
    capacity["block"]["start"] = "2026-12-03T11:30:00Z"
    spec = parse_estate(_estate(capacity), "s.yaml")
    pool = next(p for p in spec.sites[0].node_pools if p.name == "block0")
    assert isinstance(pool, AwsNodePool)
    at = dt.datetime(2026, 12, 10, 11, 30, tzinfo=dt.UTC)  # the end: start + 7 days
    phases = [blocks.block_phase(pool, at + dt.timedelta(minutes=m)) for m in (-7 * 24 * 60 - 1, -61, -60, 0)]
    assert phases == ["scheduled", "active", "draining", "ended"]
    assert blocks.closed_flavors(spec.sites[0], at - dt.timedelta(minutes=60)) == {"block0"}
    assert blocks.closed_flavors(spec.sites[0], at - dt.timedelta(minutes=61)) == frozenset()


def test_a_block_ends_at_half_past_eleven_utc_not_days_after_its_start() -> None:
    """EC2 user guide, ec2-capacity-blocks, Considerations: "Capacity Blocks end at 11:30AM Coordinated Universal
    Time (UTC)"; an offering starting 06:55 for a day ends 11:30 the next day (CapacityBlockDurationMinutes 35),
    not 24 h later, so the pool was closed 4.5 paid hours early."""
    capacity = _block(instances=2)
    capacity["block"].update(days=1, start="2026-12-02T06:55:00Z")
    (problem,) = _problems(_estate(capacity))
    assert "the block ends 2026-12-03 06:55 UTC, but Capacity Blocks end at 11:30 UTC" in problem
    capacity["block"]["end"] = "2026-12-03T11:30:00Z"
    spec = parse_estate(_estate(capacity), "s.yaml")
    pool = next(p for p in spec.sites[0].node_pools if p.name == "block0")
    assert isinstance(pool, AwsNodePool) and pool.capacity.block is not None
    assert pool.capacity.block.hours == pytest.approx(28 + 35 / 60)
    assert blocks.block_phase(pool, dt.datetime(2026, 12, 3, 7, tzinfo=dt.UTC)) == "active"
    assert blocks.admission_stops(pool) == dt.datetime(2026, 12, 3, 10, 30, tzinfo=dt.UTC)


def test_a_block_pool_on_a_fabric_with_a_named_placement_group_is_refused() -> None:
    """EC2 user guide, ec2-capacity-blocks, Considerations: Capacity Blocks don't support placement groups."""
    estate = _estate(_block(instances=2))
    fabric = next(f for f in estate["sites"][0]["fabrics"] if f["name"] == "train-efa")
    fabric["placement_group_name"] = "odcr-pg"
    (problem,) = _problems(estate)
    assert "capacity blocks take no placement group: pool block0 is on fabric train-efa" in problem
