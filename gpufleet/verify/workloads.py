"""The checks that run GPU workloads: NCCL all-reduce (fabric), DCGM diagnostics (GPUs), fio (storage)."""

from __future__ import annotations

from gpufleet.verify import manifests, parsers
from gpufleet.verify.kube import (
    ApiError,
    Context,
    JobOutcome,
    api_call,
    create,
    job_logs,
    ready_nodes,
    submit_queued,
    submit_to_manager,
    tail,
    wait_dispatched,
    wait_job,
)
from gpufleet.verify.results import Result, Status, judged, skipped
from gpufleet.verify.suite import Check
from model import dra, queues
from model.spec import EfsTier, FsxLustreTier, NfsTier, ParallelFsTier

MAX_FIO_NODES = 8


def ssh_keypair() -> tuple[str, str]:
    """A throwaway ed25519 key pair (OpenSSH format) for mpirun between the pods of one Job."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private, public.decode() + " gpufleet-verify\n"


def _nccl_result(check: Check, logs: str, nodes: list[str]) -> Result:
    try:
        parsed = parsers.parse_nccl(logs)
    except parsers.ParseError as e:
        return Result(check, Status.error, detail=f"{e}; log: {tail(logs)}")
    evidence = {"nodes": nodes, "largest_bytes": parsed.largest.size_bytes, "avg_busbw": parsed.avg_busbw}
    if parsed.wrong:
        return Result(check, Status.failed, f"{parsed.busbw:.1f} GB/s", f"{parsed.wrong} wrong results", evidence)
    size = parsed.largest.size_bytes / 1024**3
    return judged(check, parsed.busbw, "GB/s", f"busbw at {size:g} GiB, out of place", **evidence)


def _run_queued(ctx: Context, check: Check, job: manifests.Manifest, timeout: float,
                index: int | None = None) -> tuple[JobOutcome, str]:  # fmt: skip
    """Submit a tenant's Job through its LocalQueue, on the MultiKueue manager when the check says so, and wait for
    it: its outcome and the logs of its pod (of completion `index`)."""
    ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
    if check.manager:
        refused = submit_to_manager(ctx, check, job)
        if refused:
            return JobOutcome(False, refused), ""
        return wait_dispatched(ctx, check, ns, name, timeout, index)
    refused = submit_queued(ctx, check, job)
    if refused:
        return JobOutcome(False, refused), ""
    outcome = wait_job(ctx, check, ns, name, timeout=timeout)
    return outcome, job_logs(ctx, ns, name, index=index)


def _failed(outcome: JobOutcome, logs: str) -> str:
    return f"{outcome.reason}; log: {tail(logs)}" if logs else outcome.reason


def nccl_multi_node(ctx: Context, check: Check) -> Result:
    """Two pods of a tenant's gang, admitted by Kueue through the tenant's LocalQueue, then all_reduce_perf."""
    assert check.pool is not None and check.namespace is not None
    pool = ctx.spec.pool(check.pool)
    found = ready_nodes(ctx, pool.name)
    if len(found) < 2:
        return skipped(check, f"pool {pool.name} has {len(found)} ready node(s) now; the test needs 2")
    name, ns = ctx.name("nccl"), check.namespace
    private, public = ssh_keypair()
    create(ctx, manifests.ssh_secret(ctx.run, name, private, public, ns))
    create(ctx, manifests.headless_service(ctx.run, name, ns))
    if dra.rack_scale(pool):  # its pods claim the channel of the ComputeDomain, which must exist first
        create(ctx, manifests.compute_domain(ctx.run, name, ns))
    job = manifests.nccl_multi_node_job(ctx.run, name, check.id, ctx.spec, ctx.site, pool, 2, ns)
    outcome, logs = _run_queued(ctx, check, job, 2400, index=0)
    if not outcome.succeeded:
        return Result(check, Status.error, detail=_failed(outcome, logs))
    return _nccl_result(check, logs, found[:2])


def nccl_single_node(ctx: Context, check: Check) -> Result:
    assert check.pool is not None and check.namespace is not None
    pool = ctx.spec.pool(check.pool)
    found = ready_nodes(ctx, pool.name)
    if not found:
        return skipped(check, f"pool {pool.name} has no ready node now")
    name, ns = ctx.name("nvlink"), check.namespace
    job = manifests.nccl_single_node_job(ctx.run, name, check.id, ctx.spec, ctx.site, pool, ns)
    outcome, logs = _run_queued(ctx, check, job, 1200)
    if not outcome.succeeded:
        return Result(check, Status.error, detail=_failed(outcome, logs))
    return _nccl_result(check, logs, found[:1])


def dcgm_diag(ctx: Context, check: Check) -> Result:
    """One Job per node, all at once; every node must pass and show no XID / ECC finding."""
    assert check.pool is not None
    pool = ctx.spec.pool(check.pool)
    found = ready_nodes(ctx, pool.name)
    if not found:
        return skipped(check, f"pool {pool.name} has no ready node now")
    level = ctx.suite.options.dcgm_level
    jobs = {}
    for node in found:
        name = ctx.name("dcgm")
        create(ctx, manifests.dcgm_diag_job(ctx.run, name, check.id, ctx.spec, ctx.site, pool, node, level))
        jobs[node] = name
    per_node: dict[str, dict[str, object]] = {}
    failures: list[str] = []
    unprobed: list[str] = []  # no output to parse (e.g. the Job stayed Pending): no evidence either way
    for node, name in jobs.items():
        outcome = wait_job(ctx, check, ctx.run.namespace, name, timeout={1: 600, 2: 1200}.get(level, 3600))
        logs = job_logs(ctx, ctx.run.namespace, name)
        try:
            diag = parsers.parse_dcgm_diag(logs)
        except parsers.ParseError as e:
            per_node[node] = {"error": f"{outcome.reason or e}", "log": tail(logs)}
            unprobed.append(f"{node}: not probed, no diagnostic result ({outcome.reason or e})")
            continue
        findings = [
            f"{f.test} GPU {f.entity}: {f.message}" for f in diag.findings if f.xid_or_ecc or f.status != "pass"
        ]
        per_node[node] = {"version": diag.version, "failed_tests": diag.failed, "findings": findings}
        if not diag.passed:
            failures.append(f"{node}: {', '.join(diag.failed) or 'XID / ECC findings'}")
    passed = len(found) - len(failures) - len(unprobed)
    measured = f"{passed}/{len(found)} nodes pass"
    status = Status.failed if failures else (Status.error if unprobed else Status.passed)
    return Result(check, status, measured, "; ".join(failures + unprobed), {"nodes": per_node})


def _tier(ctx: Context, name: str) -> FsxLustreTier | ParallelFsTier | EfsTier | NfsTier:
    tier = next(t for t in ctx.site.storage if t.name == name)
    assert isinstance(tier, FsxLustreTier | ParallelFsTier | EfsTier | NfsTier)
    return tier


def _claim(ctx: Context, check: Check) -> tuple[str, str | None] | str:
    """(claim, namespace or None for the run's own) the fio pods mount, or why there is none.

    FSx for Lustre volumes are pre-bound, one per tenant, to a claim named after the tier in the tenant's
    namespace (components/aws/storage.py): the test uses that claim when a trusted tenant with quota on the pool
    has bound it, and never creates or deletes tenant claims. Other tiers provision per claim: the run makes its
    own claim on the tier's StorageClass (reclaimPolicy Retain keeps the provisioned directory afterwards).
    """
    assert check.tier is not None and check.pool is not None
    tier = _tier(ctx, check.tier)
    if not isinstance(tier, FsxLustreTier):
        name = ctx.name("data")
        create(ctx, manifests.claim(ctx.run, name, tier.name))
        return name, None
    for tenant in queues.tenants_on_site(ctx.spec, ctx.site):
        if tenant.trust != "trusted" or check.pool not in queues.site_gpu_quota(ctx.site, tenant):
            continue
        try:
            pvc = api_call(ctx.api.core.read_namespaced_persistent_volume_claim, tier.name, tenant.name)
        except ApiError as e:
            if e.status == 404:
                continue
            raise
        if pvc.status.phase == "Bound":
            return tier.name, tenant.name
    return (
        f"no trusted tenant with quota on pool {check.pool} has bound claim {tier.name} (the tier's volumes are "
        "pre-bound per tenant); create the claim in a tenant namespace and run again"
    )


def _fio_sections(logs: str) -> parsers.FioResult:
    parts = []
    for mode in ("write", "read"):
        marker = manifests.FIO_MARKER.format(mode)
        if marker not in logs:
            raise parsers.ParseError(f"no fio {mode} section in the output")
        section = logs.split(marker, 1)[1]
        other = manifests.FIO_MARKER.format("read" if mode == "write" else "write")
        parts.append(parsers.parse_fio(section.split(other, 1)[0]))
    return parsers.merge_fio(parts)


def fio(ctx: Context, check: Check) -> Result:
    """fio on every ready node of the training pool at once (the load training puts on the tier), each node
    judged against the per-node need; the figure shown is the slowest node's slower direction."""
    assert check.pool is not None
    pool = ctx.spec.pool(check.pool)
    found = ready_nodes(ctx, pool.name)[:MAX_FIO_NODES]
    if not found:
        return skipped(check, f"pool {pool.name} has no ready node now")
    got = _claim(ctx, check)
    if isinstance(got, str):
        return skipped(check, got)
    claim_name, namespace = got
    ns = namespace or ctx.run.namespace
    jobs = {}
    for node in found:
        name = ctx.name("fio")
        create(ctx, manifests.fio_job(ctx.run, name, check.id, pool, node, claim_name, namespace))
        jobs[node] = name
    per_node: dict[str, dict[str, float]] = {}
    problems: list[str] = []
    for node, name in jobs.items():
        outcome = wait_job(ctx, check, ns, name, timeout=900)
        logs = job_logs(ctx, ns, name)
        try:
            r = _fio_sections(logs)
        except parsers.ParseError as e:
            problems.append(f"{node}: {outcome.reason or e}; log: {tail(logs, 4)}")
            continue
        per_node[node] = {"read_gbps": round(r.read_gbps, 2), "write_gbps": round(r.write_gbps, 2)}
        if r.errors:
            problems.append(f"{node}: fio reported {r.errors} job error(s)")
    if not per_node:
        return Result(check, Status.error, detail="; ".join(problems), evidence={"claim": claim_name})
    slowest = min(min(v.values()) for v in per_node.values())
    result = judged(check, slowest, "GB/s", "slowest node, slower of read and write", nodes=per_node)
    if problems:
        result.status = Status.error if result.status is not Status.failed else result.status
        result.detail = "; ".join([result.detail, *problems])
    return result
