"""`gpufleet catalog refresh --prices`: a region's prices from the AWS Price List (pricing:GetProducts).

moto has no pricing service, so the client is a real botocore client whose answers come from
botocore.stub.Stubber: botocore validates every request's parameters and every response against the pricing
service model, and the responses are the recorded-shape fixture in fixtures/ (its `_about` says where the shape
and the figures come from).
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from typer.testing import CliRunner

from gpufleet.catalog.price_list import PriceListError
from gpufleet.catalog.prices import (
    FILTERS,
    SYSTEM_INSTANCE_TYPE,
    aws_regions_doc,
    ec2_instance_type_names_doc,
    on_demand_usd,
    refresh_prices,
)
from gpufleet.catalog.service_prices import QUERIES, filters
from model import catalog

FIXTURE: dict[str, Any] = json.loads(
    (Path(__file__).parent / "fixtures" / "pricing_get_products_us-west-2.json").read_text()
)
SERVICES: dict[str, Any] = json.loads(
    (Path(__file__).parent / "fixtures" / "pricing_get_products_services_us-west-2.json").read_text()
)
REGION = FIXTURE["region"]
TYPES = ["p5.48xlarge", "g6e.12xlarge", "g6e.xlarge", "p5e.48xlarge"]
TODAY = dt.date(2026, 11, 30)


def _client() -> Any:
    return boto3.client(
        "pricing", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )


def _expect(stub: Stubber, instance_type: str, products: list[dict[str, Any]]) -> None:
    filters = [
        {"Type": "TERM_MATCH", "Field": "instanceType", "Value": instance_type},
        {"Type": "TERM_MATCH", "Field": "regionCode", "Value": REGION},
        *({"Type": "TERM_MATCH", "Field": f, "Value": v} for f, v in FILTERS),
    ]
    stub.add_response(
        "get_products",
        {"FormatVersion": "aws_v1", "PriceList": [json.dumps(p) for p in products]},
        {"ServiceCode": "AmazonEC2", "Filters": filters, "FormatVersion": "aws_v1"},
    )


def _refresh(tmp_path: Path) -> tuple[dict[str, Any], Path]:
    table = tmp_path / "aws_prices.json"
    shutil.copy(catalog.PRICES_FILE, table)
    client = _client()
    with Stubber(client) as stub:
        for t in [*TYPES, SYSTEM_INSTANCE_TYPE]:
            _expect(stub, t, FIXTURE["products"][t])
        for q in QUERIES:
            stub.add_response(
                "get_products",
                {"FormatVersion": "aws_v1", "PriceList": [json.dumps(p) for p in SERVICES["products"][q.key]]},
                {
                    "ServiceCode": q.service_code,
                    "Filters": filters(q, REGION, "US West (Oregon)"),
                    "FormatVersion": "aws_v1",
                },
            )
        doc = refresh_prices(client, REGION, path=table, instance_types=TYPES, today=TODAY)
        stub.assert_no_pending_responses()
    return doc, table


def test_refresh_prices_writes_the_regions_linux_on_demand_prices_from_get_products(tmp_path: Path) -> None:
    doc, table = _refresh(tmp_path)
    assert doc["regions"][REGION] == {"p5.48xlarge": 55.04, "g6e.12xlarge": 10.49264, "g6e.xlarge": 1.861}
    assert json.loads(table.read_text()) == doc
    source = doc["sources"][REGION]
    assert source["date"] == "2026-01-21"  # the products' publicationDate, not the day of the run
    assert "GetProducts" in source["source"] and "tenancy=Shared" in source["source"]


def test_a_type_the_price_list_does_not_answer_stays_unpriced_never_zero(tmp_path: Path) -> None:
    doc, _ = _refresh(tmp_path)
    assert "p5e.48xlarge" not in doc["regions"][REGION]
    assert all(v > 0 for v in doc["regions"][REGION].values())


def test_refresh_prices_writes_the_system_pool_type_with_its_publication_date(tmp_path: Path) -> None:
    doc, _ = _refresh(tmp_path)
    entry = doc["cpu_instances"][REGION][SYSTEM_INSTANCE_TYPE]
    assert entry["usd"] == 0.2016 and entry["unit"] == "node-hour" and entry["date"] == "2026-01-21"
    assert "GetProducts" in entry["source"]


def test_refresh_prices_also_writes_the_regions_storage_and_service_prices(tmp_path: Path) -> None:
    doc, table = _refresh(tmp_path)
    written = json.loads(table.read_text())
    for q in QUERIES:
        entry = written[q.section][REGION][q.key]
        assert entry["verified"] is True and "GetProducts" in entry["source"] and entry["date"] == "2026-10-01", q.key
    assert written == doc


def test_refresh_prices_keeps_other_regions_prices_and_list_prices(tmp_path: Path) -> None:
    before = catalog.price_table()
    doc, _ = _refresh(tmp_path)
    assert doc["regions"]["us-east-1"] == before["regions"]["us-east-1"]
    assert doc["sources"]["us-east-1"] == before["sources"]["us-east-1"]
    for section in ("storage", "services"):
        assert {r: v for r, v in doc[section].items() if r != REGION} == {
            r: v for r, v in before[section].items() if r != REGION
        }
    assert {r: v for r, v in doc["cpu_instances"].items() if r != REGION} == {
        r: v for r, v in before["cpu_instances"].items() if r != REGION
    }


def test_the_committed_us_west_2_prices_agree_with_the_price_list_answer(tmp_path: Path) -> None:
    doc, _ = _refresh(tmp_path)
    for t, usd in doc["regions"][REGION].items():
        found = catalog.price(t, REGION)
        assert found is not None and found.usd_per_hour == pytest.approx(usd, abs=1e-4), t
    system = catalog.cpu_instance_price(SYSTEM_INSTANCE_TYPE, REGION)
    assert system is not None and system.usd == doc["cpu_instances"][REGION][SYSTEM_INSTANCE_TYPE]["usd"]


def test_a_product_with_two_on_demand_prices_is_refused() -> None:
    (item,) = FIXTURE["products"]["p5.48xlarge"]
    twice = json.loads(json.dumps(item))
    (term,) = twice["terms"]["OnDemand"].values()
    (dim,) = term["priceDimensions"].values()
    term["priceDimensions"]["other"] = {**dim, "pricePerUnit": {"USD": "1.0"}}
    assert on_demand_usd(item) == 55.04
    with pytest.raises(PriceListError, match="several on-demand prices"):
        on_demand_usd(twice)


def test_the_catalog_regions_are_botocores_commercial_partition() -> None:
    # botocore/data/endpoints.json of the installed botocore (partition "aws") is the artifact the list comes from.
    assert json.loads(catalog.REGIONS_FILE.read_text()) == aws_regions_doc()
    assert catalog.aws_regions()["us-west-2"] == "US West (Oregon)"


def test_the_catalog_instance_type_names_are_botocores_ec2_model() -> None:
    # The InstanceType enum of botocore/data/ec2/2016-11-15/service-2.json (installed botocore) is the artifact.
    assert json.loads(catalog.INSTANCE_TYPE_NAMES_FILE.read_text()) == ec2_instance_type_names_doc()
    names = catalog.ec2_instance_type_names()
    assert set(catalog.SHIPPED_INSTANCE_TYPES) <= names and "m7i.xlarge" in names


def test_refresh_prices_refuses_a_made_up_region_before_calling_aws() -> None:
    from gpufleet.cli.app import app

    result = CliRunner().invoke(app, ["catalog", "refresh", "--prices", "--region", "foo-bar-9"])
    assert result.exit_code == 2
    assert "--region: foo-bar-9 is not an AWS commercial region" in result.output


def test_the_catalog_services_are_the_ones_the_schema_prices_and_the_refresh_queries() -> None:
    from typing import get_args

    from gpufleet.catalog.service_prices import QUERIES
    from model.spec import FsxLustreTier
    from model.spec.aws import ServiceKey

    assert get_args(ServiceKey) == catalog.SERVICE_KEYS  # what a `prices: [{service: ...}]` entry may name
    assert get_args(FsxLustreTier.model_fields["throughput_per_tib"].annotation) == catalog.FSX_LUSTRE_TIERS
    assert {q.key for q in QUERIES} == {s.key for s in catalog.SERVICES if s.offer is not None}
