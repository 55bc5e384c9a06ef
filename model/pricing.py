"""Prices: the one home for hours per month and year, amortisation of owned servers, and node-hour prices.

Pure functions of the spec and the catalog. A bare-metal pool's price per GPU-hour is what its servers cost per
hour (OnPremCost: depreciation + power + operations per server-hour; each field from the pool's own `cost`, else
its site's, else OnPremCost's default, and every defaulted field is named)
divided by the GPUs those servers hold. Servers of one pool may differ in GPU count, so the division is over the
pool's total GPUs, never over one server's: that is the price of the capacity actually in the pool, and the
price `gpufleet cost` and `gpufleet size` both quote.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from model import catalog, clock, versions
from model.spec.aws import AwsNodePool, EfsTier, FsxLustreTier, S3Tier
from model.spec.baremetal import BaremetalNodePool, OnPremCost
from model.spec.pools import TERM_YEARS, Commitment
from model.spec.sites import AwsSite, BaremetalSite

if TYPE_CHECKING:
    # The spec's rules and the kinds price through here, so the spec's modules are imported one by one.
    from model.spec.estate import EstateSpec

Origin = str  # "pool", "site" or "default": where one OnPremCost field's value came from

HOURS_PER_YEAR = 8760  # 365 days
HOURS_PER_MONTH = HOURS_PER_YEAR // 12  # 730: the month cloud price lists and monthly figures use


def server_hour_usd(cost: OnPremCost) -> float:
    """Depreciation (straight line over the lifetime) + power + operations for one server-hour."""
    depreciation = cost.server_price_usd / (cost.lifetime_years * HOURS_PER_YEAR)
    return depreciation + cost.power_kw * cost.usd_per_kwh + cost.ops_usd_per_server_month / HOURS_PER_MONTH


def commitment_end(c: Commitment) -> dt.date:
    """The day a commitment's term ends: its date plus its 1 or 3 years (29 February ends on 28 February)."""
    years = TERM_YEARS[c.term]
    try:
        return c.date.replace(year=c.date.year + years)
    except ValueError:
        return c.date.replace(year=c.date.year + years, day=28)


def commitment_hour_usd(c: Commitment) -> float:
    """One node-hour a commitment covers: its hourly rate plus its upfront fee spread over the term's hours."""
    return c.usd_per_hour + c.upfront_usd / (TERM_YEARS[c.term] * HOURS_PER_YEAR)


@dataclass(frozen=True)
class PoolRate:
    """What a node-hour of an AWS pool costs as it is bought: `usd` the rate of its nodes, `basis` how it was
    bought in words. A commitment covers `committed` nodes at `usd`, paid whether they run or not; nodes above
    it pay `on_demand`."""

    usd: float
    date: str
    source: str
    basis: str
    on_demand: float
    committed: int = 0
    note: str = ""  # e.g. a commitment whose term has ended


def pool_rate(site: AwsSite, pool: AwsNodePool, instance_type: str, today: dt.date | None = None) -> PoolRate | None:
    """A node-hour of `pool` (of `instance_type`, a window's when one changes it) on `site`: the stack's own price
    first; else spot at the stack's `spot_discount` or the catalog's dated spot figure, never the on-demand rate;
    else a commitment's rate for its nodes until its term ends on or before `today` (then on demand, with a
    note); else on demand. None when nothing prices it. Capacity blocks are priced apart
    (site_capacity_block_price)."""
    today = today or clock.now().date()
    found = site_price(site, instance_type)
    if found is None:
        return None
    od, cap = found.usd_per_hour, pool.capacity
    if site.price_override(instance_type) is not None:
        listed = catalog.price(instance_type, site.region)  # the on-demand rate the stack's own is set against
        return PoolRate(od, found.date, found.source, "the stack's own rate", listed.usd_per_hour if listed else od)
    if cap.type == "spot":
        where = f"sites.{site.name}.node_pools.{pool.name}.capacity.spot_discount"
        if cap.spot_discount is not None:
            usd = od * (1 - cap.spot_discount)
            return PoolRate(
                usd,
                found.date,
                f"stack: {where} off {found.source}",
                f"spot at {cap.spot_discount:.0%} off on-demand",
                od,
            )
        spot = catalog.spot_price(instance_type, site.region)
        if spot is None:
            return None
        return PoolRate(spot.usd_per_hour, spot.date, spot.source, spot_basis(spot), od)  # pool_prices adds the region
    if cap.commitment is not None and today >= commitment_end(cap.commitment):
        c, where = cap.commitment, f"sites.{site.name}.node_pools.{pool.name}.capacity.commitment"
        note = f"{where} ({c.term} {c.kind} of {c.date}) ended on {commitment_end(c)}: its nodes pay on demand"
        return PoolRate(od, found.date, found.source, "on demand", od, note=note)
    if cap.commitment is not None:
        c = cap.commitment
        where = f"stack: sites.{site.name}.node_pools.{pool.name}.capacity.commitment ({c.source})"
        basis = f"{c.term} {c.kind} ({c.payment}) on {c.nodes} node{'' if c.nodes == 1 else 's'}"
        return PoolRate(commitment_hour_usd(c), c.date.isoformat(), where, basis, od, c.nodes)
    return PoolRate(od, found.date, found.source, "on demand", od)


