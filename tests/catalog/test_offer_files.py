"""`gpufleet catalog refresh --prices --from FILE`: a region's prices from downloaded Price List offer files, offline.

The fixtures (fixtures/offers-eu-west-1/, its README says what they are) are small offer files in the bulk API's
documented JSON format; each holds the products the refresh asks for and some it must pass over.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpufleet.catalog.price_list import OfferFiles
from gpufleet.catalog.prices import refresh_prices
from gpufleet.cli.app import app
from model import catalog

OFFERS = Path(__file__).parent / "fixtures" / "offers-eu-west-1"
FILES = sorted(OFFERS.glob("*.json"))
REGION = "eu-west-1"


def _refreshed(tmp_path: Path) -> dict[str, Any]:
    table = tmp_path / "aws_prices.json"
    table.write_text(catalog.PRICES_FILE.read_text())
    return refresh_prices(OfferFiles.read(FILES), REGION, path=table)


def test_offer_files_price_the_region_as_the_price_list_api_would(tmp_path: Path) -> None:
    doc = _refreshed(tmp_path)
    assert doc["regions"][REGION] == {"g5.xlarge": 1.123}  # the used-capacity product, not the unused reservation
    assert doc["cpu_instances"][REGION]["m7i.xlarge"]["usd"] == 0.2247
    services, storage = doc["services"][REGION], doc["storage"][REGION]
    got = {k: services[k]["usd"] for k in ("eks-cluster", "nat-gateway", "nat-gateway-data", "ebs-gp3")}
    assert got == {"eks-cluster": 0.1, "nat-gateway": 0.048, "nat-gateway-data": 0.048, "ebs-gp3": 0.088}
    assert services["data-transfer-out"]["usd"] == 0.09  # the first tier, not the next 40 TB
    assert storage["efs-standard"]["usd"] == 0.33 and storage["s3-standard"]["usd"] == 0.023  # Standard, first tier
    eks = services["eks-cluster"]
    assert eks["date"] == "2026-11-20"  # the offer file's publicationDate
    assert "offer file AmazonEKS 20261120100000 published 2026-11-20" in eks["source"]
    assert str(OFFERS / "AmazonEKS.json") in eks["source"] and "AmazonEC2.json" not in eks["source"]
    assert "offer file AmazonEC2" in doc["sources"][REGION]["source"]


def _cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[Any, Path]:
    import gpufleet.catalog.prices as prices

    table = tmp_path / "aws_prices.json"
    table.write_text(catalog.PRICES_FILE.read_text())
    monkeypatch.setattr(prices, "PRICES_FILE", table)
    monkeypatch.setattr(prices, "REGIONS_FILE", tmp_path / "aws_regions.json")

    def no_aws(*_: Any, **__: Any) -> Any:
        raise AssertionError("an offline refresh asked AWS")

    monkeypatch.setattr("boto3.client", no_aws)
    return CliRunner().invoke(app, ["catalog", "refresh", "--prices", *args]), table


def test_the_command_refreshes_a_region_from_offer_files_without_aws(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, table = _cli(tmp_path, monkeypatch, "-r", REGION, *(a for f in FILES for a in ("--from", str(f))))
    assert result.exit_code == 0, result.output
    assert "1 GPU instance types priced in eu-west-1 (2026-11-20)" in result.output
    written = json.loads(table.read_text())
    assert written["services"][REGION]["ebs-gp3"]["usd"] == 0.088


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"products": {}}', "not a Price List offer file (needs offerCode, products and terms.OnDemand)"),
        ("not json", "cannot read a Price List offer file"),
    ],
)
def test_a_file_that_is_not_an_offer_file_exits_2_naming_it_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str, message: str
) -> None:
    bad = tmp_path / "index.json"
    bad.write_text(content)
    result, table = _cli(tmp_path, monkeypatch, "-r", REGION, "--from", str(bad))
    assert result.exit_code == 2 and "--from: " in result.output and message in result.output
    assert "Traceback" not in result.output
    assert table.read_text() == catalog.PRICES_FILE.read_text()


def test_offer_files_of_another_region_exit_2_naming_the_region(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, table = _cli(tmp_path, monkeypatch, "-r", "us-east-2", "--from", str(OFFERS / "AmazonEC2.json"))
    assert result.exit_code == 2
    assert "is in us-east-2 (regions found: eu-west-1)" in " ".join(result.output.split())
    assert table.read_text() == catalog.PRICES_FILE.read_text()


def test_from_without_prices_is_refused() -> None:
    result = CliRunner().invoke(app, ["catalog", "refresh", "-r", REGION, "--from", str(OFFERS / "AmazonEC2.json")])
    assert result.exit_code == 2 and "use it with --prices" in result.output


def test_a_refresh_from_offer_files_lifts_the_refusal_of_what_it_priced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from model.load import SpecError, parse_estate
    from tests.review.cost.test_regions_priced import _moved

    def refused() -> set[str]:
        with pytest.raises(SpecError) as e:
            parse_estate(_moved(REGION), "copy")
        return {k for k in catalog.SERVICE_KEYS if f"({k})" in str(e.value)}

    assert "ebs-gp3" in refused()  # usage-billed lines (data out, EFS, S3) are priced but never refused
    usage = ("data-transfer-out", "efs-standard", "s3-standard")
    assert all(catalog.service_price(k, REGION) is None for k in usage)
    _refreshed(tmp_path)
    monkeypatch.setattr(catalog, "PRICES_FILE", tmp_path / "aws_prices.json")
    catalog._prices_doc.cache_clear()
    try:
        assert refused() == {"fsx-lustre-persistent-2-1000"}  # offer files do not price FSx tiers
        assert all(catalog.service_price(k, REGION) is not None for k in usage)
    finally:
        monkeypatch.undo()
        catalog._prices_doc.cache_clear()
