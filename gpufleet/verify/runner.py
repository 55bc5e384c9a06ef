"""Running the suite against a site's cluster with the official Kubernetes client, and cleaning up after it.

Everything a run creates carries its run label and lives in its own namespace, except the probes it runs as a
tenant, inside the tenant's namespace (on a hybrid estate, the Jobs on the MultiKueue manager): those objects are
recorded and deleted one by one, Jobs first, so Kueue drops their Workloads and no quota stays reserved. Cleanup always runs: after the last check, after an
error and after Ctrl-C (KeyboardInterrupt), which it re-raises once the namespace is gone so the CLI can exit 130.
Nodes the drain drill quarantines are returned in the same `finally`. After the checks, nodes a probe failed on
or a detector reports unhealthy are quarantined (gpufleet/verify/quarantine.py); those stay out of service.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpufleet.verify import cluster_checks, manifests, quarantine, tenancy_probes, workloads
from gpufleet.verify.kube import ApiError, Context, api_call, create, custom_path
from gpufleet.verify.results import Result, Status, skipped
from gpufleet.verify.suite import Check, Kind
from model.health import pool_health


# -- cleanup -------------------------------------------------------------------------------------------------------
def cleanup(ctx: Context) -> list[str]:
    """Return the drill's node, delete tenant-namespace Jobs (their pods and Kueue Workloads go with them), the other objects
    made there, and the run namespace. Every step is tried even if one fails (or a
    second Ctrl-C arrives); the problems are returned so the caller can say what is left behind."""
    problems: list[str] = []
    core, batch = ctx.api.core, ctx.api.batch
    steps: list[tuple[str, Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = [
        (f"return node {n} from the drill's quarantine", quarantine.release, (ctx.api, n), {}) for n in ctx.drilled
    ]
    if ctx.manager is not None:  # deleting the manager's Job makes MultiKueue delete the worker's copy
        steps += [
            (f"delete Job {ns}/{job} on the MultiKueue manager", ctx.manager.batch.delete_namespaced_job, (job, ns),
             {"propagation_policy": "Background"})
            for ns, job in ctx.manager_jobs
        ]  # fmt: skip
    steps += [
        (f"delete Job {ns}/{job}", batch.delete_namespaced_job, (job, ns), {"propagation_policy": "Background"})
        for ns, job in ctx.tenant_jobs
    ]
    delete = {
        "Secret": core.delete_namespaced_secret,
        "Service": core.delete_namespaced_service,
        "PersistentVolumeClaim": core.delete_namespaced_persistent_volume_claim,
        "ComputeDomain": lambda name, ns: ctx.api.custom.delete_namespaced_custom_object(*custom_path(ns), name),
    }
    steps += [(f"delete {kind} {ns}/{name}", delete[kind], (name, ns), {}) for kind, ns, name in ctx.tenant_objects]
    steps.append((f"delete namespace {ctx.run.namespace}", core.delete_namespace, (ctx.run.namespace,), {}))
    for what, fn, args, kwargs in steps:
        try:
            api_call(fn, *args, **kwargs)
        except ApiError as e:
            if e.status != 404:
                problems.append(f"{what}: {e}")
        except quarantine.NotQuarantined:
            pass
        except KeyboardInterrupt:
            problems.append(f"{what}: interrupted again; run cleanup by hand")
    return problems


# -- the run -------------------------------------------------------------------------------------------------------
Executor = Callable[[Context, Check], Result]


def executors() -> dict[Kind, Executor]:
    return {
        Kind.nccl_multi: workloads.nccl_multi_node,
        Kind.nccl_single: workloads.nccl_single_node,
        Kind.dcgm_diag: workloads.dcgm_diag,
        Kind.fio: workloads.fio,
        Kind.cross_tenant: tenancy_probes.cross_tenant,
        Kind.egress: tenancy_probes.egress,
        Kind.gpu_quota: tenancy_probes.gpu_quota,
        Kind.queue_held: tenancy_probes.queue_held,
        Kind.dedicated_nodes: tenancy_probes.dedicated_nodes,
        Kind.exporter: cluster_checks.exporter,
        Kind.drain: cluster_checks.drain,
        Kind.nvlink_domains: cluster_checks.nvlink_domains,
    }


def agent_pools(ctx: Context) -> list[str]:
    """The pools in scope (`--pool`, else all) whose detectors include the node monitoring agent: the ones whose
    node conditions the quarantine sweep reads."""
    scope = ctx.suite.options.pools
    return [
        p.name
        for p in ctx.site.node_pools
        if (not scope or p.name in scope) and "node-monitoring-agent" in pool_health(ctx.site, p).detectors
    ]


def run_site(ctx: Context) -> tuple[list[Result], list[str]]:
    """Every check of one site, in suite order, then cleanup. Returns the results and cleanup problems;
    KeyboardInterrupt propagates after cleanup."""
    table = executors()
    results: list[Result] = []
    try:
        try:
            create(ctx, manifests.namespace(ctx.run))
        except ApiError as e:
            detail = f"could not create namespace {ctx.run.namespace}: {e}"
            return [Result(c, Status.error, detail=detail) for c in ctx.suite.for_site(ctx.site.name)], []
        for check in ctx.suite.for_site(ctx.site.name):
            if check.skip_reason:
                results.append(skipped(check, check.skip_reason))
                continue
            ctx.progress(check.id, "starting")
            try:
                results.append(table[check.kind](ctx, check))
            except ApiError as e:
                results.append(Result(check, Status.error, detail=f"Kubernetes API: {e}"))
            ctx.progress(check.id, str(results[-1].status))
        if ctx.suite.options.quarantine:
            ctx.quarantined, problems = quarantine.quarantine_site(ctx.api, results, agent_pools(ctx))
            ctx.cleanup_problems += problems
    finally:
        ctx.cleanup_problems += cleanup(ctx)
    return results, ctx.cleanup_problems
