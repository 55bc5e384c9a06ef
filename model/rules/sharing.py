"""Cross-field rules of GPU sharing: which sharing modes a pool's GPU model allows, who may share a time-sliced
pool, and enforcement overrides that the schema would make meaningless.

Time-slicing hands several workloads one GPU with no memory or fault isolation between them (NVIDIA GPU Operator,
"Time-Slicing GPUs in Kubernetes": https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-sharing.html).
So a time-sliced pool serves one tenant (`dedicated_to`), or trusted tenants that declare they share it
(`sharing.shared_by` with `sharing.accept_no_isolation: true`); untrusted tenants never. A GPU without MIG (an
L40S, say; gpus.yaml says which) shared by two tenants therefore has three safe setups: a time-sliced pool per
tenant, whole GPUs from one pool under per-tenant quotas, or one declared shared time-sliced pool.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from model import catalog
from model.spec.base import Problem
from model.spec.pools import TIME_SLICING_DOC, PoolBase

if TYPE_CHECKING:
    from model.spec.estate import EstateSpec

# Policy rules whose violations the schema already refuses: lowering their enforcement could never let such a
# plan through (the stack file is refused before any policy runs), so an override below mandatory is refused
# with the way the schema does allow. Keys are policy rule ids (policies/*/rules.py; a test keeps them real).
SCHEMA_ENFORCED_RULES: dict[str, str] = {
    "time-slicing-single-tenant": (
        "the schema refuses a time-sliced pool shared between tenants before any policy runs "
        "(sites[].node_pools[].sharing), so this override would change nothing; to let trusted tenants share a "
        "time-sliced pool declare sharing.shared_by with sharing.accept_no_isolation: true, which this rule "
        "accepts; otherwise give each tenant its own pool (dedicated_to) or use mig where the GPU has it"
    ),
}


def _time_slicing_setups(model: catalog.GpuModel | None) -> str:
    mig = (
        f"; or mode mig ({', '.join(p.name for p in model.mig_profiles)}), which isolates tenants in hardware"
        if model is not None and model.mig_profiles
        else ""
    )
    return (
        "allowed: dedicated_to one tenant (a time-sliced pool per tenant); or sharing.shared_by listing the trusted "
        "tenants that share it with sharing.accept_no_isolation: true (time-slicing gives them no memory or fault "
        f"isolation: {TIME_SLICING_DOC}); or mode whole, with per-tenant gpu_quota{mig}"
    )


def pool_sharing_problems(
    spec: EstateSpec, path: str, p: PoolBase, model: catalog.GpuModel | None
) -> Iterator[Problem]:
    """One pool's sharing against its GPU model (None when unknown: reported elsewhere) and its tenants."""
    sharing = p.sharing
    if sharing.mode == "mig" and model is not None:
        if not model.mig_profiles:
            yield Problem(f"{path}.sharing.mode", f"{model.id} GPUs do not support MIG; {model.sharing_summary()}")
        elif model.mig_profile(sharing.mig_profile or "") is None:
            yield Problem(
                f"{path}.sharing.mig_profile",
                f"{sharing.mig_profile} is not a MIG profile of {model.id}; valid: "
                f"{', '.join(x.name for x in model.mig_profiles)}",
            )
    if sharing.mode == "time-slicing" and model is not None and not model.time_slicing:
        yield Problem(f"{path}.sharing.mode", f"{model.id} GPUs cannot be time-sliced; {model.sharing_summary()}")
    if sharing.mode != "time-slicing":
        return
    if p.dedicated_to is None and not sharing.shared_by:
        yield Problem(
            f"{path}.sharing.mode",
            f"pool {p.name} uses time-slicing, which does not isolate tenants; {_time_slicing_setups(model)}",
        )
    if not sharing.shared_by:
        return
    if p.dedicated_to is not None:
        yield Problem(
            f"{path}.sharing.shared_by",
            f"pool {p.name} is dedicated_to {p.dedicated_to}; a dedicated pool is not shared (drop one of the two)",
        )
    if not sharing.accept_no_isolation:
        yield Problem(
            f"{path}.sharing.accept_no_isolation",
            f"pool {p.name} time-slices GPUs shared by {', '.join(sharing.shared_by)}, which gives them no memory "
            f"or fault isolation ({TIME_SLICING_DOC}); set accept_no_isolation: true to accept that, or "
            f"{_time_slicing_setups(model).removeprefix('allowed: ')}",
        )
    tenants = {t.name: t for t in spec.tenants}
    for k, name in enumerate(sharing.shared_by):
        tenant = tenants.get(name)
        if tenant is None:
            yield Problem(f"{path}.sharing.shared_by[{k}]", f"{name} is not a tenant of the estate")
        elif tenant.trust == "untrusted":
            yield Problem(
                f"{path}.sharing.shared_by[{k}]",
                f"tenant {name} is untrusted; untrusted tenants get whole GPUs or MIG slices on pools dedicated to "
                "them, never a time-sliced GPU shared with another tenant",
            )


def shared_pool_quotas(spec: EstateSpec) -> Iterator[Problem]:
    """Only the tenants a shared time-sliced pool names hold quota on it."""
    shared = {p.name: p.sharing.shared_by for _, p in spec.pools() if p.sharing.shared_by}
    for i, t in enumerate(spec.tenants):
        for pool in t.gpu_quota:
            if pool in shared and t.name not in shared[pool]:
                yield Problem(
                    f"tenants[{i}].gpu_quota.{pool}",
                    f"pool {pool} is a time-sliced pool shared_by {', '.join(shared[pool])} only; add {t.name} to "
                    "its sharing.shared_by (trusted tenants only) or move the quota to another pool",
                )


def enforcement_overrides_effective(spec: EstateSpec) -> Iterator[Problem]:
    """An enforcement override below mandatory on a rule the schema also enforces is refused, with why."""
    for rule, level in sorted(spec.policies.enforcement.items()):
        reason = SCHEMA_ENFORCED_RULES.get(rule)
        if reason is not None and level != "mandatory":
            yield Problem(f"policies.enforcement.{rule}", f"{level} is refused: {reason}")
