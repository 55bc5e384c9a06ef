"""Offerings are judged by AZ ID, never by another account's AZ names (issue 31): an AZ name maps to a different
AZ in each account, an AZ ID is the same AZ everywhere
(https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html). Offline, only a type that no AZ of
the region offers is refused; which of the stack's AZ names offer a type is `gpufleet check --aws`'s to say."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app
from model import catalog
from model.load import ESTATE_KEY, SpecError, parse_estate
from tests.conftest import example_config, example_estate, write_project


def _with_pool(**pool: Any) -> dict[str, Any]:
    raw = copy.deepcopy(example_estate("aws-train"))
    raw["sites"][0]["node_pools"][1].update(pool)  # l40s: an inference pool on no fabric
    return raw


def test_the_catalog_holds_offerings_by_az_id_only() -> None:
    assert catalog.offered_zone_ids("p5en.48xlarge", "us-east-1") == ["use1-az2", "use1-az6"]
    assert catalog.offered_zone_ids("p5.48xlarge", "eu-west-1") == []  # recorded: offered in no AZ there
    assert catalog.offered_zone_ids("p5.48xlarge", "mx-central-1") is None  # no offerings recorded there


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


def test_an_eu_west_1_p5_and_g6e_estate_is_refused_by_validate_naming_file_and_field(tmp_path: Path) -> None:
    # moto 5.2.5's DescribeInstanceTypeOfferings data (availability-zone-id/eu-west-1.json.gz), which `gpufleet
    # catalog refresh` records, offers no p5 or g6e in eu-west-1; skypilot-org/skypilot-catalog
    # catalogs/v8/aws/vms.csv at 00148f2af3672e2229b4f7bf8157d5a3f36e3c35 lists no eu-west-1 p5.48xlarge row either.
    config = example_config("aws-train")
    config["aws:region"] = "eu-west-1"
    site = config[ESTATE_KEY]["sites"][0]
    site.update(region="eu-west-1", availability_zones=["eu-west-1a", "eu-west-1b", "eu-west-1c"])
    site["fabrics"][0]["availability_zone"] = "eu-west-1a"
    result = CliRunner().invoke(app, ["validate", "-s", "test", "-C", str(write_project(tmp_path, config))])
    assert result.exit_code == 2, result.output
    out = " ".join(result.output.split())
    for j, itype in enumerate(("p5.48xlarge", "g6e.12xlarge", "g6e.xlarge")):
        assert (
            "Pulumi.test.yaml" in out
            and f"node_pools[{j}].instance_type: {itype} is offered in no AZ of eu-west-1" in out
        )
    # the way out is recording the region's offerings again (`catalog refresh -r`), never refreshing prices
    assert "--prices" not in out and "refresh prices" not in out and "unpriced" not in out and "Traceback" not in out


def test_the_refusal_names_where_and_when_the_offerings_were_recorded_and_the_way_out() -> None:
    # The offerings of every region came from moto 5.2.5's bundled files, not the maintainer's account; AWS may
    # offer the type since, so the message gives the source, its date and the command that records the region.
    with pytest.raises(SpecError) as err:
        parse_estate(_with_pool(instance_type="p5e.48xlarge"), "test")
    line = next(p for p in err.value.problems if "p5e.48xlarge is offered in no AZ of us-east-1" in p)
    assert "moto 5.2.5's bundled EC2 offerings" in line
    assert "availability-zone-id/us-east-1.json.gz" in line and "recorded 2026-11-29" in line
    assert line.endswith("record the region again with `gpufleet catalog refresh -r us-east-1` (AWS credentials)")
