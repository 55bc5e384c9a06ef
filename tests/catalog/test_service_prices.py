"""`gpufleet catalog refresh --prices`: a region's storage and service list prices from pricing:GetProducts.

As in test_prices.py, the client is a real botocore pricing client answered by botocore.stub.Stubber, which
validates each request against the pricing service model (ServiceCode, Filters with their Type enum
TERM_MATCH / CONTAINS, FormatVersion) and each response against its shape. The answers are the recorded-shape
fixture fixtures/pricing_get_products_services_us-west-2.json (its `_about` says where the attributes and figures
come from).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from gpufleet.catalog.service_prices import QUERIES, ServicePriceError, filters, refresh_list_prices, unit_usd
from model import catalog

FIXTURE: dict[str, Any] = json.loads(
    (Path(__file__).parent / "fixtures" / "pricing_get_products_services_us-west-2.json").read_text()
)
REGION = FIXTURE["region"]
BY_KEY = {q.key: q for q in QUERIES}


def _client() -> Any:
    return boto3.client(
        "pricing", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )


def _answer_all(stub: Stubber, answers: dict[str, list[dict[str, Any]]], stop_after: str | None = None) -> None:
    """Queue the answers the refresh asks for, in QUERIES order, each request as it must be sent."""
    location = None  # what the products answered so far name as the region's location
    for q in QUERIES:
        if q.region_field != "regionCode" and location is None:
            continue  # the refresh does not ask
        stub.add_response(
            "get_products",
            {"FormatVersion": "aws_v1", "PriceList": [json.dumps(p) for p in answers.get(q.key, [])]},
            {"ServiceCode": q.service_code, "Filters": filters(q, REGION, location), "FormatVersion": "aws_v1"},
        )
        location = location or next((p["product"]["attributes"]["location"] for p in answers.get(q.key, [])), None)
        if q.key == stop_after:
            return


def _refresh(products: dict[str, list[dict[str, Any]]] | None = None) -> tuple[dict[str, Any], list[str]]:
    """refresh_list_prices against the answers in `products` (default: the fixture's), each request checked."""
    doc: dict[str, Any] = json.loads(catalog.PRICES_FILE.read_text())
    client = _client()
    with Stubber(client) as stub:
        _answer_all(stub, FIXTURE["products"] if products is None else products)
        priced = refresh_list_prices(client, REGION, doc, "2026-11-30")
        stub.assert_no_pending_responses()
    return doc, priced


def test_every_bill_and_storage_price_the_queries_cover_is_rewritten_from_get_products() -> None:
    doc, priced = _refresh()
    assert priced == [q.key for q in QUERIES]
    services, storage = doc["services"][REGION], doc["storage"][REGION]
    assert {k: services[k]["usd"] for k in ("eks-cluster", "nat-gateway", "nat-gateway-data", "ebs-gp3")} == {
        "eks-cluster": 0.10,
        "nat-gateway": 0.045,
        "nat-gateway-data": 0.045,
        "ebs-gp3": 0.08,
    }
    assert storage["efs-standard"]["usd"] == 0.30
    for q in QUERIES:
        entry = doc[q.section][REGION][q.key]
        assert entry["verified"] is True and entry["date"] == "2026-10-01"  # publicationDate, not the run's day
        assert entry["unit"] == q.unit
        assert f"GetProducts ({q.service_code}" in entry["source"] and q.cite in entry["source"]


def test_a_tiered_price_is_its_first_tier_and_says_so() -> None:
    doc, _ = _refresh()
    assert doc["storage"][REGION]["s3-standard"]["usd"] == 0.023  # not the 0.022 from 51,200 GB
    assert doc["services"][REGION]["data-transfer-out"]["usd"] == 0.09  # not the 0.085 from 10,240 GB
    assert "first tier (beginRange 0)" in doc["services"][REGION]["data-transfer-out"]["source"]


def test_a_usage_type_that_only_contains_the_name_is_not_taken() -> None:
    # USW2-RegionalNatGateway-Hours and USW2-IATimedStorage-ByteHrs answer the CONTAINS filter too.
    doc, _ = _refresh()
    assert doc["services"][REGION]["nat-gateway"]["usd"] == 0.045
    assert doc["storage"][REGION]["efs-standard"]["usd"] == 0.30


def test_the_filters_are_the_documented_attributes_with_the_region_each_service_names() -> None:
    eks = filters(BY_KEY["eks-cluster"], REGION)
    assert {"Type": "TERM_MATCH", "Field": "regionCode", "Value": "us-west-2"} in eks
    assert {"Type": "CONTAINS", "Field": "usagetype", "Value": "AmazonEKS-Hours:perCluster"} in eks
    out = filters(BY_KEY["data-transfer-out"], REGION, "US West (Oregon)")
    assert {"Type": "TERM_MATCH", "Field": "fromLocation", "Value": "US West (Oregon)"} in out
    assert {"Type": "TERM_MATCH", "Field": "transferType", "Value": "AWS Outbound"} in out
    assert {"Type": "TERM_MATCH", "Field": "volumeApiName", "Value": "gp3"} in filters(BY_KEY["ebs-gp3"], REGION)


def test_data_transfer_asks_for_the_location_name_the_regions_products_carry() -> None:
    # The Price List names eu-west-1 "EU (Ireland)" where botocore says "Europe (Ireland)": the name comes from
    # the answered products' `location`, never from the region list.
    assert catalog.aws_regions()["us-west-2"] == "US West (Oregon)"
    renamed = json.loads(json.dumps(FIXTURE["products"]))
    for products in renamed.values():
        for p in products:
            if "location" in p["product"]["attributes"]:
                p["product"]["attributes"]["location"] = "Somewhere (Named By The Price List)"
    # the stubbed request for data-transfer-out must carry that name, or Stubber refuses it
    doc, priced = _refresh(renamed)
    assert "data-transfer-out" in priced
    assert "fromLocation=Somewhere (Named By The Price List)" in doc["services"][REGION]["data-transfer-out"]["source"]


def test_without_a_location_name_data_transfer_is_not_asked_and_stays_as_it_was() -> None:
    only_transfer = {"data-transfer-out": FIXTURE["products"]["data-transfer-out"]}
    doc, priced = _refresh(only_transfer)
    assert priced == []
    assert (
        doc["services"][REGION]["data-transfer-out"] == catalog.price_table()["services"][REGION]["data-transfer-out"]
    )


def test_a_query_without_an_answer_leaves_the_entry_as_it_was_never_zero() -> None:
    before = catalog.price_table()
    doc, priced = _refresh({})
    assert priced == []
    assert doc["services"] == before["services"] and doc["storage"] == before["storage"]


def test_an_entry_keeps_its_other_fields() -> None:
    doc, _ = _refresh()
    before = catalog.price_table()["storage"][REGION]["efs-standard"]
    assert doc["storage"][REGION]["efs-standard"]["usage_based"] == before["usage_based"]


def test_a_free_or_ambiguous_first_tier_is_refused() -> None:
    (item,) = FIXTURE["products"]["s3-standard"]
    free = json.loads(json.dumps(item))
    (term,) = free["terms"]["OnDemand"].values()
    first = next(d for d in term["priceDimensions"].values() if d["beginRange"] == "0")
    first["pricePerUnit"]["USD"] = "0.0000000000"
    with pytest.raises(ServicePriceError, match="no single priced first tier"):
        unit_usd(BY_KEY["s3-standard"], free)


def test_two_products_with_different_prices_are_refused() -> None:
    (item,) = FIXTURE["products"]["ebs-gp3"]
    other = json.loads(json.dumps(item))
    (term,) = other["terms"]["OnDemand"].values()
    (dim,) = term["priceDimensions"].values()
    dim["pricePerUnit"]["USD"] = "0.0960000000"
    with pytest.raises(ServicePriceError, match="several prices"):
        _refresh({**FIXTURE["products"], "ebs-gp3": [item, other]})


def test_the_committed_us_west_2_figures_agree_with_the_price_list_answer() -> None:
    doc, _ = _refresh()
    for q in QUERIES:
        committed = catalog.service_price(q.key, REGION)  # the region's own entry or the region-independent one
        assert committed is not None and committed.usd == pytest.approx(doc[q.section][REGION][q.key]["usd"]), q.key


def _cli_refresh(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, eks: list[dict[str, Any]], stop_after: str | None = None
) -> tuple[Any, Path]:
    """`gpufleet catalog refresh --prices -r us-west-2` with a stubbed pricing client writing into tmp_path."""
    from typer.testing import CliRunner

    import gpufleet.catalog.prices as prices
    from gpufleet.cli.app import app

    table = tmp_path / "aws_prices.json"
    table.write_text(catalog.PRICES_FILE.read_text())
    monkeypatch.setattr(prices, "PRICES_FILE", table)
    monkeypatch.setattr(prices, "REGIONS_FILE", tmp_path / "aws_regions.json")
    client = _client()
    stub = Stubber(client)
    for t in [*catalog.SHIPPED_INSTANCE_TYPES, prices.SYSTEM_INSTANCE_TYPE]:  # no EC2 products: not the point here
        ec2 = [{"Type": "TERM_MATCH", "Field": f, "Value": v} for f, v in (("instanceType", t), ("regionCode", REGION))]
        ec2 += [{"Type": "TERM_MATCH", "Field": f, "Value": v} for f, v in prices.FILTERS]
        stub.add_response(
            "get_products",
            {"FormatVersion": "aws_v1", "PriceList": []},
            {"ServiceCode": "AmazonEC2", "Filters": ec2, "FormatVersion": "aws_v1"},
        )
    _answer_all(stub, {**FIXTURE["products"], "eks-cluster": eks}, stop_after)
    monkeypatch.setattr("boto3.client", lambda *a, **k: client)
    with stub:
        result = CliRunner().invoke(app, ["catalog", "refresh", "--prices", "--region", REGION])
    return result, table


def test_the_command_writes_the_regions_list_prices(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    result, table = _cli_refresh(monkeypatch, tmp_path, FIXTURE["products"]["eks-cluster"])
    assert result.exit_code == 0, result.output
    assert "storage and service list prices rewritten" in result.output
    written = json.loads(table.read_text())
    assert "GetProducts (AmazonEKS" in written["services"][REGION]["eks-cluster"]["source"]


def test_an_ambiguous_answer_exits_1_naming_it_and_writes_no_prices(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (item,) = FIXTURE["products"]["eks-cluster"]
    other = json.loads(json.dumps(item))
    (term,) = other["terms"]["OnDemand"].values()
    (dim,) = term["priceDimensions"].values()
    dim["pricePerUnit"]["USD"] = "0.6000000000"  # e.g. an extended-support product answering the same query
    result, table = _cli_refresh(monkeypatch, tmp_path, [item, other], stop_after="eks-cluster")
    assert result.exit_code == 1
    assert "the Price List answer cannot be used: eks-cluster in us-west-2: several prices [0.1, 0.6]" in result.output
    assert table.read_text() == catalog.PRICES_FILE.read_text()