def override_source(site: AwsSite, instance_type: str) -> str:
    """How a price the stack sets itself is cited: where it is set, and the source the stack gives."""
    own = site.price_override(instance_type)
    return f"stack: sites.{site.name}.prices ({own.source if own else 'unset'})"


def site_price(site: AwsSite, instance_type: str) -> catalog.Price | None:
    """The price of a node-hour of `instance_type` on `site`: the stack's own (`prices`, with its date and source)
    before the catalog's on-demand price in the site's region; None when neither has one. Cost, sizing and the
    burst budget all price a cloud node here."""
    own = site.price_override(instance_type)
    if own is not None:
        return catalog.Price(own.usd_per_hour, site.region, own.date.isoformat(), override_source(site, instance_type))
    return catalog.price(instance_type, site.region)


def site_service_price(site: AwsSite, key: str) -> catalog.ListPrice | None:
    """The price of a bill line `key` (catalog.SERVICES) on `site`: the stack's own (`prices`, with its date and
    source) before the catalog's list price in the site's region; None when neither has one."""
    own = site.service_price_override(key)
    if own is not None:
        where = f"stack: sites.{site.name}.prices ({own.source})"
        unit = catalog.service(key).unit
        return catalog.ListPrice(key, own.usd, unit, site.region, own.date.isoformat(), where, True)
    return catalog.service_price(key, site.region)


def site_cpu_price(site: AwsSite, instance_type: str) -> catalog.ListPrice | None:
    """A node-hour of the CPU system pool's type on `site`: the stack's own price before the catalog's."""
    own = site.price_override(instance_type)
    if own is not None:
        where = override_source(site, instance_type)
        return catalog.ListPrice(
            instance_type, own.usd_per_hour, "node-hour", site.region, own.date.isoformat(), where, True
        )
    return catalog.cpu_instance_price(instance_type, site.region)


def site_capacity_block_price(site: AwsSite, pool: AwsNodePool) -> catalog.ListPrice | None:
    """A node-hour of `pool` on its EC2 Capacity Block: the block's own upfront fee (`capacity.block.upfront_usd`)
    over its hours and instances (`capacity.instances`, else the pool's max), before the catalog's capacity-block rate in the site's region;
    None when the block's length is not stated or neither prices it. Never the on-demand rate: AWS prices a block
    apart, and charges it whether or not nodes run."""
    block = pool.capacity.block
    if block is None:
        return None
    if block.upfront_usd is None:
        return catalog.capacity_block_price(pool.instance_type, site.region)
    rate = block.upfront_usd / block.hours / max(pool.capacity.instances or pool.scaling.max, 1)
    where = f"stack: sites.{site.name}.node_pools.{pool.name}.capacity.block.upfront_usd"
    date = block.start.date().isoformat() if block.start is not None else "stack file"
    return catalog.ListPrice(pool.instance_type, rate, "node-hour", site.region, date, where, True)


PriceKind = Literal["gpu-instance", "cpu-instance", "service", "capacity-block", "spot"]


@dataclass(frozen=True)
class PriceNeed:
    """A list price an AWS site's bill needs: where the stack asks for it (YAML path under the site), the
    instance type or catalog.SERVICES key, and what it prices (`pool`: the node pool of a capacity block)."""

    path: str
    key: str
    kind: PriceKind
    what: str
    usage_based: bool = False  # billed on a usage profile's figures (GB moved or stored), else left out of totals
    pool: str | None = None


