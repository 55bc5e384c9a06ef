"""A stack's usage profile: what it expects to store and move in a month, so usage-billed items get a figure.

- Like Infracost's usage file, it is optional and sits next to the stack file: `usage.<stack>.yaml`.
- Without it, usage-billed items (NAT data processing, data transfer out, EFS and S3 storage) are listed by name
  with their unit price, and left out of the totals.
- Every figure is per month: the catalog's 730-hour month.
- A profile is judged like a stack file, every problem at once. A figure the estate cannot use is an error too,
  because a figure that prices nothing would hide a typo (gpufleet.review.cost.usage_file).

docs/usage-profiles.md is the user's reference: the format, an example, and what each key prices.
"""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import BaseModel, ConfigDict, Field

from model.spec import AwsSite, EfsTier, S3Tier

USAGE_DOC = "docs/usage-profiles.md"
# Where a profile is, for messages that ask for one (the stack's name is not known where they are written).
PROFILE_HINT = f"`usage.<stack>.yaml` beside the stack file; see {USAGE_DOC}"  # backticks: Markdown keeps <stack>
USAGE_TIERS = (EfsTier, S3Tier)  # billed on GB stored (storage._usage_based)
# GB a month in any one figure: an exabyte, far above any estate, and low enough that every price times it stays a
# finite number (JSON has no Infinity). NaN and infinity are refused outright (allow_inf_nan below).
MAX_GB = 1e9
_FIGURES = ConfigDict(extra="forbid", allow_inf_nan=False)


class TierUsage(BaseModel):
    model_config = _FIGURES
    gb_stored: float = Field(ge=0, le=MAX_GB, description="Average GB stored over the month.")


class SiteUsage(BaseModel):
    model_config = _FIGURES
    nat_gb_processed: float | None = Field(
        default=None, ge=0, le=MAX_GB, description="GB a month through the NAT gateways."
    )
    data_transfer_out_gb: float | None = Field(
        default=None, ge=0, le=MAX_GB, description="GB a month out to the internet."
    )
    storage: dict[str, TierUsage] = Field(default_factory=dict, description="Usage of storage tiers, by tier name.")


class UsageProfile(BaseModel):
    model_config = _FIGURES
    sites: dict[str, SiteUsage] = Field(default_factory=dict)

    def site(self, name: str) -> SiteUsage:
        return self.sites.get(name, SiteUsage())


def aws_unusable(site: AwsSite, usage: SiteUsage) -> Iterator[tuple[str, str]]:
    where = f"sites.{site.name}"
    if usage.nat_gb_processed is not None and site.vpc.vpc_id is not None:
        yield (
            f"{where}.nat_gb_processed",
            f"site {site.name} adopts VPC {site.vpc.vpc_id}, where gpufleet creates no NAT gateway; remove it",
        )
    tiers = {t.name: t for t in site.storage}
    billed = ", ".join(t.name for t in site.storage if isinstance(t, USAGE_TIERS)) or "none"
    for name in usage.storage:
        tier = tiers.get(name)
        if tier is None:
            what = "is not a storage tier of"
        elif not isinstance(tier, USAGE_TIERS):
            what = f"is a {tier.kind} tier, not billed on GB stored, of"
        else:
            continue
        yield f"{where}.storage.{name}", f"{name} {what} site {site.name} (its EFS and S3 tiers: {billed})"
