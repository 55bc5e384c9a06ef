"""Reading AWS's Price List: the part the instance prices (gpufleet/catalog/prices.py) and the storage and service
list prices (gpufleet/catalog/service_prices.py) share, online or from downloaded offer files.

Online, the Price List Query API (`pricing:GetProducts`) answers each query. Each `PriceList` item is a JSON
document of one product in the bulk offer file's format
(https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_pricing_GetProducts.html,
https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/price-changes.html): `product.attributes` describes
the product and `terms.OnDemand.<offer>.priceDimensions.<dimension>.pricePerUnit.USD` is a price.

Offline, `OfferFiles` answers the same queries from bulk API offer files a user downloaded (no credentials: the
files are public, https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/using-the-aws-price-list-bulk-api.html).
An offer file holds `offerCode`, `publicationDate`, `products` by SKU (each with `productFamily` and
`attributes`) and `terms.OnDemand` by SKU; each product is joined with its on-demand terms into the GetProducts
item shape, so one reader serves both.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from model.inputs import read_json

# A region's offer file of a service: AmazonEC2's is the largest, hundreds of MB; read whole, as the API's pages are.
MAX_OFFER_FILE_BYTES = 2 * 1024**3

# The Price List Query API answers in a few regions only; us-east-1 serves every region's prices.
PRICING_ENDPOINT_REGION = "us-east-1"
GET_PRODUCTS = "AWS Price List API GetProducts"


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


class OfferFileError(ValueError):
    """A file that is not a Price List offer file: names the file and what is missing."""


def _offer_items(doc: Any, where: str) -> tuple[str, list[dict[str, Any]]]:
    """The offer's code and its products as GetProducts items (product, serviceCode, terms.OnDemand, dates)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("products"), dict) or not doc.get("offerCode"):
        raise OfferFileError(f"{where}: not a Price List offer file (needs offerCode, products and terms.OnDemand)")
    terms = (doc.get("terms") or {}).get("OnDemand") or {}
    if not isinstance(terms, dict):
        raise OfferFileError(f"{where}: terms.OnDemand must map SKUs to their terms")
    code = str(doc["offerCode"])
    items = [
        {
            "product": product,
            "serviceCode": code,
            "terms": {"OnDemand": terms.get(sku_, {})},
            "publicationDate": doc.get("publicationDate", ""),
            "version": doc.get("version", ""),
        }
        for sku_, product in doc["products"].items()
        if isinstance(product, dict)
    ]
    return code, items


def _matches(item: dict[str, Any], f: dict[str, str]) -> bool:
    """One GetProducts filter on a product: TERM_MATCH is equality, CONTAINS a substring, of an attribute or of the
    product's own `productFamily` / `sku` (offer files keep those beside `attributes`)."""
    product = item.get("product", {})
    value = product.get("attributes", {}).get(f["Field"], product.get(f["Field"]))
    if value is None:
        return False
    if f["Type"] == "CONTAINS":
        return f["Value"] in str(value)
    return str(value) == f["Value"]


@dataclass
class OfferFiles:
    """A Price List client that answers `get_products` from downloaded offer files instead of the API."""

    items: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # by offer code
    files: dict[str, list[str]] = field(default_factory=dict)  # by offer code

    @classmethod
    def read(cls, paths: Iterable[Path]) -> OfferFiles:
        """Read each offer file through the bounded reader (SpecError, or OfferFileError, naming the file if it is
        not one)."""
        offers = cls()
        for path in paths:
            code, items = _offer_items(read_json(path, "not found", MAX_OFFER_FILE_BYTES), str(path))
            offers.items.setdefault(code, []).extend(items)
            offers.files.setdefault(code, []).append(str(path))
        return offers

    def describe(self, code: str) -> str:
        """How an entry read from the `code` offer cites it: the offer, its version and publication date, the files."""
        versions = sorted(
            {f"{i['version']} published {str(i['publicationDate'])[:10]}" for i in self.items.get(code, [])}
        )
        files = ", ".join(self.files.get(code, []))
        return f"AWS Price List offer file {code} {'; '.join(versions) or '(none read)'} ({files})"

    def regions(self) -> set[str]:
        """The regions the files' products are in (`regionCode`, or `fromRegionCode` for data transfer)."""
        attrs = (i["product"].get("attributes", {}) for items in self.items.values() for i in items)
        return {str(a.get("regionCode") or a.get("fromRegionCode")) for a in attrs} - {"None"}

    def get_paginator(self, operation: str) -> OfferFiles:
        if operation != "get_products":
            raise NotImplementedError(operation)
        return self

    def paginate(self, *, ServiceCode: str, Filters: list[dict[str, str]], **_: Any) -> Iterator[dict[str, Any]]:
        found = [i for i in self.items.get(ServiceCode, []) if all(_matches(i, f) for f in Filters)]
        yield {"PriceList": found}


def read_as(pricing: Any, code: str) -> str:
    """How a price read through `pricing` names where it was read: the API, or the offer files read."""
    return pricing.describe(code) if isinstance(pricing, OfferFiles) else GET_PRODUCTS
