"""Cross-field rules of an aws site: its fabrics, VPC, region, prices and node pools.

model.kinds.aws runs them in the phases of the estate's rules (model.rules.estate).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

# The spec imports the kinds, which import this module: project modules by module, so any may be imported first.
from model import catalog, clock, dra, pricing, subnets, versions
from model.conventions import EKS_RESERVED_LABEL_PREFIXES, eks_rejects_label
from model.rules import storage
from model.spec.access import PrivateInterconnect
from model.spec.aws import AwsNodePool, EfaFabric, FsxLustreTier, ServicePriceOverride
from model.spec.baremetal import InfinibandFabric, RoceFabric
from model.spec.base import Problem
from model.spec.sites import AWS_STORAGE, AwsSite


def site_problems(path: str, s: AwsSite) -> Iterator[Problem]:
    yield from storage.storage_kinds(path, s.kind, [t.kind for t in s.storage], AWS_STORAGE)
    for j, f in enumerate(s.fabrics):
        fpath = f"{path}.fabrics[{j}]"
        if not isinstance(f, EfaFabric):
            yield Problem(f"{fpath}.kind", f"an aws site's fabrics must be efa, not {f.kind}")
            continue
        if f.availability_zone not in s.availability_zones and not subnets.local_zone(s.region, f.availability_zone):
            yield Problem(
                f"{fpath}.availability_zone",
                f"{f.availability_zone} is not one of the site's availability_zones "
                f"({', '.join(s.availability_zones)})",
            )
        yield from _efa_subnet(fpath, s, f)
    yield from subnets.vpc_room(path, s)
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
        elif az.startswith(f"{s.region}-"):
            yield Problem(f"{path}.availability_zones[{j}]", _zone_refusal(az))
    yield from _ami_releases(path, s)
    yield from _support_type(path, s)


def _zone_refusal(az: str) -> str:
    """Why a zone outside the region's Availability Zones cannot be a site zone: every site zone gets a private
    subnet that the EKS control plane uses, and EKS (user guide, network-reqs: "The subnets can't reside in AWS
    Outposts, AWS Wavelength, or an AWS Local Zone"; local-zones: the control plane "can't run in the Local Zone")
    refuses it."""
    where = "a Local Zone" if "-wl" not in az else "a Wavelength Zone"
    return (
        f"{az} is {where}: every site zone holds the EKS cluster's subnets, which can't reside in one "
        "(https://docs.aws.amazon.com/eks/latest/userguide/network-reqs.html). Name the Local Zone only as an EFA "
        "fabric's availability_zone: gpufleet creates the fabric's subnet there for its pools (docs/rack-scale.md)"
    )


def _support_type(path: str, s: AwsSite) -> Iterator[Problem]:
    """STANDARD only while the minor is in standard support: "You cannot disable extended support once your cluster
    has entered it" (EKS user guide, disable-extended-support), so EKS refuses the upgrade policy `up` would set."""
    pinned = versions.eks_minor(s.cluster.version)
    if s.cluster.adopt_name or s.cluster.support_type != "STANDARD" or pinned is None:
        return
    if clock.now().date() >= pinned.end_of_standard_support:
        yield Problem(
            f"{path}.cluster.support_type",
            f"Kubernetes {s.cluster.version} left standard support on {pinned.end_of_standard_support}; EKS cannot "
            "set support_type STANDARD on a cluster in extended support (disable-extended-support): bump "
            "cluster.version one minor first, or keep EXTENDED",
        )


def _ami_releases(path: str, s: AwsSite) -> Iterator[Problem]:
    """A pool's own AMI release serves the cluster's minor: a managed node group's releaseVersion names the
    Kubernetes version its kubelet runs (EKS API reference, CreateNodegroup releaseVersion)."""
    for j, pool in enumerate(s.node_pools):
        if pool.ami_release and versions.kubernetes_minor(pool.ami_release) != s.cluster.version:
            yield Problem(
                f"{path}.node_pools[{j}].ami_release",
                f"{pool.ami_release} is an AMI release for Kubernetes {versions.kubernetes_minor(pool.ami_release)}, "
                f"not the cluster's {s.cluster.version}; name a release for {s.cluster.version} or leave it unset",
            )


def _site_prices(path: str, s: AwsSite) -> Iterator[Problem]:
    """Each `prices` entry prices something the site bills, once; and everything the site bills has a price.

    A line neither the stack nor the catalog prices in the site's region is refused where the stack asks for it,
    naming how to price it: an unpriced line would leave the estate's cost and budget unknowable.
    """
    used: dict[str, str] = {}
    for n in pricing.price_needs(s):
        used.setdefault(n.key, n.kind)  # a pool's type is a gpu-instance need before its spot or block need
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


def unpriced_problems(path: str, s: AwsSite) -> Iterator[Problem]:
    """Every line the site bills that neither its `prices` nor the catalog prices in its region.

    gpufleet's commands refuse these (model.load.parse_estate), so a review never shows a cost or budget it cannot
    know. The Pulumi program does not: a missing price never stops an `up` of the infrastructure itself.
    """
    if catalog.unknown_region(s.region) is None:
        for need in pricing.unpriced_needs(s):
            yield Problem(f"{path}.{need.path}", _unpriced(s, need))


def _unpriced(s: AwsSite, need: pricing.PriceNeed) -> str:
    """Why `need` is refused in the site's region and the two ways to price it."""
    region = s.region
    if need.kind == "capacity-block":
        return pricing.capacity_block_unpriced(s, need)
    if need.kind == "spot":
        return pricing.spot_unpriced(s, need)
    entry = pricing.prices_entry(need)
    offer = catalog.service(need.key).offer if need.kind == "service" else "AmazonEC2"
    fix = f"add {entry} to this site's `prices`"
    if offer is not None:
        fix += (
            f", or run `gpufleet catalog refresh --prices -r {region} --from FILE` with AWS's {offer} Price List "
            f"offer file for {region}"
        )
    return f"{need.what} ({need.key}) has no {region} price: the catalog holds none; {fix}"


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


def pool_problems(path: str, s: AwsSite) -> Iterator[Problem]:
    fabrics = {f.name: f for f in s.fabrics}
    for j, p in enumerate(s.node_pools):
        fabric = fabrics.get(p.fabric) if p.fabric else None
        resolves = p.fabric is None or fabric is not None
        yield from _aws_pool(f"{path}.node_pools[{j}]", s, p, fabric, placement=resolves)
        yield from _reservation_fit(f"{path}.node_pools[{j}]", s, p, fabric)
    for j, t in enumerate(s.storage):
        if isinstance(t, FsxLustreTier) and not isinstance(fabrics.get(t.fabric), EfaFabric):
            yield Problem(f"{path}.storage[{j}].fabric", f"{t.fabric} is not an efa fabric of site {s.name}")


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
    yield from _ultraserver(path, s, p)
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
    if p.renamed_from is not None and p.renamed_from in {q.name for q in s.node_pools}:
        yield Problem(
            f"{path}.renamed_from",
            f"{p.renamed_from} is a pool of site {s.name} now; renamed_from names the pool's old name, which no "
            "pool of the site may still have (both would claim one node group)",
        )
    if p.renamed_from is not None and p.burst:
        # A burst node group is named after its pool (model/kinds/aws.py burst_node_group_name) and an EKS node
        # group's name cannot change (EKS API reference: UpdateNodegroupConfig and UpdateNodegroupVersion take
        # none), so the alias would not keep it: `up` would replace the group under the new name.
        yield Problem(
            f"{path}.renamed_from",
            f"pool {p.name} is a burst pool, whose node group is named after the pool and cannot be renamed in "
            "place: a rename replaces it. Rename it while no window is open and drop renamed_from (the old group "
            "is deleted, an idle one is created under the new name)",
        )
    if placement and p.capacity.type in ("capacity-reservation", "capacity-block") and az is None:
        yield Problem(
            f"{path}.availability_zone",
            f"pool {p.name} runs on {p.capacity.type} {p.capacity.reservation}, which lives in one AZ; set "
            "availability_zone to the reservation's AZ or put the pool on a fabric in that AZ",
        )


# EKS user guide ml-eks-nvidia-ultraserver (awsdocs/amazon-eks-user-guide latest/ug/ml/ml-eks-nvidia-ultraserver.adoc
# at e0464053baeb13f4f102ceb426ff3df137afb7b0): p6e-gb200 comes only as UltraServers of 9 or 18 instances, only
# through Capacity Blocks, and needs DRA (ComputeDomains), which Karpenter and EKS Auto Mode do not support; gpufleet
# provisions managed node groups only, so those two never arise.
ULTRASERVER_SIZES = (9, 18)


def _ultraserver(path: str, s: AwsSite, p: AwsNodePool) -> Iterator[Problem]:
    """A Capacity-Block-only type runs on a block; a rack-scale pool grows by whole UltraServers and its cluster
    serves resource.k8s.io/v1, which NVIDIA's DRA driver needs for ComputeDomains."""
    if p.instance.capacity_block_only and p.capacity.type != "capacity-block":
        yield Problem(
            f"{path}.capacity.type",
            f"{p.instance_type} is sold only through EC2 Capacity Blocks (as UltraServers; EKS user guide, "
            "ml-eks-nvidia-ultraserver); set capacity.type: capacity-block with the block's reservation_id",
        )
    if not dra.rack_scale(p):
        return
    if all(p.scaling.max % n for n in ULTRASERVER_SIZES):
        yield Problem(
            f"{path}.scaling.max",
            f"pool {p.name}'s {p.instance_type} nodes come in whole UltraServers of "
            f"{' or '.join(map(str, ULTRASERVER_SIZES))} instances; {p.scaling.max} is not a sum of whole UltraServers",
        )
    if dra.kubernetes_too_old(s.cluster.version):
        yield Problem(
            f"{path.rsplit('.node_pools', 1)[0]}.cluster.version",
            f"pool {p.name} is rack-scale ({dra.domain_gpus(p)}-GPU NVLink domain): its pods get IMEX "
            f"channels from NVIDIA's DRA driver, whose objects are {dra.RESOURCE_API}, served from Kubernetes "
            f"{'.'.join(map(str, dra.MIN_KUBERNETES))}; set version {'.'.join(map(str, dra.MIN_KUBERNETES))} or later",
        )


def _reservation_fit(
    path: str, s: AwsSite, p: AwsNodePool, fabric: EfaFabric | InfinibandFabric | RoceFabric | None
) -> Iterator[Problem]:
    """A pool fits the reservation it runs in: no more nodes than the reservation holds (with every other pool of
    the site on it), and the reservation's AZ. Instances beyond the count or from a subnet in another AZ do not
    launch into it (EC2 user guide, capacity-blocks-launch: an instance "can't launch in a subnet in a different
    Availability Zone from the Availability Zone where your Capacity Block is located")."""
    c = p.capacity
    if c.instances is not None:
        sharing = (
            [q for q in s.node_pools if q.capacity.reservation_id == c.reservation_id] if c.reservation_id else [p]
        )
        nodes = sum(q.reachable_nodes for q in sharing)
        if nodes > c.instances:
            also = f" (with {', '.join(q.name for q in sharing if q is not p)})" if len(sharing) > 1 else ""
            yield Problem(
                f"{path}.scaling.max",
                f"pool {p.name} may reach {nodes} nodes{also}, more than the {c.instances} instances {c.type} "
                f"{c.reservation} holds; lower scaling.max to {c.instances} or less, or reserve more",
            )
    az = fabric.availability_zone if isinstance(fabric, EfaFabric) else p.availability_zone
    if c.availability_zone is not None and az is not None and az != c.availability_zone:
        where = f"fabric {fabric.name}" if isinstance(fabric, EfaFabric) else "availability_zone"
        yield Problem(
            f"{path}.availability_zone" if where == "availability_zone" else f"{path}.fabric",
            f"pool {p.name} runs in {az} ({where}), but {c.type} {c.reservation} is in {c.availability_zone}: "
            "instances launch into a reservation only from a subnet in its AZ; move the pool there",
        )
    if c.type == "capacity-block" and isinstance(fabric, EfaFabric) and fabric.placement_group_name:
        # EC2 user guide, ec2-capacity-blocks, Considerations: Capacity Blocks don't support placement groups.
        yield Problem(
            f"{path}.fabric",
            f"capacity blocks take no placement group: pool {p.name} is on fabric {fabric.name}, whose "
            f"placement_group_name {fabric.placement_group_name} its instances cannot launch into; put the pool on a "
            "fabric without one",
        )
    if c.availability_zone is not None and c.availability_zone not in s.availability_zones:
        yield Problem(
            f"{path}.capacity.availability_zone",
            f"{c.availability_zone} is not one of site {s.name}'s AZs ({', '.join(s.availability_zones)})",
        )


def _aws_pool_zone(
    path: str, s: AwsSite, p: AwsNodePool, fabric: EfaFabric | InfinibandFabric | RoceFabric | None
) -> Iterator[Problem]:
    """The pool's one AZ: the EFA fabric's (the pool must not name another), else its own; and its type offered
    somewhere in the region."""
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
    # The catalog records offerings by AZ ID, and AZ names map to AZ IDs per account
    # (https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html): offline, only a type offered in
    # no AZ of the region is known to fail. Which AZ name offers it is for `gpufleet check --aws` to answer.
    zone_ids = catalog.offered_zone_ids(p.instance_type, s.region)
    if zone_ids == []:
        yield Problem(
            f"{path}.instance_type",
            f"{p.instance_type} is offered in no AZ of {s.region} (the catalog's EC2 offerings by AZ ID: "
            f"{catalog.offerings_source(s.region)}); pick another instance type or region, or, if AWS offers it "
            f"there now, record the region again with `gpufleet catalog refresh -r {s.region}` (AWS credentials)",
        )


def interconnect_problems(path: str, s: AwsSite, onprem: list[str]) -> Iterator[Problem]:
    """The interconnect names an on-prem site (`onprem`), fits how the VPC is built, and routes no range that
    overlaps the VPC."""
    ic = s.interconnect
    assert ic is not None
    if ic.site not in onprem:
        yield Problem(
            f"{path}.site", f"{ic.site} is not a baremetal site of the estate ({', '.join(onprem) or 'none'})"
        )
    adopted = s.vpc.vpc_id is not None
    if ic.kind in ("vpn", "transit-gateway") and adopted:
        yield Problem(
            f"{path}.kind",
            f"site {s.name} adopts VPC {s.vpc.vpc_id}, whose route tables gpufleet does not manage; a {ic.kind} "
            "interconnect needs a VPC the stack creates (use kind existing for a VPC already routed to on-prem)",
        )
    if ic.kind == "existing" and not adopted:
        yield Problem(
            f"{path}.kind",
            f"site {s.name} creates its VPC, which nothing routes to on-prem yet; connect it with vpn or "
            "transit-gateway (existing is for an adopted VPC already routed)",
        )
    if isinstance(ic, PrivateInterconnect) and s.vpc.cidr and not adopted:
        vpc = ipaddress.ip_network(s.vpc.cidr, strict=False)
        clash = [c for c, n in zip(ic.onprem_cidrs, subnets.networks(ic.onprem_cidrs), strict=True) if n.overlaps(vpc)]
        if clash:
            yield Problem(
                f"{path}.onprem_cidrs",
                f"{', '.join(clash)} overlaps the VPC of site {s.name} ({s.vpc.cidr}); routed ranges must not overlap",
            )
