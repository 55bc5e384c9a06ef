"""Regenerate a region's on-demand prices from AWS's public Price List (`gpufleet catalog refresh --prices`).

The Price List Query API (`pricing:GetProducts`), or the region's downloaded offer files (`--from`; both read
through gpufleet/catalog/price_list.py), answers one product per instance type for the filters below; its
on-demand price dimension is the type's $/h.

The filters select what the catalog means by an on-demand price: Linux, shared tenancy, no pre-installed
software, and `capacitystatus=Used` (the price of a running instance, not of an unused reservation).
A type the Price List has no product for in the region stays out of the table (unpriced, never $0), and the
region's date is the newest `publicationDate` of the products read.

The same run rewrites the region's storage and service list prices (gpufleet/catalog/service_prices.py), and
`aws_regions.json` from the installed botocore's endpoints data, so the regions a stack may name follow the SDK the
tool ships with.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import botocore
import botocore.loaders

from gpufleet.catalog.price_list import (
    PriceListError,
    nonzero_usd,
    one_price,
    products,
    published,
    read_as,
    sku,
    term_filters,
)
from gpufleet.catalog.service_prices import refresh_list_prices
from model.catalog import INSTANCE_TYPE_NAMES_FILE, PRICES_FILE, REGIONS_FILE, SHIPPED_INSTANCE_TYPES
from model.spec import AwsSite

FILTERS: tuple[tuple[str, str], ...] = (
    ("operatingSystem", "Linux"),
    ("tenancy", "Shared"),
    ("preInstalledSw", "NA"),
    ("capacitystatus", "Used"),
)
SYSTEM_INSTANCE_TYPE: str = str(AwsSite.model_fields["system_instance_type"].default)


def _filters(instance_type: str, region: str) -> list[dict[str, str]]:
    return term_filters((("instanceType", instance_type), ("regionCode", region), *FILTERS))


def on_demand_usd(item: dict[str, Any]) -> float | None:
    """The hourly USD price of one Price List product (None without one)."""
    values = nonzero_usd(item)
    if len(values) > 1:
        raise PriceListError(f"product {sku(item)} has several on-demand prices: {sorted(values)}")
    return values.pop() if values else None


def product_prices(pricing: Any, instance_type: str, region: str) -> tuple[float | None, str | None]:
    """$/h of `instance_type` in `region` and the Price List's publication date of it (None, None: no product)."""
    found: dict[float, str] = {}
    for item in products(pricing, "AmazonEC2", _filters(instance_type, region)):
        usd = on_demand_usd(item)
        if usd is not None:
            found[usd] = published(item)
    return one_price(found, f"{instance_type} in {region} (Linux on-demand)")


def refresh_prices(
    pricing: Any,
    region: str,
    *,
    path: Path | None = None,
    instance_types: list[str] | None = None,
    today: dt.date | None = None,
) -> dict[str, Any]:
    """Rewrite `region`'s GPU instance prices, its system pool type's and its storage / service list prices from
    the Price List; returns the table. Other regions are kept as they are.
    """
    path = PRICES_FILE if path is None else path
    doc: dict[str, Any] = json.loads(path.read_text())
    types = list(instance_types or SHIPPED_INSTANCE_TYPES)
    prices: dict[str, float] = {}
    dates: list[str] = []
    for t in types:
        usd, date = product_prices(pricing, t, region)
        if usd is not None:
            prices[t] = usd
            dates.append(date or "")
    checked = (today or dt.date.today()).isoformat()
    date = max((d for d in dates if d), default=checked)
    where = (
        f"{read_as(pricing, 'AmazonEC2')} (AmazonEC2, regionCode={region}, "
        + ", ".join(f"{f}={v}" for f, v in FILTERS)
        + f"), read {checked} by gpufleet catalog refresh --prices"
    )
    doc.setdefault("regions", {})[region] = prices
    doc.setdefault("sources", {})[region] = {"date": date, "source": where}
    system_usd, system_date = product_prices(pricing, SYSTEM_INSTANCE_TYPE, region)
    if system_usd is not None:
        doc.setdefault("cpu_instances", {}).setdefault(region, {})[SYSTEM_INSTANCE_TYPE] = {
            "usd": system_usd,
            "unit": "node-hour",
            "date": system_date or checked,
            "verified": True,
            "source": where,
        }
    refresh_list_prices(pricing, region, doc, checked)
    doc["regions"] = dict(sorted(doc["regions"].items()))
    doc["sources"] = dict(sorted(doc["sources"].items()))
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return doc


def aws_regions_doc() -> dict[str, Any]:
    """The commercial AWS regions (partition `aws`) with their names, from botocore's endpoints data."""
    endpoints = botocore.loaders.Loader().load_data("endpoints")
    (partition,) = [p for p in endpoints["partitions"] if p["partition"] == "aws"]
    version = botocore.__version__
    return {
        "_about": (
            "AWS commercial regions (partition aws) with their names, as botocore ships them; the spec accepts an "
            "aws site's region only from this list. Written by `gpufleet catalog refresh --prices` from the "
            "installed botocore, never by hand."
        ),
        "source": (
            f"botocore {version} botocore/data/endpoints.json, partition aws "
            f"(https://github.com/boto/botocore/blob/{version}/botocore/data/endpoints.json)"
        ),
        "regions": {code: r["description"] for code, r in sorted(partition["regions"].items())},
    }


def refresh_regions(path: Path | None = None) -> dict[str, Any]:
    path = REGIONS_FILE if path is None else path
    doc = aws_regions_doc()
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return doc


def ec2_instance_type_names_doc() -> dict[str, Any]:
    """Every EC2 instance type name, from the `InstanceType` enum of botocore's EC2 service model."""
    model = botocore.loaders.Loader().load_service_model("ec2", "service-2")
    version = botocore.__version__
    return {
        "_about": (
            "Every EC2 instance type name as botocore's EC2 API model lists them; the spec accepts a system pool's "
            "instance type only from this list. Written by `gpufleet catalog refresh --prices` from the installed "
            "botocore, never by hand."
        ),
        "source": (
            f"botocore {version} botocore/data/ec2/2016-11-15/service-2.json, shape InstanceType "
            f"(https://github.com/boto/botocore/blob/{version}/botocore/data/ec2/2016-11-15/service-2.json)"
        ),
        "instance_types": sorted(model["shapes"]["InstanceType"]["enum"]),
    }


def refresh_instance_type_names(path: Path | None = None) -> dict[str, Any]:
    path = INSTANCE_TYPE_NAMES_FILE if path is None else path
    doc = ec2_instance_type_names_doc()
    path.write_text(json.dumps(doc, indent=0) + "\n")
    return doc
