"""The estate as a Mermaid flowchart: sites with their pools, fabrics and storage tiers; tenants and their queues.

Node ids are letters, digits and underscores prefixed by their kind (never a Mermaid keyword); every label is a
quoted string (https://mermaid.js.org/syntax/flowchart.html#special-characters-that-break-syntax).
"""

from __future__ import annotations

import re
from typing import assert_never

from gpufleet.engine.plan import Plan
from model import kinds
from model.spec import (
    AwsNodePool,
    EfaFabric,
    EfsTier,
    EstateSpec,
    Fabric,
    FsxLustreTier,
    InfinibandFabric,
    NfsTier,
    OnPremS3Tier,
    ParallelFsTier,
    RoceFabric,
    S3Tier,
    ScratchTier,
    StorageTier,
)


def _id(kind: str, *parts: str) -> str:
    """A Mermaid node id: letters, digits and underscores only, prefixed by kind (never a keyword)."""
    return kind + "_" + "__".join(re.sub(r"[^A-Za-z0-9]", "_", p) for p in parts)


def _label(text: str) -> str:
    return '"' + text.replace('"', "#quot;") + '"'


def mermaid(spec: EstateSpec, plan: Plan | None = None) -> str:
    """A flowchart of the estate: sites with their pools, fabrics and storage tiers; tenants and their queues."""
    lines = ["flowchart LR"]
    burst_pools: list[str] = []
    for site in spec.sites:
        lines.append(f"  subgraph {_id('site', site.name)}[{_label(f'{site.name} · {kinds.of(site).diagram_where}')}]")
        lines.append("    direction TB")
        for f in site.fabrics:
            lines.append(f"    {_id('fabric', site.name, f.name)}{{{{{_label(_fabric_text(f))}}}}}")
        for pool in site.node_pools:
            lines.append(f"    {_id('pool', pool.name)}[{_label(_pool_text(spec, pool.name))}]")
            if pool.fabric:
                lines.append(f"    {_id('pool', pool.name)} --- {_id('fabric', site.name, pool.fabric)}")
            if isinstance(pool, AwsNodePool) and pool.burst:
                burst_pools.append(pool.name)
        for tier in site.storage:
            lines.append(f"    {_id('storage', site.name, tier.name)}[({_label(_tier_text(tier))})]")
            if isinstance(tier, FsxLustreTier):
                lines.append(f"    {_id('storage', site.name, tier.name)} --- {_id('fabric', site.name, tier.fabric)}")
        lines.append("  end")
    queues = _queues(plan)
    for t in spec.tenants:
        text = f"tenant {t.name}" + (" (untrusted)" if t.trust == "untrusted" else "")
        if queues.get(t.name):
            text += "<br/>queues: " + ", ".join(sorted(queues[t.name]))
        lines.append(f"  {_id('tenant', t.name)}([{_label(text)}])")
        for pool_name, quota in sorted(t.gpu_quota.items()):
            lines.append(f"  {_id('tenant', t.name)} -->|{_label(f'{quota} GPUs')}| {_id('pool', pool_name)}")
        if t.burst and spec.burst is not None:
            for pool_name in burst_pools:
                lines.append(f"  {_id('tenant', t.name)} -.->|{_label('burst')}| {_id('pool', pool_name)}")
    return "\n".join(lines)


def mermaid_block(spec: EstateSpec, plan: Plan | None = None) -> str:
    return "```mermaid\n" + mermaid(spec, plan) + "\n```"


def _pool_text(spec: EstateSpec, name: str) -> str:
    pool = spec.pool(name)
    what = kinds.of(spec.site_of_pool(name)).pool_diagram(spec, name)
    if pool.sharing.mode == "mig":
        what += f"<br/>MIG {pool.sharing.mig_profile}: {spec.pool_gpu_units(name)} slices"
    elif pool.sharing.mode == "time-slicing":
        what += f"<br/>time-sliced × {pool.sharing.replicas}"
    dedicated = f" · dedicated to {pool.dedicated_to}" if pool.dedicated_to else ""
    return f"pool {name} · {pool.role}{dedicated}<br/>{what}"


def _fabric_text(f: Fabric) -> str:
    match f:
        case EfaFabric():
            return f"fabric {f.name} · EFA {f.availability_zone}"
        case InfinibandFabric():
            return f"fabric {f.name} · InfiniBand"
        case RoceFabric():
            return f"fabric {f.name} · RoCE"
        case _:
            assert_never(f)


def _tier_text(t: StorageTier) -> str:
    match t:
        case FsxLustreTier():
            return f"{t.name} · FSx Lustre {t.capacity_gib} GiB, {t.throughput_gbps:.1f} GB/s"
        case ParallelFsTier():
            return f"{t.name} · parallel FS {t.throughput_gbps:g} GB/s"
        case ScratchTier():
            return f"{t.name} · node NVMe scratch"
        case EfsTier():
            return f"{t.name} · EFS"
        case S3Tier():
            return f"{t.name} · S3"
        case NfsTier():
            return f"{t.name} · NFS"
        case OnPremS3Tier():
            return f"{t.name} · on-prem S3"
        case _:
            assert_never(t)


def _queues(plan: Plan | None) -> dict[str, set[str]]:
    """LocalQueue names per namespace (= tenant), read from the plan's Kueue objects when there is a plan."""
    out: dict[str, set[str]] = {}
    for r in plan.kubernetes_objects() if plan else []:
        if r.inputs.get("kind") == "LocalQueue":
            meta = r.inputs.get("metadata") or {}
            ns, name = meta.get("namespace"), meta.get("name")
            if isinstance(ns, str) and isinstance(name, str):
                out.setdefault(ns, set()).add(name)
    return out
