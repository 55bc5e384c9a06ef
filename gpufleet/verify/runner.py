"""Running the suite against a site's cluster with the official Kubernetes client, and cleaning up after it.

Everything a run creates carries its run label and lives in its own namespace, except Jobs it must run inside a
tenant namespace (those are recorded and deleted one by one). Cleanup always runs: after the last check, after an
error and after Ctrl-C (KeyboardInterrupt), which it re-raises once the namespace is gone so the CLI can exit 130.
Nodes the degraded check cordons are uncordoned in the same `finally`.
"""

from __future__ import annotations

import itertools
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from components.model import conventions
from components.model.spec import AwsNodePool, AwsSite, BaremetalNodePool, BaremetalSite, EstateSpec
from gpufleet.verify import manifests
from gpufleet.verify.manifests import Manifest, Run
from gpufleet.verify.results import Result, Status, skipped
from gpufleet.verify.suite import Check, Kind, Suite

Site = AwsSite | BaremetalSite
Pool = AwsNodePool | BaremetalNodePool
Progress = Callable[[str, str], None]  # (check id, what is happening)


class ApiError(Exception):
    """A Kubernetes API call failed (wraps the client's ApiException so callers need not import the client)."""

    def __init__(self, status: int, reason: str, body: str = "") -> None:
        super().__init__(f"{status} {reason}: {body}".strip(": "))
        self.status = status
        self.reason = reason
        self.body = body


def api_call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call a client method, turning the client's ApiException (status, reason, body) into ApiError."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:  # the client's ApiException; checked by its attributes to stay import-free
        if hasattr(e, "status") and hasattr(e, "reason"):
            raise ApiError(int(getattr(e, "status", 0) or 0), str(e.reason), str(getattr(e, "body", "") or "")) from e
        raise


@dataclass
class ClusterApi:
    """The client objects of one cluster (kubernetes.client.CoreV1Api / BatchV1Api, or a fake in tests)."""

    core: Any
    batch: Any


@dataclass
class Context:
    suite: Suite
    site: Site
    api: ClusterApi
    run: Run
    progress: Progress = lambda check, msg: None
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    poll_seconds: float = 5.0
    timeout_scale: float = 1.0
    tenant_jobs: list[tuple[str, str]] = field(default_factory=list)  # (namespace, job) outside the run namespace
    cordoned: list[str] = field(default_factory=list)
    cleanup_problems: list[str] = field(default_factory=list)
    _names: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def spec(self) -> EstateSpec:
        return self.suite.spec

    def name(self, prefix: str) -> str:
        return f"{prefix}-{next(self._names)}"


def new_run() -> Run:
    return Run(secrets.token_hex(3))


# -- API helpers -------------------------------------------------------------------------------------------------
def create(ctx: Context, obj: Manifest) -> None:
    kind, meta = obj["kind"], obj["metadata"]
    ns = meta.get("namespace", ctx.run.namespace)
    call = {
        "Namespace": lambda: ctx.api.core.create_namespace(obj),
        "Job": lambda: ctx.api.batch.create_namespaced_job(ns, obj),
        "Service": lambda: ctx.api.core.create_namespaced_service(ns, obj),
        "Secret": lambda: ctx.api.core.create_namespaced_secret(ns, obj),
        "Pod": lambda: ctx.api.core.create_namespaced_pod(ns, obj),
        "PersistentVolumeClaim": lambda: ctx.api.core.create_namespaced_persistent_volume_claim(ns, obj),
    }[kind]
    api_call(call)
    if kind == "Job" and ns != ctx.run.namespace:
        ctx.tenant_jobs.append((ns, meta["name"]))


def ready_nodes(ctx: Context, pool: str) -> list[str]:
    """Nodes of a pool that are Ready and schedulable, by name."""
    listed = api_call(ctx.api.core.list_node, label_selector=f"{conventions.POOL_LABEL}={pool}")
    out = []
    for n in listed.items:
        ready = any(c.type == "Ready" and c.status == "True" for c in (n.status.conditions or []))
        if ready and not n.spec.unschedulable:
            out.append(n.metadata.name)
    return sorted(out)


@dataclass(frozen=True)
class JobOutcome:
    succeeded: bool
    reason: str = ""


def wait_job(ctx: Context, check: Check, namespace: str, name: str, timeout: float) -> JobOutcome:
    """Poll a Job until it completes or fails; a timeout is a failure with its own reason."""
    deadline = ctx.clock() + timeout * ctx.timeout_scale
    while True:
        job = api_call(ctx.api.batch.read_namespaced_job_status, name, namespace)
        st = job.status
        for cond in st.conditions or []:
            if cond.status == "True" and cond.type == "Complete":
                return JobOutcome(True)
            if cond.status == "True" and cond.type == "Failed":
                return JobOutcome(False, f"Job {namespace}/{name} failed: {cond.reason or ''} {cond.message or ''}")
        ctx.progress(check.id, f"{name}: {st.active or 0} running, {st.succeeded or 0} done")
        if ctx.clock() >= deadline:
            return JobOutcome(False, f"Job {namespace}/{name} did not finish within {timeout:.0f}s")
        ctx.sleep(ctx.poll_seconds)


def job_logs(ctx: Context, namespace: str, name: str, index: int | None = None) -> str:
    """The logs of a Job's pod (of completion index `index` for an Indexed Job)."""
    selector = f"job-name={name}"
    if index is not None:
        selector += f",batch.kubernetes.io/job-completion-index={index}"
    pods = api_call(ctx.api.core.list_namespaced_pod, namespace, label_selector=selector).items
    if not pods:
        return ""
    return str(api_call(ctx.api.core.read_namespaced_pod_log, pods[0].metadata.name, namespace) or "")


def tail(text: str, lines: int = 8) -> str:
    return " | ".join(text.strip().splitlines()[-lines:])


# -- cleanup -------------------------------------------------------------------------------------------------------
def cleanup(ctx: Context) -> list[str]:
    """Uncordon, delete tenant-namespace Jobs and the run namespace. Every step is tried even if one fails (or a
    second Ctrl-C arrives); the problems are returned so the caller can say what is left behind."""
    problems: list[str] = []
    core, batch = ctx.api.core, ctx.api.batch
    steps: list[tuple[str, Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = [
        (f"uncordon node {n}", core.patch_node, (n, {"spec": {"unschedulable": False}}), {}) for n in ctx.cordoned
    ]
    steps += [
        (f"delete Job {ns}/{job}", batch.delete_namespaced_job, (job, ns), {"propagation_policy": "Background"})
        for ns, job in ctx.tenant_jobs
    ]
    steps.append((f"delete namespace {ctx.run.namespace}", core.delete_namespace, (ctx.run.namespace,), {}))
    for what, fn, args, kwargs in steps:
        try:
            api_call(fn, *args, **kwargs)
        except ApiError as e:
            if e.status != 404:
                problems.append(f"{what}: {e}")
        except KeyboardInterrupt:
            problems.append(f"{what}: interrupted again; run cleanup by hand")
    return problems


# -- the run -------------------------------------------------------------------------------------------------------
Executor = Callable[[Context, Check], Result]


def executors() -> dict[Kind, Executor]:
    from gpufleet.verify import cluster_checks, tenancy_probes, workloads

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
    }


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
    finally:
        ctx.cleanup_problems = cleanup(ctx)
    return results, ctx.cleanup_problems
