"""The acceptance suite of an estate: which checks run where, with which pass mark and why. Pure data.

Derived from the spec alone (sites, pools, fabrics, storage tiers, tenants), so `gpufleet verify --plan` shows
exactly what a run would do without touching a cluster. What a check needs at run time (nodes present, a bound
claim) is decided by the runner, which reports a check it cannot run as skipped with the reason.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from ipaddress import IPv4Address, IPv6Address

from gpufleet.review.reality.journeys import canonical
from gpufleet.verify import thresholds
from gpufleet.verify.thresholds import Threshold
from model import conventions, dispatch, kinds, queues
from model.rdma import sriov_network, uses_sriov
from model.spec import (
    AwsNodePool,
    EfaFabric,
    EfsTier,
    EstateSpec,
    FsxLustreTier,
    NfsTier,
    NodePool,
    ParallelFsTier,
    Site,
    Tenant,
)

Pool = NodePool
SharedTier = FsxLustreTier | ParallelFsTier | EfsTier | NfsTier


class Category(StrEnum):
    fabric = "fabric"
    gpus = "gpus"
    storage = "storage"
    tenancy = "tenancy"
    telemetry = "telemetry"
    degraded = "degraded"


MANDATORY = frozenset({Category.fabric, Category.gpus, Category.storage, Category.tenancy, Category.telemetry})
DEFAULT_CATEGORIES = tuple(c for c in Category if c in MANDATORY)


class Kind(StrEnum):
    nccl_multi = "nccl-multi-node"
    nccl_single = "nccl-single-node"
    dcgm_diag = "dcgm-diag"
    fio = "fio"
    cross_tenant = "cross-tenant-traffic"
    egress = "egress-outside-list"
    gpu_quota = "gpu-over-quota"
    dedicated_nodes = "untrusted-on-dedicated-nodes"
    queue_held = "no-queue-held-by-kueue"
    exporter = "dcgm-exporter"
    drain = "drain-and-readmit"
    nvlink_domains = "nvlink-domains"


@dataclass(frozen=True)
class Check:
    """One acceptance check. `threshold` None: measured and shown, not judged (the reason says why)."""

    id: str
    category: Category
    kind: Kind
    site: str
    title: str
    threshold: Threshold | None = None
    pool: str | None = None
    fabric: str | None = None
    tier: str | None = None
    tenant: str | None = None
    other_tenant: str | None = None
    criterion: str = ""  # the pass condition of a check judged without a numeric threshold
    no_threshold_reason: str = ""  # why a measured figure is shown but not judged
    skip_reason: str = ""  # known at plan time: the check cannot run on this estate
    namespace: str | None = None  # the tenant namespace the probe runs in (None: the run's own namespace)
    queue: str | None = None  # the LocalQueue Kueue admits it through (named after the tenant: model.queues)
    journey: str = ""  # the canonical journey the probe walks, in its own words
    manager: str | None = None  # a hybrid estate's MultiKueue manager the probe is submitted to, for this worker

    @property
    def mandatory(self) -> bool:
        return self.category in MANDATORY

    @property
    def judged(self) -> bool:
        return self.threshold is not None or bool(self.criterion)


# Addresses a tenant's egress is never judged by (ipaddress's RFC 6890 properties): the pod itself, no host, a
# group, or a link the packet never leaves.
_NOT_A_TARGET = (
    ("a loopback", "is_loopback"), ("an unspecified", "is_unspecified"), ("a multicast", "is_multicast"),
    ("a link-local", "is_link_local"),
)  # fmt: skip


def egress_target(probe: str) -> tuple[IPv4Address | IPv6Address, int]:
    """`--egress-probe IP:PORT` as an address and a TCP port (1-65535); ValueError saying what is wrong.

    An IPv6 address goes in brackets, `[addr]:port` (RFC 3986 section 3.2.2): unbracketed, `::1:443` is both the
    address ::1:443 and ::1 with port 443."""
    if probe.startswith("["):
        host, sep, port = probe[1:].partition("]:")
        if not sep:
            raise ValueError(f"{probe!r}: expected [IPv6 address]:PORT")
    else:
        host, _, port = probe.rpartition(":")
        if ":" in host:
            raise ValueError(
                f"{probe!r}: an IPv6 address goes in brackets, [addr]:PORT (RFC 3986 section 3.2.2); unbracketed, "
                "the last group could be the port or part of the address"
            )
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(f"{host!r} is not an IP address (IP:PORT, e.g. 1.1.1.1:443)") from None
    if probe.startswith("[") and address.version == 4:
        raise ValueError(f"{probe!r}: brackets hold an IPv6 address; write an IPv4 one as {host}:PORT")
    if isinstance(address, IPv6Address) and address.scope_id is not None:  # fe80::1%eth0 (RFC 4007 section 11)
        raise ValueError(f"{probe!r}: a zone (%{address.scope_id[:20]}) names an interface of one host, not a target")
    if isinstance(address, IPv6Address) and address.ipv4_mapped is not None:  # ::ffff:a.b.c.d (RFC 4291 2.5.5.2)
        raise ValueError(f"{probe!r}: an IPv4-mapped address; write it as {address.ipv4_mapped}:PORT")
    kind = next((k for k, is_ in _NOT_A_TARGET if getattr(address, is_)), None)
    if kind is not None:
        raise ValueError(f"{probe!r}: {kind} address reaches no egress; give an address outside the cluster")
    if not (re.fullmatch(r"[1-9][0-9]{0,4}", port) and int(port) <= 65535):
        raise ValueError(f"{port!r} is not a TCP port (1-65535, no leading zero)")
    return address, int(port)


@dataclass(frozen=True)
class Options:
    categories: Sequence[Category] = DEFAULT_CATEGORIES
    pools: Sequence[str] = ()
    degraded: bool = False
    quarantine: bool = True  # taint nodes a probe failed on or a detector reports unhealthy
    dcgm_level: int = 2
    egress_probe: str = "1.1.1.1:443"

    def __post_init__(self) -> None:
        egress_target(self.egress_probe)  # refused before any check is derived or run


@dataclass(frozen=True)
class Suite:
    stack: str
    spec: EstateSpec
    options: Options
    checks: list[Check] = field(default_factory=list)

    def for_site(self, site: str) -> list[Check]:
        return [c for c in self.checks if c.site == site]


def _sharing_skip(pool: Pool) -> str:
    if pool.sharing.mode == "mig":
        return f"pool {pool.name} runs MIG slices: a pod cannot hold its whole GPUs, which DCGM diagnostics need"
    if pool.sharing.mode == "time-slicing":
        return f"pool {pool.name} time-slices its GPUs: a pod gets replicas, not whole GPUs"
    return ""


def _fabric_tenant(spec: EstateSpec, site: Site, pool: Pool) -> tuple[Tenant, str] | str:
    """The first tenant that may run a two-node fabric job on `pool`, with its canonical gang's title, or why none
    may: allowed on the pool (its ClusterQueue lists it), `rdma: true` (its namespace admits IPC_LOCK), quota for
    two whole nodes at once, and on an SR-IOV fabric a network in its namespace."""
    fabric = next(f for f in site.fabrics if f.name == pool.fabric)
    for tenant in canonical.allowed_tenants(spec, site, pool):
        gang = canonical.fabric_gang(spec, site, pool, tenant, "runs")
        if not tenant.rdma or gang.manifest["spec"]["parallelism"] < 2:
            continue
        if uses_sriov(fabric) and sriov_network(fabric, tenant.name) is None:
            continue
        return tenant, gang.title
    return f"no tenant may run fabric jobs on pool {pool.name} (one with quota there for two nodes, `rdma: true`" + (
        ", and an SR-IOV network of the fabric in its namespace)" if uses_sriov(fabric) else ")"
    )


def _node_tenant(spec: EstateSpec, site: Site, pool: Pool) -> Tenant | None:
    """The first tenant allowed on `pool` whose quota holds one whole node (every tenant may on a burst pool)."""
    per_node = spec.pool_gpus_per_node(pool.name)
    for tenant in canonical.allowed_tenants(spec, site, pool):
        if queues.is_burst(pool) or tenant.gpu_quota.get(pool.name, 0) + tenant.borrowing_limit >= per_node:
            return tenant
    return None


def fabric_checks(spec: EstateSpec, site: Site, pool: Pool) -> list[Check]:
    """NCCL all-reduce across two nodes of a pool on a fabric (judged), and on one node over NVLink (shown), each
    submitted as a tenant allowed on the pool submits its jobs: in its namespace, through its LocalQueue."""
    if pool.fabric is None:
        return []
    fabric = next(f for f in site.fabrics if f.name == pool.fabric)
    base = f"fabric/{site.name}/{pool.name}"
    skip = _sharing_skip(pool)
    threshold, why = thresholds.nccl_busbw_threshold(spec, pool)
    over = "EFA (aws-ofi-nccl)" if isinstance(fabric, EfaFabric) else f"{fabric.kind} (NCCL IB verbs)"
    picked = _fabric_tenant(spec, site, pool)
    multi_skip = skip or (
        "" if _max_nodes(spec, pool) >= 2 else f"pool {pool.name} has fewer than two nodes at max size"
    )
    multi_skip = multi_skip or (picked if isinstance(picked, str) else "")
    tenant, journey = picked if not isinstance(picked, str) else (None, "")
    single = tenant or _node_tenant(spec, site, pool)
    single_skip = skip or ("" if single else f"no tenant may run jobs on pool {pool.name} (no quota for one node)")
    return [
        Check(
            f"{base}/multi-node",
            Category.fabric,
            Kind.nccl_multi,
            site.name,
            f"NCCL all_reduce_perf across 2 nodes of pool {pool.name} over {over}, fabric {fabric.name}",
            threshold=threshold,
            pool=pool.name,
            fabric=fabric.name,
            tenant=tenant.name if tenant else None,
            no_threshold_reason=why,
            skip_reason=multi_skip,
            namespace=tenant.name if tenant else None,
            queue=tenant.name if tenant else None,
            journey=journey,
        ),
        Check(
            f"{base}/single-node",
            Category.fabric,
            Kind.nccl_single,
            site.name,
            f"NCCL all_reduce_perf on the GPUs of one node of pool {pool.name} (NVLink / PCIe)",
            pool=pool.name,
            fabric=fabric.name,
            tenant=single.name if single else None,
            no_threshold_reason="the catalog holds no NVLink bandwidth; shown for comparison with the multi-node run",
            skip_reason=single_skip,
            namespace=single.name if single else None,
            queue=single.name if single else None,
            journey=journey if single is tenant else "",
        ),
    ]


def nvlink_domain_checks(site: Site, pool: Pool) -> list[Check]:
    """Where the inventory puts a pool's servers in NVLink domains: that the fabric agrees, node by node."""
    if not any(s.nvlink_domain for s in kinds.of(site).selected_servers(pool.name)):
        return []
    return [
        Check(
            f"fabric/{site.name}/{pool.name}/nvlink-domains",
            Category.fabric,
            Kind.nvlink_domains,
            site.name,
            f"the nodes of pool {pool.name} form the NVLink domains the inventory names",
            pool=pool.name,
            criterion=f"every node carries {conventions.GPU_CLIQUE_LABEL}, and each inventory domain is one clique "
            "that no other domain shares",
        )
    ]


