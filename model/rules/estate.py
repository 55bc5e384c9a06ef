"""Cross-field rules of the estate: plain functions that yield every problem they find.

Each rule yields `Problem(path, message)` with the YAML path relative to the estate value and a message that
names the field and says what is allowed. A rule judges only what its preconditions allow: a pool whose fabric
does not resolve is not also checked against that fabric's AZ, a bare-metal pool that selects no server has no
GPU model to check MIG against, and so on; the unmet precondition is reported once, by the rule that owns it.
Lookups by name need unique names, so `estate_problems` runs the other rules only when names are unique.
"""

from __future__ import annotations

import ipaddress
from collections import Counter
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, assert_never

from model import catalog
from model.cni import network_policy_problems
from model.conventions import EKS_RESERVED_LABEL_PREFIXES, eks_rejects_label
from model.pricing import PriceNeed, capacity_block_unpriced, price_needs, prices_entry, unpriced_needs
from model.reach import access_problems
from model.rules.baremetal import baremetal_inventory, gpudirect_rdma_declared
from model.rules.burst import burst_problems
from model.rules.sharing import (
    enforcement_overrides_effective,
    pool_sharing_problems,
    shared_pool_quotas,
)
from model.spec.aws import AwsNodePool, EfaFabric, FsxLustreTier, ServicePriceOverride
from model.spec.baremetal import BaremetalNodePool, InfinibandFabric, RoceFabric
from model.spec.base import Problem
from model.spec.pools import PoolBase
from model.spec.sites import (
    AWS_STORAGE,
    BAREMETAL_STORAGE,
    SHARED_FILE_SYSTEM_KINDS,
    AwsSite,
    BaremetalSite,
)
from model.subnets import vpc_room
from model.tenant_s3 import grant_problems

if TYPE_CHECKING:
    from model.spec import EstateSpec

Rule = Callable[["EstateSpec"], Iterator[Problem]]


def estate_problems(spec: EstateSpec) -> list[Problem]:
    """Every cross-field problem of the estate, in rule order."""
    names = list(names_unique(spec))
    if names:
        return names
    return [problem for rule in RULES for problem in rule(spec)]


# --------------------------------------------------------------------------------------------------- names


def names_unique(spec: EstateSpec) -> Iterator[Problem]:
    def dupes(kind: str, path: str, names: list[str]) -> Iterator[Problem]:
        d = sorted(n for n, c in Counter(names).items() if c > 1)
        if d:
            yield Problem(path, f"{kind} names must be unique; duplicated: {', '.join(d)}")

    yield from dupes("site", "sites", [s.name for s in spec.sites])
    yield from dupes("node pool", "sites", [p.name for s in spec.sites for p in s.node_pools])
    yield from dupes("tenant", "tenants", [t.name for t in spec.tenants])
    for i, s in enumerate(spec.sites):
        yield from dupes("fabric", f"sites[{i}].fabrics", [f.name for f in s.fabrics])
        yield from dupes("storage tier", f"sites[{i}].storage", [t.name for t in s.storage])
        if isinstance(s, BaremetalSite):
            yield from dupes("server", f"sites[{i}].inventory", [x.hostname for x in s.inventory])


# --------------------------------------------------------------------------------------------------- sites


def sites_consistent(spec: EstateSpec) -> Iterator[Problem]:
    for i, s in enumerate(spec.sites):
        match s:
            case AwsSite():
                yield from _aws_site(f"sites[{i}]", s)
            case BaremetalSite():
                yield from _baremetal_site(f"sites[{i}]", s)
            case _:
                assert_never(s)


def _storage_kinds(path: str, kind: str, tiers: list[str], allowed: frozenset[str]) -> Iterator[Problem]:
    for j, tier_kind in enumerate(tiers):
        if tier_kind not in allowed:
            yield Problem(
                f"{path}.storage[{j}].kind",
                f"a {kind} site cannot have a {tier_kind} tier; allowed: {', '.join(sorted(allowed))}",
            )


