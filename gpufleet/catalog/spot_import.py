"""Import the catalog's spot figures from a SkyPilot catalog `vms.csv` (`python -m gpufleet.catalog.spot_import`).

The `spot` section of model/catalog/aws_prices.json is what this module writes: the `SpotPrice` column of
skypilot-org/skypilot-catalog catalogs/v8/aws/vms.csv (one row per instance type and AZ ID) for every shipped
instance type in every region the catalog prices, so no spot figure in it is hand-typed. Rows in Local Zones
(AZ IDs such as use1-atl2-az1, which are not a region's own AZs) and rows without a figure are left out.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path
from typing import Any

from model.catalog import PRICES_FILE, SHIPPED_INSTANCE_TYPES

SOURCE_REPO = "skypilot-org/skypilot-catalog"
SOURCE_PATH = "catalogs/v8/aws/vms.csv"


def _regional(az_id: str) -> bool:
    """A region's own AZ ID has two parts (use1-az1); a Local Zone's has three (use1-atl2-az1)."""
    return len(az_id.split("-")) == 2


def spot_regions(rows: list[dict[str, str]], regions: set[str]) -> dict[str, dict[str, dict[str, float]]]:
    """region -> instance type -> AZ ID -> $/h, from vms.csv rows, for shipped types in `regions`."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for row in rows:
        kind, region, az, figure = row["InstanceType"], row["Region"], row["AvailabilityZone"], row["SpotPrice"]
        if kind not in SHIPPED_INSTANCE_TYPES or region not in regions or not figure or not _regional(az):
            continue
        out.setdefault(region, {}).setdefault(kind, {})[az] = float(figure)
    return {r: {t: dict(sorted(z.items())) for t, z in sorted(ts.items())} for r, ts in sorted(out.items())}


def import_spot(csv_path: Path, commit: str, date: str, path: Path = PRICES_FILE) -> dict[str, Any]:
    """Rewrite the `spot` section of `path` from `csv_path` (vms.csv at `commit`, fetched on `date`)."""
    doc = json.loads(path.read_text())
    with csv_path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    spot = doc["spot"]
    spot["date"] = date
    spot["source"] = (
        f"{SOURCE_REPO} {SOURCE_PATH} at commit {commit} (its `SpotPrice` column: the EC2 spot price per AZ ID "
        "when the catalog was fetched), imported by gpufleet/catalog/spot_import.py; rows in Local Zones left out"
    )
    spot["regions"] = spot_regions(rows, set(doc["regions"]))
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return spot


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", type=Path, help=f"{SOURCE_PATH} from {SOURCE_REPO}")
    parser.add_argument("--commit", required=True, help="the commit the file was read at")
    parser.add_argument("--date", required=True, help="the date its spot figures were fetched (YYYY-MM-DD)")
    args = parser.parse_args()
    spot = import_spot(args.csv, args.commit, args.date)
    print(f"spot: {sum(len(t) for t in spot['regions'].values())} types over {len(spot['regions'])} regions")


if __name__ == "__main__":
    main()