def via_manager(spec: EstateSpec, site: Site, checks: list[Check]) -> list[Check]:
    """On a hybrid estate, `checks` of a worker site submitted as the tenant submits: to its namespace and
    LocalQueue on the MultiKueue manager, which dispatches the Workload to a worker (model.dispatch)."""
    if spec.burst is None or site.name not in {w.name for w in dispatch.workers(spec)}:
        return checks
    name = spec.burst.manager.name
    return [replace(c, manager=name) if c.queue and c.namespace else c for c in checks]


def _max_nodes(spec: EstateSpec, pool: Pool) -> int:
    return kinds.of(spec.site_of_pool(pool.name)).pool_max_nodes(spec, pool.name)


def gpu_checks(site: Site, pool: Pool, level: int) -> list[Check]:
    return [
        Check(
            f"gpus/{site.name}/{pool.name}",
            Category.gpus,
            Kind.dcgm_diag,
            site.name,
            f"DCGM diagnostics (dcgmi diag -r {level}) on every node of pool {pool.name}; XID / ECC findings surfaced",
            pool=pool.name,
            criterion="DCGM's verdict: every test passes on every GPU (warnings with XID / ECC are failures)",
            skip_reason=_sharing_skip(pool),
        )
    ]


def storage_checks(site: Site) -> list[Check]:
    """fio read and write from a training node to each shared tier; shared-hot tiers judged per node."""
    training = [p for p in site.node_pools if p.role == "training" and not _burst_idle(p)]
    out: list[Check] = []
    for tier in site.storage:
        if not isinstance(tier, FsxLustreTier | ParallelFsTier | EfsTier | NfsTier):
            continue  # scratch is node-local, object tiers are not file systems
        hot = isinstance(tier, FsxLustreTier | ParallelFsTier)
        threshold = thresholds.storage_threshold(tier) if isinstance(tier, FsxLustreTier | ParallelFsTier) else None
        for pool in training:
            out.append(
                Check(
                    f"storage/{site.name}/{tier.name}/{pool.name}",
                    Category.storage,
                    Kind.fio,
                    site.name,
                    f"fio sequential read and write, 1 MiB blocks, direct I/O, from training pool {pool.name} "
                    f"to {tier.kind} tier {tier.name}",
                    threshold=threshold,
                    pool=pool.name,
                    tier=tier.name,
                    no_threshold_reason="" if hot else f"{tier.kind} is a shared-warm tier; no per-node need is set",
                )
            )
        if not training:
            out.append(
                Check(
                    f"storage/{site.name}/{tier.name}",
                    Category.storage,
                    Kind.fio,
                    site.name,
                    f"fio from training nodes to {tier.kind} tier {tier.name}",
                    tier=tier.name,
                    skip_reason=f"site {site.name} has no training pool with nodes",
                )
            )
    return out