def eks_cluster_key(site: AwsSite, today: dt.date) -> str:
    """The control plane's price key on `today`: `eks-cluster-extended` once the cluster's minor is past its end
    of standard support under support_type EXTENDED (EKS bills that day on at the extended rate:
    docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html), else `eks-cluster`. Under STANDARD, EKS
    upgrades the control plane instead, so the standard rate holds."""
    pinned = versions.eks_minor(site.cluster.version)
    if site.cluster.support_type == "EXTENDED" and pinned is not None and today >= pinned.end_of_standard_support:
        return "eks-cluster-extended"
    return "eks-cluster"


def price_needs(site: AwsSite) -> list[PriceNeed]:
    """Every list price `site`'s cost envelope uses (gpufleet/review/cost/bill.py, storage.py and envelope.py bill
    exactly these): its GPU pools, and what a created cluster (EKS, the system pool) and a created VPC (NAT
    gateways, their public IPv4 addresses and data processing) add, root volumes, data transfer out, storage, the
    KMS keys and a VPN interconnect's connection."""
    needs = [
        PriceNeed(f"node_pools[{j}].instance_type", p.instance_type, "gpu-instance", f"pool {p.name}")
        for j, p in enumerate(site.node_pools)
        if not p.instance.capacity_block_only  # no on-demand price exists: the block's is the pool's price
    ]
    needs += [
        PriceNeed(f"node_pools[{j}].capacity.block", p.instance_type, "capacity-block", f"pool {p.name}", pool=p.name)
        for j, p in enumerate(site.node_pools)
        if p.capacity.type == "capacity-block"
    ]
    needs += [
        PriceNeed(f"node_pools[{j}].capacity", p.instance_type, "spot", f"spot pool {p.name}", pool=p.name)
        for j, p in enumerate(site.node_pools)
        if p.capacity.type == "spot"
    ]
    if site.cluster.adopt_name is None:
        needs.append(
            PriceNeed("cluster", eks_cluster_key(site, clock.now().date()), "service", "the EKS control plane")
        )
        needs.append(
            PriceNeed("system_instance_type", site.system_instance_type, "cpu-instance", "the system node pool")
        )
    if site.vpc.vpc_id is None:
        needs += [PriceNeed("vpc", k, "service", catalog.service(k).what, k in USAGE_SERVICES) for k in VPC_SERVICES]
    needs += [
        PriceNeed("region", k, "service", catalog.service(k).what, k in USAGE_SERVICES)
        for k in ("ebs-gp3", "data-transfer-out")
    ]
    for j, tier in enumerate(site.storage):
        key = storage_price_key(tier)
        if key is not None:
            needs.append(PriceNeed(f"storage[{j}]", key, "service", f"tier {tier.name}", key in USAGE_SERVICES))
    needs.append(PriceNeed("region", "kms-key", "service", catalog.service("kms-key").what))
    if site.interconnect is not None and site.interconnect.kind == "vpn":
        needs.append(PriceNeed("interconnect", "vpn-connection", "service", catalog.service("vpn-connection").what))
    return needs


def kms_keys(site: AwsSite) -> int:
    """The customer managed KMS keys the stack creates on `site`: the site key (components/aws/cluster.py
    `_key`, created for an adopted cluster too) and one per EFS, FSx and S3 tier (components/aws/storage/
    context.py `tier_key`)."""
    return 1 + sum(isinstance(t, EfsTier | FsxLustreTier | S3Tier) for t in site.storage)


# What a created VPC bills: one NAT gateway per AZ, each with a public IPv4 address, and their data processing.
VPC_SERVICES = ("nat-gateway", "public-ipv4", "nat-gateway-data")
# Lines billed on what is moved or stored: the bill multiplies a usage profile's figures by them
# (gpufleet/review/cost/bill.py, storage.py) and, without figures, lists the unit price outside the totals.
USAGE_SERVICES = frozenset({"nat-gateway-data", "data-transfer-out", "efs-standard", "s3-standard"})


def storage_price_key(tier: object) -> str | None:
    """The catalog.SERVICES key a storage tier is priced by (FSx by its throughput tier); None: not list-priced."""
    match tier:
        case FsxLustreTier():
            return catalog.fsx_lustre_key(tier.throughput_per_tib)
        case EfsTier():
            return "efs-standard"
        case S3Tier():
            return "s3-standard"
        case _:
            return None


def need_priced(site: AwsSite, need: PriceNeed) -> bool:
    """Whether the stack's own `prices` or the catalog price `need` in the site's region."""
    match need.kind:
        case "gpu-instance":
            return site_price(site, need.key) is not None
        case "cpu-instance":
            return site_cpu_price(site, need.key) is not None
        case "service":
            return site_service_price(site, need.key) is not None
        case "capacity-block":
            pool = next(p for p in site.node_pools if p.name == need.pool)
            return site_capacity_block_price(site, pool) is not None
        case "spot":
            pool = next(p for p in site.node_pools if p.name == need.pool)
            return site_price(site, need.key) is None or pool_rate(site, pool, need.key) is not None