def _aws_site(path: str, s: AwsSite) -> Iterator[Problem]:
    yield from _storage_kinds(path, s.kind, [t.kind for t in s.storage], AWS_STORAGE)
    for j, f in enumerate(s.fabrics):
        fpath = f"{path}.fabrics[{j}]"
        if not isinstance(f, EfaFabric):
            yield Problem(f"{fpath}.kind", f"an aws site's fabrics must be efa, not {f.kind}")
            continue
        if f.availability_zone not in s.availability_zones:
            yield Problem(
                f"{fpath}.availability_zone",
                f"{f.availability_zone} is not one of the site's availability_zones "
                f"({', '.join(s.availability_zones)})",
            )
        yield from _efa_subnet(fpath, s, f)
    yield from vpc_room(path, s)
    explicit = "driver_managed_by" in s.kubernetes.model_fields_set
    if explicit and s.kubernetes.driver_managed_by == "operator":
        yield Problem(
            f"{path}.kubernetes.driver_managed_by",
            "an aws site's EKS NVIDIA AMIs ship the driver; the GPU Operator cannot install it "
            "(leave it unset or set host)",
        )
    if (unknown := catalog.unknown_region(s.region)) is not None:
        yield Problem(f"{path}.region", unknown)
    yield from _site_prices(path, s)
    for j, az in enumerate(s.availability_zones):
        if not az.startswith(s.region):
            yield Problem(f"{path}.availability_zones[{j}]", f"{az} is not in region {s.region}")


def _site_prices(path: str, s: AwsSite) -> Iterator[Problem]:
    """Each `prices` entry prices something the site bills, once; and everything the site bills has a price.

    A line neither the stack nor the catalog prices in the site's region is refused where the stack asks for it,
    naming how to price it: an unpriced line would leave the estate's cost and budget unknowable.
    """
    used = {n.key: n.kind for n in price_needs(s)}
    seen: set[str] = set()
    for j, price in enumerate(s.prices):
        field, key = (
            ("service", price.service)
            if isinstance(price, ServicePriceOverride)
            else ("instance_type", price.instance_type)
        )
        kind = used.get(key)
        if key in seen:
            yield Problem(f"{path}.prices[{j}].{field}", f"{key} is priced twice on this site")
        elif field == "service" and kind != "service":
            what = ", ".join(sorted(k for k, kd in used.items() if kd == "service"))
            yield Problem(f"{path}.prices[{j}].service", f"nothing on this site bills {key}; it bills: {what}")
        elif field == "instance_type" and kind not in ("gpu-instance", "cpu-instance"):
            types = ", ".join(sorted(k for k, kd in used.items() if kd != "service"))
            yield Problem(
                f"{path}.prices[{j}].instance_type",
                f"no pool of this site runs {key}; priced types must be one of: {types}",
            )
        seen.add(key)


def unpriced_lines(spec: EstateSpec) -> Iterator[Problem]:
    """Every line an aws site bills that neither its `prices` nor the catalog prices in its region.

    gpufleet's commands refuse these (model.load.parse_estate), so a review never shows a cost or budget it cannot
    know. The Pulumi program does not: a missing price never stops an `up` of the infrastructure itself.
    """
    for i, s in enumerate(spec.sites):
        if isinstance(s, AwsSite) and catalog.unknown_region(s.region) is None:
            for need in unpriced_needs(s):
                yield Problem(f"sites[{i}].{need.path}", _unpriced(s, need))


def _unpriced(s: AwsSite, need: PriceNeed) -> str:
    """Why `need` is refused in the site's region and the two ways to price it."""
    region = s.region
    if need.kind == "capacity-block":
        return capacity_block_unpriced(s, need)
    entry = prices_entry(need)
    offer = catalog.service(need.key).offer if need.kind == "service" else "AmazonEC2"
    fix = f"add {entry} to this site's `prices`"
    if offer is not None:
        fix += (
            f", or run `gpufleet catalog refresh --prices -r {region} --from FILE` with AWS's {offer} Price List "
            f"offer file for {region}"
        )
    return f"{need.what} ({need.key}) has no {region} price: the catalog holds none; {fix}"


def _baremetal_site(path: str, s: BaremetalSite) -> Iterator[Problem]:
    yield from _storage_kinds(path, s.kind, [t.kind for t in s.storage], BAREMETAL_STORAGE)
    for j, f in enumerate(s.fabrics):
        if isinstance(f, EfaFabric):
            yield Problem(f"{path}.fabrics[{j}].kind", "a baremetal site's fabrics are infiniband or roce, not efa")
    if s.kubernetes.driver_managed_by == "operator":
        if s.kubernetes.gpu_stack == "device-plugin":
            yield Problem(
                f"{path}.kubernetes.driver_managed_by",
                "with gpu_stack device-plugin nothing installs the NVIDIA driver; set driver_managed_by: "
                "host (the host image brings it)",
            )
        for j, server in enumerate(s.inventory):
            if server.driver_version:
                yield Problem(
                    f"{path}.inventory[{j}].driver_version",
                    "the GPU Operator installs one driver per site (kubernetes.driver_version); a server "
                    "driver_version needs kubernetes.driver_managed_by: host",
                )


