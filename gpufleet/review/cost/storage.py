"""What an estate's storage tiers cost a month, from the catalog's dated storage prices.

FSx for Lustre is billed on provisioned capacity x $/GB-month of its throughput tier; EFS and S3 are billed on
usage, so they are listed with their unit price and left out of the totals; node-local scratch is in the node's
price; on-prem systems already exist and are not bought by the stack.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, assert_never

from gpufleet.review.cost.prices import HOURS, PriceRef, price_dict, rounded
from gpufleet.review.cost.usage import SiteUsage
from model import catalog
from model.pricing import site_service_price, storage_price_key
from model.spec import (
    AwsSite,
    EfsTier,
    FsxLustreTier,
    NfsTier,
    OnPremS3Tier,
    ParallelFsTier,
    S3Tier,
    ScratchTier,
    Site,
    StorageTier,
)


@dataclass(frozen=True)
class StorageCost:
    site: str
    tier: str
    kind: str
    status: Literal["priced", "usage-based", "included", "external", "unpriced"]
    monthly_usd: float | None  # in the totals only when status is priced
    price: PriceRef | None
    quantity: str  # what was multiplied, e.g. "24000 GB"
    note: str

    @property
    def hourly_usd(self) -> float | None:
        return None if self.monthly_usd is None else self.monthly_usd / HOURS

    def to_dict(self) -> dict[str, Any]:
        return {
            "site": self.site,
            "tier": self.tier,
            "kind": self.kind,
            "status": self.status,
            "monthly_usd": rounded(self.monthly_usd),
            "hourly_usd": rounded(self.hourly_usd),
            "price": price_dict(self.price),
            "quantity": self.quantity,
            "note": self.note,
        }


def _ref(found: catalog.ListPrice) -> PriceRef:
    return PriceRef(usd=found.usd, unit="GB-month", date=found.date, source=found.source, verified=found.verified)


def included(site: Site, tier: ScratchTier) -> StorageCost:
    """Node-local scratch: in the node's price, on every kind."""
    return StorageCost(
        site.name, tier.name, tier.kind, "included", None, None, "-", "node-local NVMe: in the node's price"
    )


def external(site: Site, tier: StorageTier) -> StorageCost:
    """A tier the site already has and the stack does not buy (on-prem systems)."""
    return StorageCost(
        site.name,
        tier.name,
        tier.kind,
        "external",
        None,
        None,
        "-",
        "existing on-prem system: not bought by this stack",
    )


def aws_storage_cost(site: AwsSite, tier: StorageTier, usage: SiteUsage) -> StorageCost:
    name, kind = tier.name, tier.kind
    key = storage_price_key(tier)
    found = site_service_price(site, key) if key is not None else None
    match tier:
        case FsxLustreTier():
            if found is None:
                return StorageCost(
                    site.name, name, kind, "unpriced", None, None, f"{tier.capacity_gib} GB",
                    f"no catalog price for FSx Lustre PERSISTENT_2 {tier.throughput_per_tib} MB/s/TiB in {site.region}",
                )  # fmt: skip
            ref = _ref(found)
            note = f"PERSISTENT_2 {tier.throughput_per_tib} MB/s/TiB; backups and transfer not included"
            if not ref.verified:
                note += "; price not confirmed from a stored copy of the AWS price page"
            # FSx bills provisioned capacity; the stack sets it in GiB and AWS quotes $/GB-month for it.
            return StorageCost(
                site.name, name, kind, "priced", tier.capacity_gib * ref.usd, ref, f"{tier.capacity_gib} GB", note
            )
        case EfsTier() | S3Tier():
            return _usage_based(site, tier, found, usage)
        case ScratchTier() | NfsTier() | ParallelFsTier() | OnPremS3Tier():
            return StorageCost(site.name, name, kind, "unpriced", None, None, "-", f"no pricing rule for {kind} tiers")
        case _:
            assert_never(tier)


def _usage_based(
    site: AwsSite, tier: EfsTier | S3Tier, found: catalog.ListPrice | None, usage: SiteUsage
) -> StorageCost:
    """A tier billed on what is stored and moved: priced from the usage profile's GB stored when it gives them,
    else its unit price is listed and nothing is summed."""
    unit = _ref(found) if found else None
    stored = usage.storage.get(tier.name)
    extra = found.usage_based if found else ""
    if stored is not None and unit is not None:
        note = f"{stored.gb_stored:g} GB stored (usage profile) × ${unit.usd:g}/GB-month" + (
            f"; not priced: {extra}" if extra else ""
        )
        return StorageCost(
            site.name, tier.name, tier.kind, "priced", stored.gb_stored * unit.usd, unit,
            f"{stored.gb_stored:g} GB (usage profile)", note,
        )  # fmt: skip
    if stored is not None and unit is None:  # a figure to multiply but no price: unpriced, named in the totals
        return StorageCost(
            site.name, tier.name, tier.kind, "unpriced", None, None, f"{stored.gb_stored:g} GB (usage profile)",
            f"no catalog price for {tier.kind} storage in {site.region}",
        )  # fmt: skip
    rate = f"${unit.usd:.3f}/GB-month stored" if unit else "no catalog price"
    return StorageCost(
        site.name, tier.name, tier.kind, "usage-based", None, unit, "usage",
        f"billed on usage, not in the totals (give sites.{site.name}.storage.{tier.name}.gb_stored in a usage profile): "
        f"{rate}, {extra}".rstrip(", "),
    )  # fmt: skip
