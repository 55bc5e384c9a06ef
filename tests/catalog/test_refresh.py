"""`gpufleet catalog refresh` against moto: it reproduces the committed catalog from EC2 data."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from typer.testing import CliRunner

import gpufleet.catalog.refresh as catalog_refresh
from gpufleet.catalog.refresh import refresh
from model.catalog import INSTANCES_FILE, OFFERINGS_KEY, PUBLISHED_KEY, SHIPPED_INSTANCE_TYPES

COMMITTED: dict[str, Any] = json.loads(INSTANCES_FILE.read_text())
TODAY = dt.date(2026, 11, 29)


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for var, value in {
        "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():  # fmt: skip
        monkeypatch.setenv(var, value)
    with mock_aws():
        yield


def _strict(ec2: Any) -> Any:
    """Make moto answer DescribeInstanceTypes like EC2 does: types not in the client's region fail the call."""
    offered = {
        o["InstanceType"]
        for page in ec2.get_paginator("describe_instance_type_offerings").paginate(LocationType="region")
        for o in page["InstanceTypeOfferings"]
    }

    class _Http:
        status_code = 400

    def check(params: dict[str, Any], **_: Any) -> Any:
        asked = [v for k, v in params["body"].items() if k.startswith("InstanceType.")]
        missing = sorted(set(asked) - offered)
        if not missing:
            return None
        error = {
            "Code": "InvalidInstanceType",
            "Message": f"The following supplied instance types do not exist: {missing}",
        }
        return _Http(), {"Error": error, "ResponseMetadata": {"HTTPStatusCode": 400}}

    ec2.meta.events.register("before-call.ec2.DescribeInstanceTypes", check)
    return ec2


def test_refresh_reproduces_the_committed_catalog(aws: None, tmp_path: Path) -> None:
    out = tmp_path / "aws_instances.json"
    # The published entries (p6e-gb200, sold only as UltraServers, which moto does not know) are typed from AWS's
    # pages and survive a refresh that cannot describe them; every other fact comes from EC2.
    published = COMMITTED[PUBLISHED_KEY]
    out.write_text(
        json.dumps({PUBLISHED_KEY: published, "instances": {t: COMMITTED["instances"][t] for t in published}})
    )
    # p5e.48xlarge is not offered in us-east-1 (EC2 would refuse to describe it there): its facts come from a
    # region that offers it, as a maintainer would refresh them; then us-east-1 as committed.
    refresh(_strict(boto3.client("ec2", region_name="us-east-2")), "us-east-2", path=out, today=TODAY)
    doc = refresh(_strict(boto3.client("ec2", region_name="us-east-1")), "us-east-1", path=out, today=TODAY)
    assert doc == json.loads(out.read_text())
    assert doc["instances"] == COMMITTED["instances"]
    assert doc[OFFERINGS_KEY]["us-east-1"] == COMMITTED[OFFERINGS_KEY]["us-east-1"]
    assert doc["generated"] == TODAY.isoformat()
    assert sorted(doc["instances"]) == sorted(SHIPPED_INSTANCE_TYPES)


def test_offerings_are_recorded_by_az_id_and_by_name_ones_are_dropped(aws: None, tmp_path: Path) -> None:
    # AZ names map to AZs per account; AZ IDs are the same AZ in every account
    # (https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html). Offerings by name from the
    # maintainer's account would be wrong in the user's, so the catalog holds IDs and forgets earlier names.
    out = tmp_path / "aws_instances.json"
    out.write_text(json.dumps({**COMMITTED, "offerings": {"us-east-1": {"p5.48xlarge": ["us-east-1a"]}}}))
    doc = refresh(boto3.client("ec2", region_name="us-east-1"), "us-east-1", path=out, today=TODAY)
    assert "offerings" not in doc
    zones = [z for ids in doc[OFFERINGS_KEY]["us-east-1"].values() for z in ids]
    assert zones and all(z.startswith("use1-") and "-az" in z for z in zones)  # Local Zone IDs: use1-dfw2-az1


def test_refresh_in_a_region_without_some_types_keeps_their_facts_and_records_no_zones(
    aws: None, tmp_path: Path
) -> None:
    out = tmp_path / "aws_instances.json"
    shutil.copy(INSTANCES_FILE, out)
    ec2 = _strict(boto3.client("ec2", region_name="ap-south-2"))
    with pytest.raises(Exception, match="InvalidInstanceType"):  # the strict stub really refuses
        ec2.describe_instance_types(InstanceTypes=["p5.48xlarge"])
    doc = refresh(ec2, "ap-south-2", path=out, today=TODAY)
    assert doc["instances"] == COMMITTED["instances"]  # types missing there keep their earlier facts
    assert doc[OFFERINGS_KEY]["ap-south-2"]["p5.48xlarge"] == []
    assert doc[OFFERINGS_KEY]["ap-south-2"]["p6-b300.48xlarge"]  # offered there
    assert doc[OFFERINGS_KEY]["us-east-1"] == COMMITTED[OFFERINGS_KEY]["us-east-1"]  # other regions untouched


def test_catalog_refresh_command_writes_the_catalog(aws: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpufleet.cli.app import app

    out = tmp_path / "aws_instances.json"
    shutil.copy(INSTANCES_FILE, out)
    monkeypatch.setattr(catalog_refresh, "INSTANCES_FILE", out)  # never rewrite the committed file in a test
    result = CliRunner().invoke(app, ["catalog", "refresh", "--region", "us-east-1"])
    assert result.exit_code == 0, result.output
    assert f"{len(SHIPPED_INSTANCE_TYPES)} instance types, offerings for us-east-1" in result.output
    doc = json.loads(out.read_text())
    assert doc["instances"] == COMMITTED["instances"]
    assert doc[OFFERINGS_KEY]["us-east-1"] == COMMITTED[OFFERINGS_KEY]["us-east-1"]
    assert json.loads(INSTANCES_FILE.read_text()) == COMMITTED


def test_a_published_entry_keeps_its_facts_and_offerings_until_ec2_describes_it(aws: None, tmp_path: Path) -> None:
    out = tmp_path / "aws_instances.json"
    shutil.copy(INSTANCES_FILE, out)
    doc = refresh(_strict(boto3.client("ec2", region_name="us-east-1")), "us-east-1", path=out, today=TODAY)
    assert doc["instances"]["p6e-gb200.36xlarge"] == COMMITTED["instances"]["p6e-gb200.36xlarge"]
    assert doc[OFFERINGS_KEY]["us-east-1"]["p6e-gb200.36xlarge"] == ["use1-dfw2-az1"]  # the Dallas Local Zone
    # Once EC2 describes the type, its facts are EC2's and the hand-typed note goes.
    described = {**COMMITTED["instances"]["p6-b200.48xlarge"]}
    monkey = {"p6e-gb200.36xlarge": described}
    real_describe, real_offerings = catalog_refresh.describe, catalog_refresh.offerings
    try:
        catalog_refresh.describe = lambda ec2, types: {
            **real_describe(ec2, [t for t in types if t not in monkey]),
            **monkey,
        }  # type: ignore[assignment]
        catalog_refresh.offerings = lambda ec2, types: {
            **real_offerings(ec2, types),
            "p6e-gb200.36xlarge": ["use1-az9"],
        }  # type: ignore[assignment]
        doc = refresh(boto3.client("ec2", region_name="us-east-1"), "us-east-1", path=out, today=TODAY)
    finally:
        catalog_refresh.describe, catalog_refresh.offerings = real_describe, real_offerings
    assert doc["instances"]["p6e-gb200.36xlarge"] == described
    assert PUBLISHED_KEY not in doc
