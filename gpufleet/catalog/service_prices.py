"""A region's storage and service list prices from the AWS Price List (part of `gpufleet catalog refresh --prices`).

- Each price in QUERIES is one `pricing:GetProducts` query: a ServiceCode, TERM_MATCH filters, and a CONTAINS
  filter on `usagetype` where the product is told apart by it. The bill (gpufleet/review/cost/bill.py) and the
  storage cost (gpufleet/review/cost/storage.py) read them from the catalog.
- The attribute names and values come from infracost, which prices Terraform plans from the same Price List
  (INFRACOST; each query names its file).
- A tiered price (S3 storage, data transfer out) is its first tier (`unit_usd`).
- Two catalog entries are not refreshed here and stay as written: FSx for Lustre PERSISTENT_2 per throughput
  tier, and the public IPv4 address-hour. No public artifact read for this change names their Price List
  attributes. Infracost has no Lustre resource at that commit, and its eip.go prices only idle Elastic IPs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpufleet.catalog.price_list import (
    GET_PRODUCTS,
    PriceListError,
    nonzero_usd,
    one_price,
    products,
    published,
    read_as,
    sku,
    term_filters,
    usd_dimensions,
)
from model import catalog

# https://github.com/infracost/infracost/tree/95ba4f49a7abf5567b04f751a115543281a4ab18/internal/resources/aws
INFRACOST = "infracost/infracost@95ba4f49a7abf5567b04f751a115543281a4ab18 internal/resources/aws/"


class ServicePriceError(PriceListError):
    """The Price List answered something a list price cannot be taken from (several prices, a free first tier)."""


@dataclass(frozen=True)
class Query:
    """One catalog entry and the GetProducts query that prices it."""

    section: str  # "services" or "storage"
    key: str
    unit: str
    terms: tuple[tuple[str, str], ...]  # TERM_MATCH (field, value) besides the region
    usagetype: str | None  # CONTAINS filter; the answer's usage type must be it or end in "-" + it
    first_tier: bool
    cite: str  # the public file the filters come from
    # AWSDataTransfer products name the region by `fromLocation`, the Price List's location name ("US West
    # (Oregon)", "EU (Ireland)" in infracost's util.go RegionMapping), which is not always botocore's region
    # description. So it is taken from the `location` attribute of the region's products that earlier queries
    # answered (offer file format: regionCode, location, locationType); without one the query is skipped.
    region_field: str = "regionCode"

    @property
    def service_code(self) -> str:
        """The Price List offer the catalog names for the key (catalog.SERVICES)."""
        return str(catalog.service(self.key).offer)


QUERIES: tuple[Query, ...] = (
    # productFamily Compute, usagetype /AmazonEKS-Hours:perCluster/ (standard support): eks_cluster.go
    Query("services", "eks-cluster", "cluster-hour", (("productFamily", "Compute"),),
          "AmazonEKS-Hours:perCluster", False, INFRACOST + "eks_cluster.go"),
    # productFamily "NAT Gateway", usagetype /NatGateway-Hours/ and /NatGateway-Bytes/: nat_gateway.go
    Query("services", "nat-gateway", "gateway-hour", (("productFamily", "NAT Gateway"),),
          "NatGateway-Hours", False, INFRACOST + "nat_gateway.go"),
    Query("services", "nat-gateway-data", "GB", (("productFamily", "NAT Gateway"),),
          "NatGateway-Bytes", False, INFRACOST + "nat_gateway.go"),
    # productFamily Storage, volumeApiName gp3: ebs_volume.go
    Query("services", "ebs-gp3", "GB-month", (("productFamily", "Storage"), ("volumeApiName", "gp3")),
          None, False, INFRACOST + "ebs_volume.go"),
    # AWSDataTransfer, productFamily "Data Transfer", transferType "AWS Outbound", fromLocation <region name>,
    # first tier ("first 10TB"): data_transfer.go
    Query("services", "data-transfer-out", "GB", (("productFamily", "Data Transfer"), ("transferType", "AWS Outbound")),
          None, True, INFRACOST + "data_transfer.go", region_field="fromLocation"),
    # AmazonEFS, productFamily Storage, usagetype /-TimedStorage-ByteHrs/ (Standard; not IA, not One Zone):
    # efs_file_system.go
    Query("storage", "efs-standard", "usd_per_gb_month", (("productFamily", "Storage"),),
          "TimedStorage-ByteHrs", False, INFRACOST + "efs_file_system.go"),
    # AmazonS3, usagetype /TimedStorage-ByteHrs/, volumeType Standard, StartUsageAmount 0:
    # s3_standard_storage_class.go and s3_storage_class_helpers.go
    Query("storage", "s3-standard", "usd_per_gb_month", (("volumeType", "Standard"),),
          "TimedStorage-ByteHrs", True, INFRACOST + "s3_standard_storage_class.go"),
)  # fmt: skip


def region_value(query: Query, region: str, location: str | None) -> str:
    """What the query's region field holds: the region's code, or its Price List location name."""
    if query.region_field == "regionCode":
        return region
    if location is None:
        raise ServicePriceError(f"{query.key}: no Price List location name known for {region}")
    return location


def filters(query: Query, region: str, location: str | None = None) -> list[dict[str, str]]:
    """The GetProducts filters of the query (the Filter types of
    https://docs.aws.amazon.com/aws-cost-management/latest/APIReference/API_pricing_Filter.html)."""
    pairs = ((query.region_field, region_value(query, region, location)), *query.terms)
    found = term_filters(pairs)
    if query.usagetype is not None:
        found.append({"Type": "CONTAINS", "Field": "usagetype", "Value": query.usagetype})
    return found


def _usagetype_matches(query: Query, item: dict[str, Any]) -> bool:
    """Usage types carry a region prefix outside us-east-1 (`USW2-NatGateway-Hours`). So the answer counts only
    where the usage type is the name itself or ends in `-<name>`: not `USW2-RegionalNatGateway-Hours`, not
    `USW2-IATimedStorage-ByteHrs`."""
    if query.usagetype is None:
        return True
    usagetype = str(item.get("product", {}).get("attributes", {}).get("usagetype", ""))
    return usagetype == query.usagetype or usagetype.endswith("-" + query.usagetype)


def unit_usd(query: Query, item: dict[str, Any]) -> float | None:
    """The USD price per unit of one product: its single non-zero dimension, or (tiered) its beginRange-0 tier, as
    infracost's StartUsageAmount "0" / first "10TB" tier select."""
    if query.first_tier:
        dims = usd_dimensions(item)
        first = [float(d["pricePerUnit"]["USD"]) for d in dims if str(d.get("beginRange")) == "0"]
        if not first:
            return None
        if len(set(first)) > 1 or first[0] == 0.0:
            raise ServicePriceError(f"{query.key}: product {sku(item)} has no single priced first tier: {first}")
        return first[0]
    values = nonzero_usd(item)
    if len(values) > 1:
        raise ServicePriceError(f"{query.key}: product {sku(item)} has several prices: {sorted(values)}")
    return values.pop() if values else None


@dataclass(frozen=True)
class Answer:
    usd: float | None  # None: no product
    published: str | None  # the product's publicationDate (YYYY-MM-DD)
    location: str | None  # the region's Price List location name, from a product with its regionCode


def query_price(pricing: Any, query: Query, region: str, location: str | None = None) -> Answer:
    """The query's price in `region`, the Price List's publication date of it and the region's location name."""
    found: dict[float, str] = {}
    named: str | None = None
    for item in products(pricing, query.service_code, filters(query, region, location)):
        attributes = item.get("product", {}).get("attributes", {})
        if attributes.get("regionCode") == region and attributes.get("location"):
            named = str(attributes["location"])
        if not _usagetype_matches(query, item):
            continue
        usd = unit_usd(query, item)
        if usd is not None:
            found[usd] = published(item)
    try:
        usd, date = one_price(found, f"{query.key} in {region}")
    except PriceListError as e:
        raise ServicePriceError(str(e)) from None
    return Answer(usd, date, named)


def describe(query: Query, region: str, location: str | None, checked: str, via: str = GET_PRODUCTS) -> str:
    """The source text of a refreshed entry: the exact query and where its filters come from."""
    parts = [f"{f}={v}" for f, v in ((query.region_field, region_value(query, region, location)), *query.terms)]
    if query.usagetype is not None:
        parts.append(f"usagetype CONTAINS {query.usagetype}")
    tier = "; first tier (beginRange 0)" if query.first_tier else ""
    return (
        f"{via} ({query.service_code}, " + ", ".join(parts) + f"){tier}, read {checked} "
        f"by gpufleet catalog refresh --prices; filters as in {query.cite}"
    )


def refresh_list_prices(pricing: Any, region: str, doc: dict[str, Any], checked: str) -> list[str]:
    """Rewrite `region`'s entries of QUERIES in `doc` (in place); returns the keys priced.

    An entry keeps its other fields (a note, what usage it leaves out); a query without an answer leaves the
    entry as it was (unpriced if there was none), never $0.
    """
    priced: list[str] = []
    location: str | None = None
    for query in QUERIES:
        if query.region_field != "regionCode" and location is None:
            continue  # no product named the region's location: nothing to ask for
        answer = query_price(pricing, query, region, location)
        location = location or answer.location
        if answer.usd is None:
            continue
        entries = doc.setdefault(query.section, {}).setdefault(region, {})
        entries[query.key] = {
            **entries.get(query.key, {}),
            "unit": query.unit,
            "usd": answer.usd,
            "date": answer.published or checked,
            "verified": True,
            "source": describe(query, region, location, checked, read_as(pricing, query.service_code)),
        }
        priced.append(query.key)
    return priced