def _burst_idle(pool: Pool) -> bool:
    return isinstance(pool, AwsNodePool) and pool.burst


def tenancy_checks(spec: EstateSpec, site: Site) -> list[Check]:
    tenants = queues.tenants_on_site(spec, site)
    out: list[Check] = []
    base = f"tenancy/{site.name}"
    if not tenants:
        return out
    trusted = [t for t in tenants if t.trust == "trusted"] or tenants
    first = trusted[0]
    others = [t for t in tenants if t.name != first.name]
    out.append(
        Check(
            f"{base}/cross-tenant",
            Category.tenancy,
            Kind.cross_tenant,
            site.name,
            "a pod of one tenant cannot reach another tenant's pod (the other tenant's own pod can: control)",
            tenant=first.name,
            other_tenant=others[0].name if others else None,
            criterion="connection refused or timed out from the first tenant, answered within the other tenant",
            skip_reason="" if others else f"site {site.name} has one tenant",
            namespace=first.name,
            queue=first.name,
        )
    )
    for t in tenants:
        out.append(
            Check(
                f"{base}/{t.name}/egress",
                Category.tenancy,
                Kind.egress,
                site.name,
                f"tenant {t.name} cannot reach an address outside its egress list (reachable from the verify "
                "namespace: control)",
                tenant=t.name,
                criterion="connection fails from the tenant and succeeds from the verify namespace",
                namespace=t.name,
                queue=t.name,
            )
        )
        out.append(
            Check(
                f"{base}/{t.name}/gpu-quota",
                Category.tenancy,
                Kind.gpu_quota,
                site.name,
                f"a pod of tenant {t.name} asking for one GPU more than its namespace quota is refused",
                tenant=t.name,
                criterion="the API server refuses the pod (403, exceeded quota); dry run, nothing is created",
                namespace=t.name,
            )
        )
        out.append(
            Check(
                f"{base}/{t.name}/queue",
                Category.tenancy,
                Kind.queue_held,
                site.name,
                f"a Job of tenant {t.name} without a queue name is suspended by Kueue and sent to its default queue",
                tenant=t.name,
                criterion="the admitted object (dry run) is suspended and labelled kueue.x-k8s.io/queue-name=default",
                namespace=t.name,
                queue=queues.DEFAULT_LOCAL_QUEUE,  # the probe names no queue: Kueue sends it here
            )
        )
        if t.trust == "untrusted":
            out.append(
                Check(
                    f"{base}/{t.name}/dedicated-nodes",
                    Category.tenancy,
                    Kind.dedicated_nodes,
                    site.name,
                    f"a pod of untrusted tenant {t.name} lands only on nodes dedicated to it",
                    tenant=t.name,
                    criterion=f"the pod's node carries the tenant label of {t.name}",
                    namespace=t.name,
                    queue=t.name,
                )
            )
    return out


