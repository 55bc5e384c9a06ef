"""A stack's usage profile: what it expects to store and move in a month, so usage-billed items get a figure.

Like Infracost's usage file, it sits next to the stack file, `usage.<stack>.yaml`, and is optional:
without it, usage-billed items (NAT data processing, data transfer out, EFS and S3 storage) are listed by name
with their unit price and left out of the totals. Every figure is per month (the catalog's 730-hour month):

    sites:
      use1:
        nat_gb_processed: 2000        # GB through the NAT gateways (both directions)
        data_transfer_out_gb: 500     # GB out to the internet
        storage:
          objects: {gb_stored: 40000} # S3 tier `objects`: average GB stored
          home: {gb_stored: 800}      # EFS tier `home`
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from model.load import SpecError, read_yaml


class TierUsage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    gb_stored: float = Field(ge=0, description="Average GB stored over the month.")


class SiteUsage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    nat_gb_processed: float | None = Field(default=None, ge=0, description="GB a month through the NAT gateways.")
    data_transfer_out_gb: float | None = Field(default=None, ge=0, description="GB a month out to the internet.")
    storage: dict[str, TierUsage] = Field(default_factory=dict, description="Usage of storage tiers, by tier name.")


class UsageProfile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sites: dict[str, SiteUsage] = Field(default_factory=dict)

    def site(self, name: str) -> SiteUsage:
        return self.sites.get(name, SiteUsage())


def usage_path(stack_file: Path, stack: str) -> Path:
    """Where a stack's usage profile lives: next to its stack file (not `Pulumi.*.yaml`, which names stacks)."""
    return stack_file.with_name(f"usage.{stack}.yaml")


def read_usage(path: Path) -> UsageProfile | None:
    """The usage profile at `path`, None when there is no such file; a SpecError names every problem at once."""
    if not path.exists():
        return None
    doc = read_yaml(path, "usage profile not found") or {}  # the one bounded loader
    try:
        return UsageProfile.model_validate(doc)
    except ValidationError as e:
        problems = [f"{path}: {'.'.join(str(p) for p in err['loc']) or '(top)'}: {err['msg']}" for err in e.errors()]
        raise SpecError(problems) from None