def _efa_subnet(path: str, s: AwsSite, f: EfaFabric) -> Iterator[Problem]:
    """An EFA fabric names its subnet the way its site's VPC is built: a CIDR inside a created VPC, an id in
    an adopted one."""
    if s.vpc.vpc_id:
        if not f.subnet_id:
            yield Problem(
                f"{path}.subnet_id", f"site {s.name} adopts VPC {s.vpc.vpc_id}; fabric {f.name} needs subnet_id"
            )
        return
    if not f.subnet_cidr:
        yield Problem(
            f"{path}.subnet_cidr", f"site {s.name} creates its VPC; fabric {f.name} needs subnet_cidr inside it"
        )
        return
    if f.subnet_id:
        yield Problem(f"{path}.subnet_id", "subnet_id is only for a site that adopts its VPC (vpc.vpc_id)")
        return
    try:
        net, vpc = ipaddress.ip_network(f.subnet_cidr), ipaddress.ip_network(s.vpc.cidr or "")
    except ValueError as err:
        yield Problem(f"{path}.subnet_cidr", f"{f.subnet_cidr} is not a valid CIDR: {err}")
        return
    if not (net.version == vpc.version and net.subnet_of(vpc)):  # type: ignore[arg-type]
        yield Problem(f"{path}.subnet_cidr", f"{f.subnet_cidr} is not inside the site's VPC {s.vpc.cidr}")


# --------------------------------------------------------------------------------------------------- pools


def pool_gpu_model_known(spec: EstateSpec, pool: PoolBase) -> catalog.GpuModel | None:
    """The pool's one GPU model, or None when a bare-metal pool selects no server or mixes models (reported by
    `pools_resolve`; rules that need the model skip such a pool)."""
    site = spec.site_of_pool(pool.name)
    servers = (
        spec.pool_servers(site, pool)
        if isinstance(site, BaremetalSite) and isinstance(pool, BaremetalNodePool)
        else None
    )
    if servers is not None and len({x.gpu_model for x in servers}) != 1:
        return None
    return spec.pool_gpu_model(pool.name)


def pools_resolve(spec: EstateSpec) -> Iterator[Problem]:
    tenants = {t.name for t in spec.tenants}
    for i, s in enumerate(spec.sites):
        fabrics = {f.name: f for f in s.fabrics}
        for j, p in enumerate(s.node_pools):
            path = f"sites[{i}].node_pools[{j}]"
            if p.fabric is not None and p.fabric not in fabrics:
                yield Problem(
                    f"{path}.fabric",
                    f"fabric {p.fabric} does not exist on site {s.name} (fabrics: {', '.join(fabrics) or 'none'})",
                )
            if p.dedicated_to is not None and p.dedicated_to not in tenants:
                yield Problem(f"{path}.dedicated_to", f"{p.dedicated_to} is not a tenant of the estate")
            yield from pool_sharing_problems(spec, path, p, pool_gpu_model_known(spec, p))
        match s:
            case AwsSite():
                yield from _aws_pools(f"sites[{i}]", s)
            case BaremetalSite():
                yield from _baremetal_pools(spec, f"sites[{i}]", s)
            case _:
                assert_never(s)


def _aws_pools(path: str, s: AwsSite) -> Iterator[Problem]:
    fabrics = {f.name: f for f in s.fabrics}
    for j, p in enumerate(s.node_pools):
        fabric = fabrics.get(p.fabric) if p.fabric else None
        resolves = p.fabric is None or fabric is not None
        yield from _aws_pool(f"{path}.node_pools[{j}]", s, p, fabric, placement=resolves)
    for j, t in enumerate(s.storage):
        if isinstance(t, FsxLustreTier) and not isinstance(fabrics.get(t.fabric), EfaFabric):
            yield Problem(f"{path}.storage[{j}].fabric", f"{t.fabric} is not an efa fabric of site {s.name}")


def _baremetal_pools(spec: EstateSpec, path: str, s: BaremetalSite) -> Iterator[Problem]:
    for j, p in enumerate(s.node_pools):
        servers = spec.pool_servers(s, p)
        if not servers:
            yield Problem(f"{path}.node_pools[{j}].selector", f"selects no server of site {s.name} ({p.selector})")
        models = sorted({x.gpu_model for x in servers})
        if len(models) > 1:
            yield Problem(f"{path}.node_pools[{j}].selector", f"pool {p.name} mixes GPU models {models}; split it")