def telemetry_checks(site: Site) -> list[Check]:
    skip = "" if site.kubernetes.gpu_stack == "gpu-operator" else "gpu_stack device-plugin installs no DCGM exporter"
    return [
        Check(
            f"telemetry/{site.name}",
            Category.telemetry,
            Kind.exporter,
            site.name,
            "the DCGM exporter serves metrics for every GPU of every GPU node",
            criterion="one exporter per GPU node answers /metrics with a series for each of the node's GPUs",
            skip_reason=skip,
        )
    ]


def degraded_checks(site: Site, pools: Iterable[Pool]) -> list[Check]:
    out = []
    for pool in pools:
        if _burst_idle(pool):
            continue
        out.append(
            Check(
                f"degraded/{site.name}/{pool.name}",
                Category.degraded,
                Kind.drain,
                site.name,
                f"quarantine and drain one node of pool {pool.name} while a 2-pod gang job runs; its pods come "
                "back on other nodes; the node is returned after",
                pool=pool.name,
                criterion="both pods run again, none on the quarantined node, within the timeout; the node is "
                "schedulable again after its return",
            )
        )
        break  # one pool per site is enough to show the behaviour
    return out


def derive(spec: EstateSpec, stack: str, options: Options) -> Suite:
    """Every check of the estate for the selected categories and pools."""
    wanted = set(options.categories) | ({Category.degraded} if options.degraded else set())
    checks: list[Check] = []
    for site in spec.sites:
        pools = [p for p in site.node_pools if not options.pools or p.name in options.pools]
        if Category.fabric in wanted:
            for p in pools:
                checks += via_manager(spec, site, fabric_checks(spec, site, p)) + nvlink_domain_checks(site, p)
        if Category.gpus in wanted:
            for p in pools:
                checks += gpu_checks(site, p, options.dcgm_level)
        if Category.storage in wanted:
            checks += [c for c in storage_checks(site) if not options.pools or c.pool in options.pools]
        if Category.tenancy in wanted and not options.pools:
            checks += tenancy_checks(spec, site)
        if Category.telemetry in wanted:
            checks += telemetry_checks(site)
        if Category.degraded in wanted:
            checks += degraded_checks(site, pools)
    return Suite(stack, spec, options, checks)


def not_automated() -> list[str]:
    """What the suite does not test, for the report."""
    return [
        "resilience beyond one drained node: node replacement, autoscaler scale-up from zero, AZ or leaf-switch loss",
        "handover: on-call runbooks, alert routing and dashboards are not exercised",
        "burst windows (hybrid): `gpufleet burst open` and MultiKueue dispatch to the cloud worker",
        "object tiers (S3 / on-prem S3) and node-local scratch are not measured",
        "InfiniBand partition isolation: whether a tenant's partition key keeps other tenants' pods out",
    ]
