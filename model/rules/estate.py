"""Cross-field rules of the estate: plain functions that yield every problem they find.

Each rule yields `Problem(path, message)` with the YAML path relative to the estate value and a message that
names the field and says what is allowed. A rule judges only what its preconditions allow: a pool whose fabric
does not resolve is not also checked against that fabric's AZ, a bare-metal pool that selects no server has no
GPU model to check MIG against, and so on; the unmet precondition is reported once, by the rule that owns it.
Lookups by name need unique names, so `estate_problems` runs the other rules only when names are unique.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from model import catalog, kinds
from model.cni import network_policy_problems
from model.reach import access_problems
from model.rules.burst import burst_problems, burst_references, spot_windows_unpriced
from model.rules.sharing import (
    enforcement_overrides_effective,
    pool_sharing_problems,
    shared_pool_quotas,
)
from model.spec.aws import AwsNodePool
from model.spec.baremetal import InfinibandFabric, RoceFabric
from model.spec.base import Problem
from model.spec.pools import PoolBase
from model.spec.sites import (
    SHARED_FILE_SYSTEM_KINDS,
)
from model.tenant_s3 import grant_problems

if TYPE_CHECKING:
    from model.spec import EstateSpec

Rule = Callable[["EstateSpec"], Iterator[Problem]]


def estate_problems(spec: EstateSpec) -> list[Problem]:
    """Every cross-field problem of the estate, in rule order."""
    # Names others are looked up by come first: a rule that looks up a missing one would fail, not report it.
    references = list(names_unique(spec)) or list(burst_references(spec))
    if references:
        return references
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
        yield from dupes("server", f"sites[{i}].inventory", [x.hostname for x in kinds.of(s).servers])


# --------------------------------------------------------------------------------------------------- sites


def sites_consistent(spec: EstateSpec) -> Iterator[Problem]:
    for i, s in enumerate(spec.sites):
        yield from kinds.of(s).site_problems(spec, f"sites[{i}]")


def unpriced_lines(spec: EstateSpec) -> Iterator[Problem]:
    """Every line a site bills that nothing prices (the kind's `unpriced_problems`).

    gpufleet's commands refuse these (model.load.parse_estate), so a review never shows a cost or budget it cannot
    know. The Pulumi program does not: a missing price never stops an `up` of the infrastructure itself.
    """
    for i, s in enumerate(spec.sites):
        yield from kinds.of(s).unpriced_problems(f"sites[{i}]")
    yield from spot_windows_unpriced(spec)


# --------------------------------------------------------------------------------------------------- pools


def pool_gpu_model_known(spec: EstateSpec, pool: PoolBase) -> catalog.GpuModel | None:
    """The pool's one GPU model, or None when a bare-metal pool selects no server or mixes models (reported by
    `pools_resolve`; rules that need the model skip such a pool)."""
    if len(kinds.of(spec.site_of_pool(pool.name)).pool_gpu_models(spec, pool.name)) != 1:
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
        yield from kinds.of(s).pool_problems(spec, f"sites[{i}]")


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


def site_inventories(spec: EstateSpec) -> Iterator[Problem]:
    """The inventory of every site that has one (the kind's `inventory_problems`)."""
    for i, s in enumerate(spec.sites):
        yield from kinds.of(s).inventory_problems(spec, f"sites[{i}]")


def gpudirect_rdma_declared(spec: EstateSpec) -> Iterator[Problem]:
    """A host-driver bare-metal site with pools on an RDMA fabric says how GPUDirect RDMA works (the operator,
    which installs no driver there, cannot load nvidia-peermem); nowhere else is the setting meaningful."""
    for i, s in enumerate(spec.sites):
        path = f"sites[{i}].kubernetes.gpudirect_rdma"
        k = s.kubernetes
        rdma = {f.name for f in s.fabrics if isinstance(f, InfinibandFabric | RoceFabric)}
        fabric_pools = any(p.fabric in rdma for p in s.node_pools)
        if kinds.of(s).driver == "host" and fabric_pools:
            if k.gpudirect_rdma is None:
                yield Problem(
                    path,
                    "a site whose hosts bring the NVIDIA driver and whose pools use an InfiniBand / RoCE fabric "
                    "must say how GPUDirect RDMA works: dma-buf (the host runs NVIDIA's open kernel module; the "
                    "preflight checks it) or off",
                )
        elif k.gpudirect_rdma is not None:
            yield Problem(
                path,
                "only for a bare-metal site with driver_managed_by: host and pools on an InfiniBand / RoCE fabric "
                "(with driver_managed_by: operator gpufleet loads nvidia-peermem on the fabric's nodes itself)",
            )


def dcgm_detector_has_dcgm(spec: EstateSpec) -> Iterator[Problem]:
    """DCGM comes with the GPU Operator (its DCGM exporter); the standalone device plugin brings none."""
    for i, s in enumerate(spec.sites):
        if s.kubernetes.gpu_stack == "gpu-operator":
            continue
        for j, base in enumerate(s.node_pools):
            detectors = spec.pool(base.name).health.detectors
            if detectors is not None and "dcgm" in detectors:
                yield Problem(
                    f"sites[{i}].node_pools[{j}].health.detectors",
                    "dcgm runs with the GPU Operator's DCGM exporter, and this site's gpu_stack is device-plugin; "
                    "drop dcgm or set kubernetes.gpu_stack: gpu-operator",
                )


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
    site_inventories,
    gpudirect_rdma_declared,
    enforcement_overrides_effective,
    dcgm_detector_has_dcgm,
)
