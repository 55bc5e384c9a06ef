"""The cost review's one dispatch on a site's kind: what a site's pools, the rest of its bill and its storage tiers
cost, and what a usage profile may price there.

- A new site kind adds a case to each `match` here, with its pricing beside the others in this folder.
- These build the review's own results (PoolCost, BillLine, StorageCost) from the site's own fields, so they sit
  here and not behind the model's kinds seam (model/kinds/).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import assert_never

from gpufleet.review.cost.bill import BillLine, aws_burst_roots, aws_site_bill
from gpufleet.review.cost.pools import PoolCost, aws_pool, baremetal_pool
from gpufleet.review.cost.storage import StorageCost, aws_storage_cost, external, included
from gpufleet.review.cost.usage import SiteUsage, UsageProfile, aws_unusable
from model.spec import AwsSite, BaremetalSite, BurstWindow, EstateSpec, ScratchTier, Site, StorageTier


def site_costs(
    spec: EstateSpec, site: Site, window: BurstWindow | None, now: dt.datetime, usage: UsageProfile
) -> tuple[list[PoolCost], list[BillLine]]:
    """The site's node pools, and the rest of its bill (what it runs besides pools and tiers)."""
    match site:
        case AwsSite():
            pools = [aws_pool(spec, site, pool, window, now) for pool in site.node_pools]
            burst = spec.burst is not None and spec.burst.cloud_site == site.name
            nodes = {p.pool: p.nodes for p in pools}
            return pools, aws_site_bill(site, nodes, usage.site(site.name), now.date(), burst)
        case BaremetalSite():
            return [baremetal_pool(spec, site, pool) for pool in site.node_pools], []  # owned: no other bill
        case _:
            assert_never(site)


def storage_cost(site: Site, tier: StorageTier, usage: SiteUsage | None = None) -> StorageCost:
    if isinstance(tier, ScratchTier):
        return included(site, tier)
    match site:
        case AwsSite():
            return aws_storage_cost(site, tier, usage or SiteUsage())
        case BaremetalSite():
            return external(site, tier)
        case _:
            assert_never(site)


def unusable_usage(site: Site, usage: SiteUsage) -> Iterator[tuple[str, str]]:
    """(YAML path, message) for each figure of a usage profile's `site` entry that prices nothing there."""
    match site:
        case BaremetalSite():
            yield f"sites.{site.name}", f"site {site.name} is bare metal; a usage profile prices AWS usage only"
        case AwsSite():
            yield from aws_unusable(site, usage)
        case _:
            assert_never(site)


def burst_root_usd_per_hour(site: Site, pools: list[PoolCost]) -> float:
    """$/h of the root volumes the site's burst pools add between the envelope's max and their own max."""
    match site:
        case AwsSite():
            return aws_burst_roots(site, pools)
        case BaremetalSite():
            return 0.0
        case _:
            assert_never(site)
