"""The rest of an AWS site's bill: what it runs besides its GPU pools and storage tiers, from dated list prices.

Per AWS site, from the catalog's prices for its region:
- EKS control plane of a created cluster. An adopted cluster is billed to its owner.
- NAT gateways: one per AZ of a created VPC, each with a public IPv4 address, and their data processing.
- The system node pool of a created cluster.
- EBS gp3 root volumes of every node (`_root_volumes`), and Prometheus's volume in gpufleet's gp3 class.
- Data transfer out to the internet.
- The KMS keys the stack creates, and a VPN interconnect's connection.
- The burst site's AWS Budgets alert: $0 without actions.

Per-GB items need a usage profile. A line without a figure (`hourly` None) is named among what the totals leave
out, never $0.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Literal

from gpufleet.review.cost.pools import PoolCost
from gpufleet.review.cost.prices import HOURS, LEVELS, Figures, PriceRef, price_dict
from gpufleet.review.cost.usage import SiteUsage
from model import catalog
from model.conventions import EBS_GP3_CLASS
from model.kinds.aws import AwsKind
from model.nodes import SYSTEM_POOL_DESIRED, SYSTEM_POOL_MAX, SYSTEM_POOL_MIN, SYSTEM_ROOT_VOLUME_GIB
from model.pricing import VPC_SERVICES, eks_cluster_key, kms_keys, site_cpu_price, site_service_price
from model.spec import AwsSite

Status = Literal["priced", "usage-based", "unpriced"]


@dataclass(frozen=True)
class BillLine:
    site: str
    item: str
    quantity: str  # what was multiplied, per size where it varies
    status: Status
    price: PriceRef | None
    hourly: Figures | None  # None: not in the totals (no price, or usage-billed without a usage figure)
    note: str = ""
    key: str = ""  # the price it takes: an instance type or a catalog.SERVICES key (pricing.price_needs)

    def to_dict(self) -> dict[str, Any]:
        return {
            "site": self.site,
            "item": self.item,
            "quantity": self.quantity,
            "status": self.status,
            "price": price_dict(self.price),
            **(self.hourly.to_dict() if self.hourly else {"hourly": None, "monthly": None}),
            "note": self.note,
        }


def _ref(p: catalog.ListPrice) -> PriceRef:
    return PriceRef(p.usd, p.unit, p.date, f"{p.source}; {p.region}", p.verified)


def _flat(per_hour: float) -> Figures:
    return Figures(per_hour, per_hour, per_hour)


def _hourly_line(site: AwsSite, item: str, key: str, count: dict[str, int], what: str, cpu: bool = False) -> BillLine:
    """`count` units (per size) x an hourly list price (the stack's own `prices` entry first)."""
    found = site_cpu_price(site, key) if cpu else site_service_price(site, key)
    quantity = "/".join(str(count[lv]) for lv in LEVELS) + f" {what}"
    if found is None:
        return BillLine(
            site.name, item, quantity, "unpriced", None, None, f"no catalog price for {key} in {site.region}", key
        )
    ref = _ref(found)
    return BillLine(site.name, item, quantity, "priced", ref, Figures(*(count[lv] * ref.usd for lv in LEVELS)), key=key)


def _usage_line(site: AwsSite, item: str, key: str, gb: float | None, usage_key: str) -> BillLine:
    """GB a month (from the usage profile) x a per-GB list price, spread over the month's hours."""
    found = site_service_price(site, key)
    ref = _ref(found) if found else None
    if gb is None:
        rate = f"${ref.usd:g}/GB" if ref else "no catalog price"
        note = f"billed per GB ({rate}); give sites.{site.name}.{usage_key} in a usage profile to price it"
        return BillLine(site.name, item, "usage", "usage-based", ref, None, note, key)
    if ref is None:
        return BillLine(site.name, item, f"{gb:g} GB/month", "unpriced", None, None, f"no catalog price for {key}", key)
    hourly = _flat(gb * ref.usd / HOURS)
    return BillLine(site.name, item, f"{gb:g} GB/month (usage profile)", "priced", ref, hourly, key=key)


def aws_site_bill(
    site: AwsSite, pool_nodes: dict[str, dict[str, int]], usage: SiteUsage, today: dt.date, burst: bool = False
) -> list[BillLine]:
    """The site's bill besides GPU pools and storage tiers on `today`. `pool_nodes`: each GPU pool's nodes at each
    size; `burst`: the site a hybrid estate bursts to, which has the burst budget alert
    (components/aws/burst_budget.py)."""
    lines: list[BillLine] = []
    created_cluster = site.cluster.adopt_name is None
    created_vpc = site.vpc.vpc_id is None
    if created_cluster:
        control_plane = eks_cluster_key(site, today)
        lines.append(_hourly_line(site, "EKS control plane", control_plane, dict.fromkeys(LEVELS, 1), "cluster"))
    if created_vpc:  # the VPC's NAT gateways: one per AZ (components.aws.network)
        azs = dict.fromkeys(LEVELS, len(site.availability_zones))
        gateways, addresses, processed = VPC_SERVICES
        lines.append(_hourly_line(site, "NAT gateways", gateways, azs, "gateways (one per AZ)"))
        lines.append(_hourly_line(site, "NAT public IPv4 addresses", addresses, azs, "addresses"))
        lines.append(_usage_line(site, "NAT data processing", processed, usage.nat_gb_processed, "nat_gb_processed"))
    system = {"min": SYSTEM_POOL_MIN, "desired": SYSTEM_POOL_DESIRED, "max": SYSTEM_POOL_MAX}
    if created_cluster:
        lines.append(
            _hourly_line(
                site, "system node pool", site.system_instance_type, system, f"× {site.system_instance_type}", cpu=True
            )
        )
    lines.append(_root_volumes(site, pool_nodes, system if created_cluster else dict.fromkeys(LEVELS, 0)))
    if AwsKind(site).prices_metrics_volume:
        lines.append(_metrics_volume(site))
    lines.append(
        _usage_line(site, "data transfer out", "data-transfer-out", usage.data_transfer_out_gb, "data_transfer_out_gb")
    )
    lines.append(_kms_line(site))
    if (
        site.interconnect is not None and site.interconnect.kind == "vpn"
    ):  # one connection (components/aws/interconnect.py)
        lines.append(
            _hourly_line(site, "Site-to-Site VPN connection", "vpn-connection", dict.fromkeys(LEVELS, 1), "connection")
        )
    if burst:
        lines.append(_budget_line(site))
    return lines


def _kms_line(site: AwsSite) -> BillLine:
    """The site's customer managed KMS keys (model.pricing.kms_keys), per key-month ÷ 730 h."""
    item, key, keys = "KMS keys", "kms-key", kms_keys(site)
    found = site_service_price(site, key)
    quantity = f"{keys} key{'' if keys == 1 else 's'}"
    if found is None:
        return BillLine(site.name, item, quantity, "unpriced", None, None, f"no catalog price for {key}", key)
    # AWS KMS pricing (https://aws.amazon.com/kms/pricing/): $1 a key-month, and each of the first two rotations of
    # a key adds $1 a month; rotations after the second are free (the cap AWS set in 2024).
    note = (
        "the site key and one per EFS, FSx and S3 tier; each yearly rotation adds $1/key-month for the first two "
        "rotations only (AWS caps rotation charges), so a key costs at most $3/month from its third year"
    )
    return BillLine(site.name, item, quantity, "priced", _ref(found), _flat(keys * found.usd / HOURS), note, key)


def _budget_line(site: AwsSite) -> BillLine:
    """The burst budget alert: one AWS Budgets cost budget, priced per budget-day (24 h)."""
    item, key = "AWS Budgets (burst alert)", "aws-budget"
    found = site_service_price(site, key)
    if found is None:
        return BillLine(site.name, item, "1 budget", "unpriced", None, None, f"no catalog price for {key}", key)
    note = (
        "a cost budget on the burst tag, notifications only; it sees the tag's costs once the tag is activated "
        "as a cost-allocation tag in the payer account"
    )
    return BillLine(site.name, item, "1 budget", "priced", _ref(found), _flat(found.usd / 24), note, key)


def _root_volumes(site: AwsSite, pool_nodes: dict[str, dict[str, int]], system: dict[str, int]) -> BillLine:
    """GB of gp3 root volumes at each size: Σ nodes x root_volume_gib over GPU pools, plus the system pool's
    (SYSTEM_ROOT_VOLUME_GIB x its nodes), priced per GB-month ÷ 730 h."""
    gb = {
        lv: sum(pool_nodes[p.name][lv] * p.root_volume_gib for p in site.node_pools if p.name in pool_nodes)
        + system[lv] * SYSTEM_ROOT_VOLUME_GIB
        for lv in LEVELS
    }
    found = site_service_price(site, "ebs-gp3")
    quantity = "/".join(str(gb[lv]) for lv in LEVELS) + " GB gp3"
    if found is None:
        note = "no catalog price for ebs-gp3"
        return BillLine(site.name, "EBS root volumes", quantity, "unpriced", None, None, note, "ebs-gp3")
    ref = _ref(found)
    note = "every node's encrypted gp3 root volume (3,000 IOPS and 125 MB/s included), per GB-month ÷ 730 h"
    return BillLine(
        site.name,
        "EBS root volumes",
        quantity,
        "priced",
        ref,
        Figures(*(gb[lv] * ref.usd / HOURS for lv in LEVELS)),
        note,
        "ebs-gp3",
    )


def _metrics_volume(site: AwsSite) -> BillLine:
    """Prometheus's persistent volume: `storage_gib` of gp3 in gpufleet's class, per GB-month ÷ 730 h."""
    mon = site.kubernetes.monitoring
    item, quantity = "Prometheus volume", f"{mon.storage_gib} GB gp3"
    found = site_service_price(site, "ebs-gp3")
    if found is None:
        note = "no catalog price for ebs-gp3"
        return BillLine(site.name, item, quantity, "unpriced", None, None, note, "ebs-gp3")
    note = (
        f"kube-prometheus-stack's volume in StorageClass {EBS_GP3_CLASS}, keeping {mon.retention_days} days of "
        "samples; the same at every size"
    )
    return BillLine(
        site.name, item, quantity, "priced", _ref(found), _flat(mon.storage_gib * found.usd / HOURS), note, "ebs-gp3"
    )


def aws_burst_roots(site: AwsSite, pools: list[PoolCost]) -> float:
    """$/h of the gp3 root volumes of the nodes a burst window at max adds to `pools` beyond their
    envelope's max: the budget hour runs them, the root-volume line counts only the envelope's nodes."""
    found = site_service_price(site, "ebs-gp3")
    if found is None:
        return 0.0
    spec_pools = {p.name: p for p in site.node_pools}
    return sum(
        (spec_pools[p.pool].scaling.max - p.nodes["max"]) * spec_pools[p.pool].root_volume_gib * found.usd / HOURS
        for p in pools
        if p.burst and p.pool in spec_pools
    )