def prices_entry(need: PriceNeed) -> str:
    """The `prices` entry, to fill in, that prices `need` on its site."""
    if need.kind == "service":
        unit = catalog.service(need.key).unit
        return f"{{service: {need.key}, usd: <USD per {unit}>, date: YYYY-MM-DD, source: <where from>}}"
    return f"{{instance_type: {need.key}, usd_per_hour: <USD>, date: YYYY-MM-DD, source: <where from>}}"


def unpriced_needs(site: AwsSite) -> list[PriceNeed]:
    """What `site` bills from the stack alone that neither its `prices` nor the catalog prices in its region (a
    stack with any is refused). A usage-based line without a price is not refused here: with no usage figure it is
    outside the totals, and with one the bill names it unpriced (and an unchecked budget fails `check`)."""
    return [n for n in price_needs(site) if not n.usage_based and not need_priced(site, n)]


def capacity_block_unpriced(s: AwsSite, need: PriceNeed) -> str:
    """Why a pool's capacity block has no price: its length is not stated, or nothing prices it in the region."""
    pool = next(p for p in s.node_pools if p.name == need.pool)
    on = f"{need.what} runs on capacity block {pool.capacity.reservation}"
    if pool.capacity.block is None:
        return (
            f"{on}, which AWS charges up front for its length: set block: {{days: <1 to 14, or 21 to 182 in steps "
            "of 7>} (and its start), so cost counts its hours, not a month at the on-demand rate"
        )
    return (
        f"{on}, and the catalog holds no {s.region} capacity-block rate for {need.key}; set block.upfront_usd to "
        "what AWS charged for the block (its offering's upfrontFee)"
    )


def spot_unpriced(s: AwsSite, need: PriceNeed) -> str:
    """Why a spot pool has no price: the catalog holds no dated spot figure for its type in the region."""
    return (
        f"{need.what} runs on spot, and the catalog holds no {s.region} spot figure for {need.key}; set "
        "capacity.spot_discount (the share off on-demand you expect, e.g. 0.6), since spot is never priced at the "
        "on-demand rate"
    )


def node_hour_price(site: AwsSite, instance_type: str) -> float:
    """One node-hour of `instance_type` on `site` (`site_price`; CatalogError if neither the stack nor the catalog
    prices it)."""
    price = site_price(site, instance_type)
    if price is None:
        raise catalog.CatalogError(
            f"neither sites.{site.name}.prices nor the catalog holds a {site.region} price for {instance_type}"
        )
    return price.usd_per_hour


@dataclass(frozen=True)
class PoolGpuHourPrice:
    pool: str
    servers: int
    gpus: int
    usd_per_server_hour: float
    source: str  # "pool" or "site": whose `cost` priced the pool (a pool's override takes the rest from its site)
    inputs: OnPremCost  # the resolved inputs
    origins: dict[str, Origin]  # each OnPremCost field -> where its value came from

    @property
    def usd_per_hour(self) -> float:
        """The whole pool, every server running."""
        return self.servers * self.usd_per_server_hour

    @property
    def usd_per_gpu_hour(self) -> float:
        return self.usd_per_hour / self.gpus


def pool_cost_inputs(site: BaremetalSite, pool: BaremetalNodePool) -> tuple[OnPremCost, str, dict[str, Origin]] | None:
    """The pool's resolved OnPremCost, whose it is ("pool" or "site") and where each field came from.

    A field the pool's `cost` sets wins; an unset one is the site's `cost` value; a field neither sets is
    OnPremCost's default (origin "default", so output can name it). None when neither pool nor site has a cost.
    """
    if pool.cost is None and site.cost is None:
        return None
    values: dict[str, float] = {}
    origins: dict[str, Origin] = {}
    for name in OnPremCost.model_fields:
        own = getattr(pool.cost, name) if pool.cost is not None else None
        if own is not None:
            values[name], origins[name] = own, "pool"
        elif site.cost is not None and name in site.cost.model_fields_set:
            values[name], origins[name] = getattr(site.cost, name), "site"
        else:
            origins[name] = "default"
    return OnPremCost.model_validate(values), ("pool" if pool.cost is not None else "site"), origins