def _aws_pool(
    path: str,
    s: AwsSite,
    p: AwsNodePool,
    fabric: EfaFabric | InfinibandFabric | RoceFabric | None,
    *,
    placement: bool,
) -> Iterator[Problem]:
    """`placement` is False when the pool names a fabric that does not exist: its AZ is then unknown."""
    az = fabric.availability_zone if isinstance(fabric, EfaFabric) else p.availability_zone
    if placement:
        yield from _aws_pool_zone(path, s, p, fabric)
    if p.capacity.type == "spot" and p.role == "training" and not p.capacity.checkpointing:
        yield Problem(
            f"{path}.capacity.checkpointing",
            f"pool {p.name} is a spot training pool; set checkpointing: true (spot reclaims lose "
            "uncheckpointed work) or buy on-demand, reserved or block capacity",
        )
    if p.capacity.type in ("spot", "capacity-block") and p.capacity.type not in p.instance.usage_classes:
        yield Problem(f"{path}.capacity.type", f"{p.instance_type} is not sold as {p.capacity.type}")
    for key in p.labels:
        if eks_rejects_label(key):
            yield Problem(
                f"{path}.labels",
                f"{key} uses a prefix EKS node groups reject ({', '.join(EKS_RESERVED_LABEL_PREFIXES)}); "
                "use your own prefix, e.g. example.com/",
            )
    if p.capacity.type == "capacity-block" and p.scaling.min > 0:
        yield Problem(
            f"{path}.scaling.min",
            f"pool {p.name} runs on a capacity block, and EKS scales its node group to 0 forty minutes before the "
            "block ends (EKS user guide, capacity-blocks-mng); set min 0 so no later `up` raises it into a finished "
            "block",
        )
    if placement and p.capacity.type in ("capacity-reservation", "capacity-block") and az is None:
        yield Problem(
            f"{path}.availability_zone",
            f"pool {p.name} runs on {p.capacity.type} {p.capacity.reservation_id}, which lives in one AZ; set "
            "availability_zone to the reservation's AZ or put the pool on a fabric in that AZ",
        )


def _aws_pool_zone(
    path: str, s: AwsSite, p: AwsNodePool, fabric: EfaFabric | InfinibandFabric | RoceFabric | None
) -> Iterator[Problem]:
    """The pool's one AZ: the EFA fabric's (the pool must not name another), else its own; offered there."""
    if isinstance(fabric, EfaFabric):
        if not p.instance.efa_supported:
            yield Problem(
                f"{path}.fabric",
                f"{p.instance_type} does not support EFA, so pool {p.name} cannot join fabric {fabric.name}; "
                "EFA and non-EFA pools must not share a fabric",
            )
        if p.availability_zone is not None and p.availability_zone != fabric.availability_zone:
            yield Problem(
                f"{path}.availability_zone",
                f"pool {p.name} is on EFA fabric {fabric.name} in {fabric.availability_zone}; an EFA pool "
                f"cannot span or move to another AZ ({p.availability_zone})",
            )
        az: str | None = fabric.availability_zone
    else:
        az = p.availability_zone
        if az is not None and az not in s.availability_zones:
            yield Problem(f"{path}.availability_zone", f"{az} is not one of the site's AZs")
    # A zone outside the site's AZs or region is reported where it is set (site, fabric or pool), not again here.
    if az is not None and az in s.availability_zones and az.startswith(s.region):
        zones = catalog.offered_zones(p.instance_type, s.region)
        if zones is not None and az not in zones:
            yield Problem(
                f"{path}.instance_type", f"{p.instance_type} is not offered in {az} (offered: {', '.join(zones)})"
            )


def mig_layouts_consistent(spec: EstateSpec) -> Iterator[Problem]:
    """Nodes select MIG layouts by the label value `all-<profile>`, one layout per name and site."""
    for i, s in enumerate(spec.sites):
        seen: dict[str, tuple[str, int]] = {}
        for j, p in enumerate(s.node_pools):
            model = pool_gpu_model_known(spec, p)
            if model is None or p.sharing.mode != "mig":
                continue
            profile = model.mig_profile(p.sharing.mig_profile or "")
            if profile is None:
                continue
            other_model, other_count = seen.setdefault(profile.name, (model.id, profile.per_gpu))
            if other_count != profile.per_gpu:
                yield Problem(
                    f"sites[{i}].node_pools[{j}].sharing.mig_profile",
                    f"MIG profile {profile.name} fits {profile.per_gpu} per {model.id} GPU but {other_count} per "
                    f"{other_model} GPU on another pool of site {s.name}; one site applies one `all-"
                    f"{profile.name}` layout, so pick a different profile for one of the pools",
                )


