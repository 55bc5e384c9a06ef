"""Reading AWS's Price List Query API (`pricing:GetProducts`): the part the instance prices
(gpufleet/catalog/prices.py) and the storage and service list prices (gpufleet/catalog/service_prices.py) share.

Each `PriceList` item is a JSON document of one product in the bulk offer file's format
(https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_pricing_GetProducts.html,
https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/price-changes.html): `product.attributes` describes
the product and `terms.OnDemand.<offer>.priceDimensions.<dimension>.pricePerUnit.USD` is a price.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

# The Price List Query API answers in a few regions only; us-east-1 serves every region's prices.
PRICING_ENDPOINT_REGION = "us-east-1"


class PriceListError(ValueError):
    """The Price List answered something the catalog cannot take (several prices for one product, no USD)."""


def term_filters(pairs: Iterable[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"Type": "TERM_MATCH", "Field": f, "Value": v} for f, v in pairs]


def products(pricing: Any, service_code: str, filters: list[dict[str, str]]) -> Iterator[dict[str, Any]]:
    """Every product GetProducts answers for `filters`, all pages, each parsed."""
    for page in pricing.get_paginator("get_products").paginate(
        ServiceCode=service_code, Filters=filters, FormatVersion="aws_v1"
    ):
        for raw in page["PriceList"]:
            yield json.loads(raw) if isinstance(raw, str) else raw


def usd_dimensions(item: dict[str, Any]) -> list[dict[str, Any]]:
    """The product's on-demand price dimensions that carry a USD price."""
    return [
        dim
        for term in (item.get("terms", {}).get("OnDemand") or {}).values()
        for dim in term.get("priceDimensions", {}).values()
        if "USD" in dim.get("pricePerUnit", {})
    ]


def nonzero_usd(item: dict[str, Any]) -> set[float]:
    """The product's distinct USD prices, a zero-priced dimension aside (it is not the product's rate)."""
    return {float(d["pricePerUnit"]["USD"]) for d in usd_dimensions(item)} - {0.0}


def sku(item: dict[str, Any]) -> str:
    return str(item.get("product", {}).get("sku", "?"))


def published(item: dict[str, Any]) -> str:
    """The product's publicationDate (YYYY-MM-DD)."""
    return str(item.get("publicationDate", ""))[:10]


def one_price(found: dict[float, str], what: str) -> tuple[float | None, str | None]:
    """The one price (and its publication date) the products of one query gave; several are refused."""
    if len(found) > 1:
        raise PriceListError(f"{what}: several prices {sorted(found)}")
    if not found:
        return None, None
    ((usd, date),) = found.items()
    return usd, date