def pool_gpu_hour_price(spec: EstateSpec, site: BaremetalSite, pool: BaremetalNodePool) -> PoolGpuHourPrice | None:
    """Amortised price of one GPU-hour on `pool`; None when neither the pool nor its site has cost inputs."""
    inputs = pool_cost_inputs(site, pool)
    if inputs is None:
        return None
    cost, source, origins = inputs
    servers = spec.pool_servers(site, pool)
    return PoolGpuHourPrice(
        pool=pool.name,
        servers=len(servers),
        gpus=sum(s.gpu_count for s in servers),
        usd_per_server_hour=server_hour_usd(cost),
        source=source,
        inputs=cost,
        origins=origins,
    )


@dataclass(frozen=True)
class GpuHourQuote:
    """What sizing compares placements by: `usd` per hour for `gpus` GPUs (None: unpriced), and its basis in words."""

    usd: float | None
    gpus: int
    basis: str


def instance_gpu_hour(instance_type: str, region: str, site: AwsSite | None = None) -> GpuHourQuote:
    """A node of `instance_type`: at its site's price (the stack's own `prices` first) for a stack pool, at the
    catalog's on-demand price in `region` for a candidate."""
    p = site_price(site, instance_type) if site is not None else catalog.price(instance_type, region)
    gpus = catalog.instance_type(instance_type).gpu_count
    if p is None:
        return GpuHourQuote(None, gpus, f"unpriced: no on-demand price for {region} in the catalog")
    basis = p.source if p.source.startswith("stack:") else f"catalog on-demand {region}"
    return GpuHourQuote(p.usd_per_hour, gpus, f"{basis}, {p.date}")


def spot_basis(spot: catalog.SpotPrice) -> str:
    """A catalog spot figure in words: the mean over the AZ IDs recorded, their range and the snapshot's date."""
    return f"spot, the mean of {spot.zones} AZ IDs (${spot.low:,.2f} to ${spot.high:,.2f}/h on {spot.date})"


def spot_gpu_hour(instance_type: str, region: str, discount: float | None = None) -> GpuHourQuote | None:
    """A spot node of a candidate `instance_type` in `region`, as pool_rate prices a spot pool: the catalog's dated
    spot figure, else `discount` off the catalog's on-demand price; None when neither prices it."""
    gpus = catalog.instance_type(instance_type).gpu_count
    if (spot := catalog.spot_price(instance_type, region)) is not None:
        return GpuHourQuote(spot.usd_per_hour, gpus, f"{spot_basis(spot)}, {region}")
    od = catalog.price(instance_type, region)
    if discount is None or od is None:
        return None
    basis = f"spot at {discount:.0%} off catalog on-demand {region} ({od.date}; planning.spot_discount)"
    return GpuHourQuote(od.usd_per_hour * (1 - discount), gpus, basis)


def aws_pool_gpu_hour(site: AwsSite, pool: AwsNodePool) -> GpuHourQuote:
    """A node of a stack pool as it is bought (pool_rate: spot), else as instance_gpu_hour quotes it; a capacity
    block keeps the instance's quote, and a committed pool quotes on demand (a node sizing adds is above the
    commitment's nodes)."""
    rate = None if pool.capacity.type == "capacity-block" else pool_rate(site, pool, pool.instance_type)
    if rate is None or rate.basis in ("on demand", "the stack's own rate"):
        return instance_gpu_hour(pool.instance_type, site.region, site)
    if rate.committed:
        # The commitment's nodes are paid whether they run or not; a node sizing adds is one above them, on demand.
        quote = instance_gpu_hour(pool.instance_type, site.region, site)
        return GpuHourQuote(quote.usd, quote.gpus, f"{quote.basis}: nodes above the {rate.basis} pay on demand")
    gpus = catalog.instance_type(pool.instance_type).gpu_count
    return GpuHourQuote(rate.usd, gpus, f"{rate.basis}, {rate.date}")


def onprem_gpu_hour(spec: EstateSpec, site: BaremetalSite, pool: BaremetalNodePool) -> GpuHourQuote:
    """One GPU-hour of the pool's servers, amortised (the figure `gpufleet cost` prices the pool at)."""
    price = pool_gpu_hour_price(spec, site, pool)
    if price is None or price.gpus == 0:
        return GpuHourQuote(None, 1, "unpriced: no on-prem cost in the stack")
    return GpuHourQuote(price.usd_per_gpu_hour, 1, "on-prem amortised server-hour (stack cost)")