# ------------------------------------------------------------------------------------------------- tenants


def tenants_fit(spec: EstateSpec) -> Iterator[Problem]:
    pools = {p.name for _, p in spec.pools()}
    for i, t in enumerate(spec.tenants):
        for pool in t.gpu_quota:
            path = f"tenants[{i}].gpu_quota.{pool}"
            if pool not in pools:
                yield Problem(path, f"pool {pool} does not exist (pools: {', '.join(sorted(pools))})")
                continue
            p = spec.pool(pool)
            if p.dedicated_to is not None and p.dedicated_to != t.name:
                yield Problem(path, f"pool {pool} is dedicated to tenant {p.dedicated_to}")
            elif t.trust == "untrusted" and p.dedicated_to != t.name:
                yield Problem(
                    path,
                    f"tenant {t.name} is untrusted, so its quota must be on pools dedicated_to it; pool {pool} "
                    "is shared",
                )
            if t.trust == "untrusted" and p.sharing.mode == "time-slicing":
                yield Problem(
                    path,
                    f"tenant {t.name} is untrusted and pool {pool} uses time-slicing; untrusted tenants get "
                    "whole GPUs or MIG slices only",
                )
    for i, s in enumerate(spec.sites):
        for j, sp in enumerate(s.node_pools):
            if isinstance(sp, AwsNodePool) and sp.burst:
                continue  # burst pools are sized by burst windows, not by max
            if pool_gpu_model_known(spec, sp) is None:
                continue  # no servers (or mixed models): its capacity is not known
            total = sum(t.gpu_quota.get(sp.name, 0) for t in spec.tenants)
            units = spec.pool_gpu_units(sp.name)
            if total > units:
                gpus = spec.pool_gpu_capacity(sp.name)
                counted = {
                    "whole": "",
                    "mig": f" ({gpus} GPUs x {units // gpus if gpus else 0} {sp.sharing.mig_profile} MIG slices)",
                    "time-slicing": f" ({gpus} GPUs x {sp.sharing.replicas} time-slicing replicas)",
                }[sp.sharing.mode]
                yield Problem(
                    f"sites[{i}].node_pools[{j}]",
                    f"tenant GPU quotas on pool {sp.name} add up to {total}, but the pool offers only {units} "
                    f"GPUs at max size{counted}; lower the quotas or raise the pool's max",
                )


def tenant_file_systems(spec: EstateSpec) -> Iterator[Problem]:
    shared = sorted({t.name for s in spec.sites for t in s.storage if t.kind in SHARED_FILE_SYSTEM_KINDS})
    for i, t in enumerate(spec.tenants):
        for j, tier in enumerate(t.file_systems or []):
            if tier not in shared:
                yield Problem(
                    f"tenants[{i}].file_systems[{j}]",
                    f"{tier} is not a shared file-system tier (fsx-lustre, efs, nfs, parallel-fs) of any site; "
                    f"shared file systems: {', '.join(shared) or 'none'}",
                )


def tenant_s3_grants(spec: EstateSpec) -> Iterator[Problem]:
    """model.tenant_s3: declared S3 grants name the estate's buckets where the tenant has a namespace."""
    yield from grant_problems(spec)


# --------------------------------------------------------------------------------------------------- burst


def burst_policy(spec: EstateSpec) -> Iterator[Problem]:
    """model.rules.burst: a hybrid estate's burst site, manager and workers."""
    yield from burst_problems(spec)


# ------------------------------------------------------------------------------------- reachability, CNI


def apis_reachable(spec: EstateSpec) -> Iterator[Problem]:
    """model.reach: declarations resolve, and whoever must reach a site's API has a path to it."""
    yield from access_problems(spec)


def network_policies_enforced(spec: EstateSpec) -> Iterator[Problem]:
    """model.cni: a site hosting tenants runs a CNI that enforces their NetworkPolicies."""
    yield from network_policy_problems(spec)


RULES: tuple[Rule, ...] = (
    sites_consistent,
    apis_reachable,
    network_policies_enforced,
    pools_resolve,
    mig_layouts_consistent,
    tenants_fit,
    shared_pool_quotas,
    tenant_file_systems,
    tenant_s3_grants,
    burst_policy,
    baremetal_inventory,
    gpudirect_rdma_declared,
    enforcement_overrides_effective,
)
