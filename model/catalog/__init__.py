"""The catalog: GPU models, AWS GPU instance facts and prices, each dated and sourced.

- Data lives in the files beside this module (each `*_FILE` below says what it holds). This loader is their
  only reader.
- Everything that needs a GPU count, a GPU's memory, an EFA layout or a price asks here, so no number is typed
  twice.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import Any

from model.catalog.gpus import GPUS_FILE as GPUS_FILE
from model.catalog.gpus import GpuModel as GpuModel
from model.catalog.gpus import MigProfile as MigProfile
from model.catalog.gpus import gpu_models as gpu_models
from model.catalog.s3_ranges import S3_RANGES_FILE as S3_RANGES_FILE
from model.catalog.s3_ranges import S3_RANGES_STALE_DAYS as S3_RANGES_STALE_DAYS
from model.catalog.s3_ranges import s3_ranges as s3_ranges
from model.catalog.s3_ranges import s3_ranges_age_days as s3_ranges_age_days
from model.catalog.s3_ranges import s3_ranges_dated as s3_ranges_dated
from model.yaml_text import safe_load

HERE = Path(__file__).parent
# Written by `gpufleet catalog refresh` (EC2 DescribeInstanceTypes), never by hand; with each region's offerings
# by AZ ID under OFFERINGS_KEY.
INSTANCES_FILE = HERE / "aws_instances.json"
OFFERINGS_KEY = "offerings_by_az_id"
OFFERINGS_SOURCES_KEY = "offerings_sources"  # region -> {source, date}: where and when its offerings came from
# On-demand Linux prices per region, each region with its date and source (`sources`); and storage / service list
# prices per region, each figure dated and sourced.
PRICES_FILE = HERE / "aws_prices.json"
# The AWS commercial regions (botocore's endpoints data), written by `gpufleet catalog refresh --prices`; a stack's
# aws site must name one of them.
REGIONS_FILE = HERE / "aws_regions.json"
# Every EC2 instance type name (botocore's EC2 API model), written with the regions; a system pool must name one.
INSTANCE_TYPE_NAMES_FILE = HERE / "aws_instance_type_names.json"
# The effective hourly rate of EC2 Capacity Blocks per region, dated and sourced. AWS reprices blocks by supply and
# demand, so it is the published rate on its date, not a quote.
CAPACITY_BLOCK_PRICES_FILE = HERE / "aws_capacity_block_prices.json"
# Published NCCL all-reduce bus bandwidth across nodes per instance type (AWS's reference runs), dated and sourced;
# read by sizing's all-reduce time and verify's fabric pass mark alike.
NCCL_BUSBW_FILE = HERE / "nccl_busbw.yaml"

# The NVIDIA GPU instance types gpufleet ships facts for; `catalog refresh` describes exactly these.
SHIPPED_INSTANCE_TYPES: tuple[str, ...] = (
    "p6e-gb200.36xlarge", "p6-b300.48xlarge", "p6-b200.48xlarge",
    "p5.48xlarge", "p5.4xlarge", "p5e.48xlarge", "p5en.48xlarge",
    "p4d.24xlarge", "p4de.24xlarge", "p3dn.24xlarge",
    "g6e.xlarge", "g6e.2xlarge", "g6e.4xlarge", "g6e.8xlarge", "g6e.12xlarge", "g6e.16xlarge",
    "g6e.24xlarge", "g6e.48xlarge",
    "g6.xlarge", "g6.2xlarge", "g6.4xlarge", "g6.8xlarge", "g6.12xlarge", "g6.16xlarge",
    "g6.24xlarge", "g6.48xlarge",
    "g5.xlarge", "g5.2xlarge", "g5.4xlarge", "g5.8xlarge", "g5.12xlarge", "g5.16xlarge",
    "g5.24xlarge", "g5.48xlarge",
)  # fmt: skip


# Instance facts typed from AWS's published pages, with their source, for types the refresh account did not describe
# (sold only as UltraServers through Capacity Blocks); `catalog refresh` keeps them until EC2 describes the type.
PUBLISHED_KEY = "published"

# GPUs one NVLink domain joins, where it is wider than one instance: an UltraServer's GPUs share one NVLink domain
# (NVL72) across its instances. EKS user guide ml-eks-nvidia-ultraserver (awsdocs/amazon-eks-user-guide at
# e0464053): p6e-gb200.36xlarge comes only as u-p6e-gb200x36 (9 instances) and u-p6e-gb200x72 (18 instances), and
# nodes of one domain share the `nvidia.com/gpu.clique` label. The domain is the x72's, 18 x 4 GPUs; an x36 is half
# of it. Every other type's domain is its own GPUs when they have NVLink, else one GPU.
ULTRASERVER_NVLINK_DOMAIN_GPUS: dict[str, int] = {"p6e-gb200.36xlarge": 72}


class CatalogError(LookupError, ValueError):
    """A GPU model, instance type or price the catalog does not hold."""


@dataclass(frozen=True)
class InstanceType:
    name: str
    gpu: GpuModel
    gpu_count: int
    vcpus: int
    memory_mib: int
    architecture: str  # EC2's SupportedArchitectures[0]: "x86_64" or "arm64" (Grace)
    network_performance: str
    network_cards: int
    efa_supported: bool
    max_efa_interfaces: int
    local_nvme_gb: int
    local_nvme_disks: int
    placement_strategies: tuple[str, ...]
    usage_classes: tuple[str, ...]

    @property
    def family(self) -> str:
        return self.name.split(".")[0]

    @property
    def network_gbit_per_s(self) -> Fraction | None:
        return network_gbit_per_s(self.network_performance)

    @property
    def nvlink_domain_gpus(self) -> int:
        """GPUs in one NVLink domain of this type: an UltraServer's (ULTRASERVER_NVLINK_DOMAIN_GPUS), else the
        GPU model's domain (gpus.yaml) as far as the instance's own GPUs fill it."""
        if self.name in ULTRASERVER_NVLINK_DOMAIN_GPUS:
            return ULTRASERVER_NVLINK_DOMAIN_GPUS[self.name]
        return min(self.gpu.nvlink_domain_gpus, self.gpu_count)

    @property
    def rack_scale(self) -> bool:
        """One NVLink domain spans instances (an UltraServer): its pods need IMEX channels from ComputeDomains."""
        return self.nvlink_domain_gpus > self.gpu_count

    @property
    def capacity_block_only(self) -> bool:
        """EC2 sells the type only through Capacity Blocks (its usage classes)."""
        return self.usage_classes == ("capacity-block",)


_RATE = re.compile(r"\s*(?:(\d+)\s*x\s+)?(\d+(?:\.\d+)?)\s+Gigabit\s*")


def network_gbit_per_s(network_performance: str) -> Fraction | None:
    """A fixed EC2 `NetworkPerformance` line rate in Gbit/s ("3200 Gigabit" -> 3200, "4x 100 Gigabit" -> 400, as
    DescribeInstanceTypes reports p4d); None for burstable "Up to ..." rates."""
    m = _RATE.fullmatch(network_performance)
    if m is None:
        return None
    return int(m.group(1) or 1) * Fraction(m.group(2))


@dataclass(frozen=True)
class Price:
    usd_per_hour: float
    region: str
    date: str
    source: str


@cache
def _instances_doc() -> dict[str, Any]:
    return json.loads(INSTANCES_FILE.read_text())


@cache
def _prices_doc() -> dict[str, Any]:
    return json.loads(PRICES_FILE.read_text())


@cache
def aws_regions() -> dict[str, str]:
    """AWS commercial region codes -> their names (e.g. "us-west-2" -> "US West (Oregon)")."""
    return dict(json.loads(REGIONS_FILE.read_text())["regions"])


@cache
def ec2_instance_type_names() -> frozenset[str]:
    """Every EC2 instance type name AWS's API knows (not only the GPU types the catalog describes)."""
    return frozenset(json.loads(INSTANCE_TYPE_NAMES_FILE.read_text())["instance_types"])


