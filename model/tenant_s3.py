"""Which buckets the estate creates and which prefixes of them each tenant may use, per site (Pulumi-free).

One home for the estate's bucket names (components.aws.storage.s3 creates the buckets under these names) and for
a tenant's resolved S3 grants, which the AWS site turns into the tenant's IAM role and Pod Identity association
and the tenant bundle into its service account and S3 egress. See `Tenant.s3` for the rules: declared grants
exactly; unset, a trusted tenant gets `<tenant>/` read-write in every bucket of the sites where it has a
namespace and an untrusted tenant nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from model import catalog, kinds
from model.spec import AwsNodePool, EstateSpec, Problem, S3Tier, Site, Tenant

BUCKET_NAME_MAX = 63  # S3 bucket naming rules: 3 to 63 characters


def bucket_name(cluster: str, env: str, site: str, tier: str, purpose: str, *, single_tier: bool) -> str:
    """Globally unique bucket names: `<estate>-<env>-<purpose>` when the estate has one S3 tier, else with the site
    and tier names in between."""
    name = f"{cluster}-{env}-{purpose}" if single_tier else f"{cluster}-{env}-{site}-{tier}-{purpose}"
    return name[:BUCKET_NAME_MAX]


@dataclass(frozen=True)
class EstateBucketRef:
    name: str
    site: str
    tier: str
    purpose: str


def single_s3_tier(spec: EstateSpec) -> bool:
    return sum(isinstance(t, S3Tier) for s in spec.sites for t in s.storage) == 1


def estate_buckets(spec: EstateSpec) -> dict[str, EstateBucketRef]:
    """The data buckets every s3 tier of the estate creates, by name (access-log buckets are not data buckets)."""
    single = single_s3_tier(spec)
    out: dict[str, EstateBucketRef] = {}
    for s in spec.sites:
        if kinds.of(s).aws_site is None:
            continue  # S3 buckets are AWS resources
        for t in s.storage:
            if isinstance(t, S3Tier):
                for purpose in t.buckets:
                    name = bucket_name(spec.metadata.name, spec.metadata.environment, s.name, t.name, purpose,
                                       single_tier=single)  # fmt: skip
                    out[name] = EstateBucketRef(name, s.name, t.name, purpose)
    return out


def has_namespace(site: Site, tenant: Tenant) -> bool:
    """The tenant has a namespace on the site: GPU quota on one of its pools (burst pools aside), or it may burst
    and the site has burst pools (components.kubernetes.kueue.tenants_on_site and the burst queues)."""
    burst = [p for p in site.node_pools if isinstance(p, AwsNodePool) and p.burst]
    scheduled = {p.name for p in site.node_pools if p not in burst}
    return any(n > 0 and pool in scheduled for pool, n in tenant.gpu_quota.items()) or (tenant.burst and bool(burst))


@dataclass(frozen=True)
class TenantS3Access:
    bucket: EstateBucketRef
    prefix: str  # ends in "/"
    access: Literal["read", "readwrite"]


def own_prefix(tenant: Tenant) -> str:
    """The prefix a grant without one covers, and the one a trusted tenant gets by default: `<tenant>/`."""
    return f"{tenant.name}/"


def declared_grants(tenant: Tenant) -> list[str]:
    """`<bucket>/<prefix>` per grant the tenant declares (none when `s3` is unset)."""
    return [f"{g.bucket}/{g.prefix or own_prefix(tenant)}" for g in tenant.s3 or []]


def tenant_s3_access(spec: EstateSpec, site: Site, tenant: Tenant) -> list[TenantS3Access]:
    """The tenant's grants on the buckets of `site` (none where it has no namespace there)."""
    if not has_namespace(site, tenant):
        return []
    buckets = {n: b for n, b in estate_buckets(spec).items() if b.site == site.name}
    own = own_prefix(tenant)
    if tenant.s3 is None:
        if tenant.trust != "trusted":
            return []
        return [TenantS3Access(b, own, "readwrite") for b in buckets.values()]
    return [TenantS3Access(buckets[g.bucket], g.prefix or own, g.access) for g in tenant.s3 if g.bucket in buckets]


def grant_problems(spec: EstateSpec) -> Iterator[Problem]:
    """Declared grants name buckets the estate creates, on sites where the tenant has a namespace, in a region whose
    S3 ranges the catalog holds (the tenant's egress to S3 is built from them)."""
    buckets = estate_buckets(spec)
    sites = {s.name: s for s in spec.sites}
    for i, t in enumerate(spec.tenants):
        for j, g in enumerate(t.s3 or []):
            path = f"tenants[{i}].s3[{j}].bucket"
            ref = buckets.get(g.bucket)
            if ref is None:
                names = ", ".join(sorted(buckets)) or "none (no s3 tier)"
                yield Problem(path, f"{g.bucket} is not a bucket the estate creates; its buckets: {names}")
                continue
            site = sites[ref.site]
            if not has_namespace(site, t):
                yield Problem(
                    path,
                    f"bucket {g.bucket} is on site {site.name}, where tenant {t.name} has no namespace (no gpu_quota "
                    "on its pools), so no pod of the tenant could use the grant; give it quota there or drop the grant",
                )
            elif (region := kinds.of(site).region) is not None and not catalog.s3_ranges(region):
                yield Problem(
                    path,
                    f"the catalog holds no published S3 ranges for {region} (aws_s3_ranges.json, "
                    f"{catalog.s3_ranges_dated()}), so the tenant's egress to S3 cannot be built",
                )
