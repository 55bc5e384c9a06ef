"""The spot importer (gpufleet/catalog/spot_import.py) reads vms.csv rows into the catalog's spot section.

tests/catalog/fixtures/skypilot_vms_excerpt.csv holds rows of skypilot-org/skypilot-catalog
catalogs/v8/aws/vms.csv at commit 00148f2af3672e2229b4f7bf8157d5a3f36e3c35 as the file has them (g4dn.xlarge in
us-west-2, g5.12xlarge in ap-east-1 and eu-central-1, a1.large in us-east-2).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gpufleet.catalog.spot_import import import_spot
from model.catalog import PRICES_FILE

EXCERPT = Path(__file__).parent / "fixtures" / "skypilot_vms_excerpt.csv"
COMMIT = "00148f2af3672e2229b4f7bf8157d5a3f36e3c35"


def test_the_importer_keeps_shipped_types_in_catalog_regions_and_drops_local_zones(tmp_path: Path) -> None:
    prices = tmp_path / "aws_prices.json"
    shutil.copy(PRICES_FILE, prices)
    spot = import_spot(EXCERPT, COMMIT, "2026-11-30", prices)
    # g4dn.xlarge and a1.large are not shipped types; usw2-lax1-az1 is a Local Zone
    assert spot["regions"] == {
        "ap-east-1": {"g5.12xlarge": {"ape1-az1": 2.9157, "ape1-az2": 5.6978}},
        "eu-central-1": {"g5.12xlarge": {"euc1-az1": 2.8852, "euc1-az2": 2.3129, "euc1-az3": 2.4566}},
    }
    doc = json.loads(prices.read_text())
    assert doc["spot"]["source"].startswith(f"skypilot-org/skypilot-catalog catalogs/v8/aws/vms.csv at commit {COMMIT}")
    assert doc["regions"] == json.loads(PRICES_FILE.read_text())["regions"]  # on-demand prices untouched
    # the mean catalog.spot_price takes: (2.8852 + 2.3129 + 2.4566) / 3 = 7.6547 / 3 = 2.55156667
    figures = doc["spot"]["regions"]["eu-central-1"]["g5.12xlarge"].values()
    assert sum(figures) / 3 == pytest.approx(2.5515667)