def unknown_instance_type_name(name: str) -> str | None:
    """Why `name` is refused as an EC2 instance type, naming the closest real ones; None when EC2 has it."""
    if name in ec2_instance_type_names():
        return None
    close = difflib.get_close_matches(name, sorted(ec2_instance_type_names()), n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return f"{name} is not an EC2 instance type (EC2's API lists every one, {INSTANCE_TYPE_NAMES_FILE.name}){hint}"


def unknown_region(region: str) -> str | None:
    """Why `region` is refused, naming the known regions closest to it; None when it is a known region."""
    if region in aws_regions():
        return None
    close = difflib.get_close_matches(region, list(aws_regions()), n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(close)}?" if close else f"known: {', '.join(aws_regions())}"
    return f"{region} is not an AWS commercial region; {hint}"


def gpu_model(gid: str) -> GpuModel:
    try:
        return gpu_models()[gid]
    except KeyError:
        raise CatalogError(f"unknown GPU model {gid!r}; known: {', '.join(sorted(gpu_models()))}") from None


def _model_for(aws_name: str, memory_mib: int) -> GpuModel:
    for m in gpu_models().values():
        if m.aws_name == aws_name and m.memory_mib == memory_mib:
            return m
    raise CatalogError(f"no GPU model in gpus.yaml for EC2 GPU {aws_name} with {memory_mib} MiB")


@cache
def instance_types() -> dict[str, InstanceType]:
    out: dict[str, InstanceType] = {}
    for name, f in _instances_doc()["instances"].items():
        out[name] = InstanceType(
            name=name,
            gpu=_model_for(f["gpu_name"], f["gpu_memory_mib"]),
            gpu_count=f["gpu_count"],
            vcpus=f["vcpus"],
            memory_mib=f["memory_mib"],
            architecture=f["architecture"],
            network_performance=f["network_performance"],
            network_cards=f["network_cards"],
            efa_supported=f["efa_supported"],
            max_efa_interfaces=f["max_efa_interfaces"],
            local_nvme_gb=f["local_nvme_gb"],
            local_nvme_disks=f["local_nvme_disks"],
            placement_strategies=tuple(f["placement_strategies"]),
            usage_classes=tuple(f["usage_classes"]),
        )
    return out


def instance_type(name: str) -> InstanceType:
    try:
        return instance_types()[name]
    except KeyError:
        raise CatalogError(
            f"instance type {name!r} is not in the GPU catalog; known: {', '.join(sorted(instance_types()))}"
        ) from None


def offered_zone_ids(name: str, region: str) -> list[str] | None:
    """AZ IDs of `region` offering `name` (use1-az1, ...), or None when the catalog holds no offerings there.

    IDs, not names: AZ names map to AZs per account, so no account's names say where a type is offered in
    another (https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html). `gpufleet check --aws`
    maps the stack's AZ names to IDs in the deployer's account."""
    region_offers = _instances_doc().get(OFFERINGS_KEY, {}).get(region)
    if region_offers is None:
        return None
    return list(region_offers.get(name, []))


def offerings_source(region: str) -> str:
    """Where and when `region`'s offerings by AZ ID were recorded, in words ("unrecorded" when the file has none)."""
    entry = _instances_doc().get(OFFERINGS_SOURCES_KEY, {}).get(region)
    return "an unrecorded source" if entry is None else f"{entry['source']}, recorded {entry['date']}"


def instances_generated() -> str:
    return str(_instances_doc()["generated"])


@dataclass(frozen=True)
class BusBandwidth:
    """NCCL all-reduce bus bandwidth across nodes (GB/s, nccl-tests' busbw) a healthy fabric reaches, and its basis:
    a published measurement of the instance type, else the node's line rate (Gbit/s ÷ 8)."""

    gb_per_s: Fraction
    measured: bool
    source: str


@cache
def _nccl_doc() -> dict[str, Any]:
    return dict(safe_load(NCCL_BUSBW_FILE.read_text()))


def node_busbw(
    instance_type: str | None, line_rate_gbit: Fraction, gpu: GpuModel | None = None, gpus_per_node: int = 0
) -> BusBandwidth:
    """The all-reduce bus bandwidth across nodes of `instance_type` (None: a bare-metal server) whose network runs at
    `line_rate_gbit`: AWS's published 2-node figure when nccl_busbw.yaml holds one. Else, for a multi-GPU NVLink node
    of a GPU generation (aws_name) a published type shares, the line rate in GB/s times that type's published busbw
    over its own line rate (the same NVLink reduction inside the node clears the network's rate alike, so owned
    and rented fabrics are judged alike: gpufleet's assumption); else the line rate in GB/s."""
    doc = _nccl_doc()
    ref = doc["instances"].get(instance_type) if instance_type else None
    if ref is not None:
        where = f"{ref['nodes']} x {instance_type} all_reduce_perf at {ref['bytes']} B, {doc['source']} ({doc['date']})"
        return BusBandwidth(Fraction(str(ref["busbw_gb_per_s"])), True, f"published busbw: {where}")
    line = line_rate_gbit / 8
    if gpu is not None and gpus_per_node > 1 and gpu.nvlink_gb_per_s:
        for name, e in sorted(doc["instances"].items()):
            it = instance_type_or_none(name)
            if it is None or it.gpu.aws_name != gpu.aws_name or it.gpu_count < 2 or not it.network_gbit_per_s:
                continue
            ratio = Fraction(str(e["busbw_gb_per_s"])) / (it.network_gbit_per_s / 8)
            why = (
                f"line rate {line_rate_gbit} Gbit/s ÷ 8 × {float(ratio):.4f}, {name}'s published busbw "
                f"{e['busbw_gb_per_s']} GB/s over its line rate (same {gpu.aws_name} NVLink node; gpufleet's assumption)"
            )
            return BusBandwidth(line * ratio, False, why)
    return BusBandwidth(line, False, f"line rate {line_rate_gbit} Gbit/s ÷ 8 (no published busbw)")


def instance_type_or_none(name: str) -> InstanceType | None:
    return instance_types().get(name)


def price(name: str, region: str) -> Price | None:
    """On-demand Linux $/h of `name` in `region`, or None when the catalog has no price for it."""
    doc = _prices_doc()
    value = doc["regions"].get(region, {}).get(name)
    if value is None:
        return None
    source = doc["sources"][region]
    return Price(usd_per_hour=float(value), region=region, date=str(source["date"]), source=str(source["source"]))


@dataclass(frozen=True)
class SpotPrice:
    """A spot $/h of an instance type in a region: the mean over the AZ IDs a dated snapshot recorded, and the
    range, since the AZ a pool lands in is the account's."""

    usd_per_hour: float
    low: float
    high: float
    zones: int
    region: str
    date: str
    source: str


def spot_price(name: str, region: str) -> SpotPrice | None:
    """Spot $/h of `name` in `region` from the catalog's `spot` section, or None when it holds no figure there."""
    spot = _prices_doc().get("spot", {})
    by_zone = spot.get("regions", {}).get(region, {}).get(name)
    if not by_zone:
        return None
    figures = [float(v) for v in by_zone.values()]
    return SpotPrice(
        sum(figures) / len(figures), min(figures), max(figures), len(figures), region, spot["date"], spot["source"]
    )


@dataclass(frozen=True)
class ListPrice:
    """A list price other than a GPU instance's: value per unit, with its date, source and whether it was confirmed."""

    key: str
    usd: float
    unit: str
    region: str
    date: str
    source: str
    verified: bool
    usage_based: str = ""  # what the price leaves to usage (requests, throughput), where the entry says


@dataclass(frozen=True)
class Service:
    """A list-priced line of an AWS site's bill besides its instances: the key a price is stored and overridden
    under, what it is, its unit, and the Price List offer `catalog refresh --prices` reads it from."""

    key: str
    what: str
    unit: str
    offer: str | None  # the Price List offer (service code) `catalog refresh --prices` reads it from; None: not read


FSX_LUSTRE = "fsx-lustre-persistent-2"
# The FSx for Lustre PERSISTENT_2 tiers (MB/s per TiB) a tier may set: FsxLustreTier.throughput_per_tib's values
# (tests/catalog/test_prices.py ties the two; the spec imports the catalog, so it cannot be read from here).
FSX_LUSTRE_TIERS: tuple[int, ...] = (125, 250, 500, 1000)


def fsx_lustre_key(throughput_per_tib: int) -> str:
    """The price key of an FSx for Lustre PERSISTENT_2 tier, e.g. `fsx-lustre-persistent-2-1000`."""
    return f"{FSX_LUSTRE}-{throughput_per_tib}"


SERVICES: tuple[Service, ...] = (
    Service("eks-cluster", "EKS control plane", "cluster-hour", "AmazonEKS"),
    Service("eks-cluster-extended", "EKS control plane in extended support", "cluster-hour", None),
    Service("nat-gateway", "NAT gateways", "gateway-hour", "AmazonEC2"),
    Service("nat-gateway-data", "NAT data processing", "GB", "AmazonEC2"),
    Service("public-ipv4", "public IPv4 addresses", "address-hour", None),
    Service("ebs-gp3", "EBS gp3 root volumes", "GB-month", "AmazonEC2"),
    Service("data-transfer-out", "data transfer out to the internet", "GB", "AWSDataTransfer"),
    Service("efs-standard", "EFS Standard storage", "GB-month", "AmazonEFS"),
    Service("s3-standard", "S3 Standard storage", "GB-month", "AmazonS3"),
    *(
        Service(fsx_lustre_key(t), f"FSx for Lustre PERSISTENT_2 at {t} MB/s/TiB", "GB-month", None)
        for t in FSX_LUSTRE_TIERS
    ),
    Service("aws-budget", "AWS Budgets cost budget without actions", "budget-day", None),
    Service("kms-key", "KMS customer managed keys", "key-month", None),
    Service("vpn-connection", "Site-to-Site VPN connection", "connection-hour", None),
)
SERVICE_KEYS: tuple[str, ...] = tuple(s.key for s in SERVICES)
# A region-independent list price (one figure for every region) is stored once, under this name.
ALL_REGIONS = "all-regions"


def service(key: str) -> Service:
    try:
        return next(s for s in SERVICES if s.key == key)
    except StopIteration:
        raise CatalogError(f"no priced service {key!r}; known: {', '.join(SERVICE_KEYS)}") from None


def _entry(entry: dict[str, Any], key: str, region: str, unit: str | None = None) -> ListPrice:
    return ListPrice(
        key=key,
        usd=float(entry["usd"]),
        unit=unit or str(entry["unit"]),
        region=region,
        date=str(entry["date"]),
        source=str(entry["source"]),
        verified=bool(entry.get("verified", False)),
        usage_based=str(entry.get("usage_based", "")),
    )


def _list_price(section: str, key: str, region: str, unit: str | None = None) -> ListPrice | None:
    """The section's entry for `key` in `region`, else its region-independent entry (priced for `region`)."""
    entries = _prices_doc().get(section, {})
    entry = entries.get(region, {}).get(key) or entries.get(ALL_REGIONS, {}).get(key)
    return None if entry is None else _entry(entry, key, region, unit)


def service_price(key: str, region: str) -> ListPrice | None:
    """A bill or storage line's list price in `region` (a `SERVICES` key), or None when the catalog has none.

    Services live in the `services` section, EFS and S3 in `storage`, FSx for Lustre tiers in
    `storage.<region>.fsx-lustre-persistent-2.by_throughput_per_tib`."""
    if key.startswith(FSX_LUSTRE + "-"):
        tiers = _prices_doc().get("storage", {}).get(region, {}).get(FSX_LUSTRE, {})
        tier = tiers.get("by_throughput_per_tib", {}).get(key.removeprefix(FSX_LUSTRE + "-"))
        return None if tier is None else _entry(tier, key, region, service(key).unit)
    section = "storage" if key in ("efs-standard", "s3-standard") else "services"
    return _list_price(section, key, region, service(key).unit)


def cpu_instance_price(name: str, region: str) -> ListPrice | None:
    """On-demand $/h of a CPU instance type (system pools) in `region`, or None."""
    return _list_price("cpu_instances", name, region)


@cache
def _capacity_block_doc() -> dict[str, Any]:
    return json.loads(CAPACITY_BLOCK_PRICES_FILE.read_text())


def capacity_block_price(name: str, region: str) -> ListPrice | None:
    """The effective $/h of one `name` instance in an EC2 Capacity Block in `region` (the reservation fee per hour
    of the block), or None when the catalog has no capacity-block rate for it there."""
    doc = _capacity_block_doc()
    value = doc["regions"].get(region, {}).get(name)
    if value is None:
        return None
    source = doc["source"]
    return ListPrice(
        key=name,
        usd=float(value),
        unit="node-hour",
        region=region,
        date=str(source["date"]),
        source=str(source["source"]),
        verified=bool(source["verified"]),
    )


def price_table() -> dict[str, Any]:
    """The whole price document (instances and storage), for tools that need more than one figure."""
    return _prices_doc()
