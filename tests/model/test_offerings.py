"""Offerings are judged by AZ ID, never by another account's AZ names (issue 31): an AZ name maps to a different
AZ in each account, an AZ ID is the same AZ everywhere
(https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html). Offline, only a type that no AZ of
the region offers is refused; which of the stack's AZ names offer a type is `gpufleet check --aws`'s to say."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from model import catalog
from model.load import SpecError, parse_estate
from tests.conftest import example_estate


def _with_pool(**pool: Any) -> dict[str, Any]:
    raw = copy.deepcopy(example_estate("aws-train"))
    raw["sites"][0]["node_pools"][1].update(pool)  # l40s: an inference pool on no fabric
    return raw


def test_the_catalog_holds_offerings_by_az_id_only() -> None:
    assert catalog.offered_zone_ids("p5en.48xlarge", "us-east-1") == ["use1-az2", "use1-az6"]
    assert catalog.offered_zone_ids("p5.48xlarge", "eu-north-1") is None  # no offerings recorded there


def test_a_pool_in_an_az_name_is_not_refused_by_another_accounts_names() -> None:
    # p5en.48xlarge is offered in two of us-east-1's six AZ IDs; whether us-east-1b is one of them depends on the
    # account. The catalog once said "not offered in us-east-1b" from its own account's names.
    spec = parse_estate(_with_pool(instance_type="p5en.48xlarge", availability_zone="us-east-1b"), "test")
    assert spec.pool("l40s").instance_type == "p5en.48xlarge"


def test_a_type_offered_in_no_az_of_the_region_is_refused_wherever_the_pool_runs() -> None:
    with pytest.raises(SpecError) as err:
        parse_estate(_with_pool(instance_type="p5e.48xlarge"), "test")
    assert any(
        "node_pools[1].instance_type: p5e.48xlarge is offered in no AZ of us-east-1" in line
        for line in err.value.problems
    ), err.value.problems
