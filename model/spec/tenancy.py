"""A tenant: a team (or agent) sharing the estate."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from model.conventions import TENANT_S3_SERVICE_ACCOUNT
from model.spec.base import Model, Name
from model.spec.net import MAX_GPUS, CidrRange

# A tenant's members are the subjects of one RoleBinding. Kubernetes counts no subjects, but etcd refuses a request
# over 1.5 MiB (https://etcd.io/docs/v3.5/dev-guide/limit/, "Request size limit"): 1,000 groups of up to 1,024
# characters (about 1.1 MB of subjects) stay under it, and far more groups than a tenant binds.
MAX_MEMBERS = 1000
MAX_MEMBER_CHARS = 1024


class S3Grant(Model):
    """Access to one prefix of one bucket the estate creates, through the tenant's own IAM role (EKS Pod Identity)."""

    bucket: str = Field(
        description="Name of a bucket an s3 tier of the estate creates (see `gpufleet preview`), e.g. `train-prod-datasets`."
    )
    prefix: str | None = Field(
        default=None,
        description="Key prefix the grant covers, ending in `/` (e.g. `research/`); unset: `<tenant>/`.",
    )
    access: Literal["read", "readwrite"] = Field(
        default="read", description="read: list and get objects; readwrite: also put and delete them."
    )

    @model_validator(mode="after")
    def _prefix(self) -> S3Grant:
        p = self.prefix
        if p is not None and (
            not p.endswith("/") or p.startswith("/") or any(c in p for c in "*?$") or ".." in p.split("/")
        ):
            raise ValueError(
                f"prefix {p!r} must be a plain key prefix ending in `/` (no leading `/`, no wildcards `*` `?`, "
                "no policy variables, no `..`)"
            )
        return self


class Tenant(Model):
    """A team (or agent) sharing the estate: namespace, quotas, queues, network and RBAC."""

    name: Name = Field(description="Tenant id; the namespace name and the `tenant` label/tag.")
    trust: Literal["trusted", "untrusted"] = Field(
        default="trusted", description="untrusted (e.g. agents running generated code) gets dedicated nodes."
    )
    gpu_quota: dict[Name, int] = Field(
        default_factory=dict,
        description="Nominal GPUs per node pool (Kueue flavor) the tenant is guaranteed.",
    )
    borrowing_limit: int = Field(
        default=0, ge=0, le=MAX_GPUS, description="GPUs the tenant may borrow from the cohort."
    )
    lending_limit: int | None = Field(
        default=None, ge=0, le=MAX_GPUS, description="GPUs of its quota others may borrow."
    )
    members: list[Annotated[str, Field(min_length=1, max_length=MAX_MEMBER_CHARS)]] = Field(
        default_factory=list,
        max_length=MAX_MEMBERS,
        description=f"Identity-provider groups bound to the tenant (at most {MAX_MEMBERS}, each in one RoleBinding).",
    )
    pod_security: Literal["restricted", "baseline"] = Field(
        default="restricted", description="Pod Security level enforced in the namespace."
    )
    egress_cidrs: list[Annotated[str, CidrRange(0, 128)]] = Field(
        default_factory=list, description="Destinations outside the cluster the tenant may reach."
    )
    cost_center: str | None = Field(default=None, description="Cost centre (defaults to the estate's).")
    burst: bool = Field(default=False, description="May burst to the cloud site of a hybrid estate.")
    cpu_quota: int = Field(
        default=256,
        ge=1,
        le=10_000_000,
        description="CPU cores requested in the namespace (on the burst site, plus the burst pools at their max).",
    )
    memory_quota_gib: int = Field(
        default=2048,
        ge=1,
        le=100_000_000,
        description="Memory requested in the namespace (on the burst site, plus the burst pools at their max).",
    )
    rdma: bool = Field(default=False, description="Namespace may run RDMA/EFA jobs (IPC_LOCK).")
    file_systems: list[Name] | None = Field(
        default=None,
        description=(
            "Shared file-system tiers (fsx-lustre, efs, nfs, parallel-fs, by tier name) the tenant may mount: "
            "a directory of its own on each, never the whole file system. Unset: every shared file system for "
            "a trusted tenant, none for an untrusted one."
        ),
    )

    s3: list[S3Grant] | None = Field(
        default=None,
        description=(
            f"S3 access through a service account `{TENANT_S3_SERVICE_ACCOUNT}` in the tenant's namespace on the bucket's site, bound "
            "by EKS Pod Identity to an IAM role that only this tenant's pods assume, with egress to the region's S3 "
            "ranges. Unset: a trusted tenant may read and write `<tenant>/` in every bucket of the sites where it "
            "has a namespace, an untrusted tenant gets no S3 at all; a list: exactly those grants. The egress opens HTTPS "
            "to all of the region's S3 addresses (a NetworkPolicy cannot tell buckets apart): the role limits what "
            "the tenant's own credentials reach, not where other credentials could write."
        ),
    )

    def mounts(self, tier: str) -> bool:
        """Whether the tenant gets volumes on shared file-system tier `tier` (see `file_systems`)."""
        if self.file_systems is not None:
            return tier in self.file_systems
        return self.trust == "trusted"

    @field_validator("gpu_quota")
    @classmethod
    def _non_negative(cls, v: dict[str, int]) -> dict[str, int]:
        for pool, n in v.items():
            if not 0 <= n <= MAX_GPUS:
                raise ValueError(f"gpu_quota for pool {pool} must be between 0 and {MAX_GPUS}")
        return v
