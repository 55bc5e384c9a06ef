"""The Kubernetes client as the acceptance checks use it: API calls with one error type, the run context, creating
objects, waiting for Kueue to admit a tenant's Job and for Jobs to finish, reading their logs (official Kubernetes
Python client)."""

from __future__ import annotations

import itertools
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpufleet.verify.manifests import QUEUE_LABEL, Manifest, Run
from gpufleet.verify.suite import Check, Suite
from model import conventions, dra, queues
from model.spec import EstateSpec, NodePool, Site

Pool = NodePool
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
    """The client objects of one cluster (kubernetes.client.CoreV1Api / BatchV1Api / CustomObjectsApi, or fakes)."""

    core: Any
    batch: Any
    custom: Any = None  # CustomObjectsApi: Kueue's Workloads, read to say why a Job waits


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
    manager: ClusterApi | None = None  # a hybrid estate's MultiKueue manager, where probes are submitted
    manager_jobs: list[tuple[str, str]] = field(default_factory=list)  # (namespace, job) made on the manager
    tenant_objects: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, namespace, name), not Jobs
    drilled: list[str] = field(default_factory=list)  # nodes the drain drill quarantined, returned by cleanup
    quarantined: list[str] = field(default_factory=list)  # nodes this run quarantined, as `node (why)`
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
# (group, version, plural) of NVIDIA's ComputeDomain (crds/resource.nvidia.com_computedomains.yaml of the DRA driver).
COMPUTE_DOMAIN = (*dra.COMPUTE_DOMAIN_API.split("/"), "computedomains")


def custom_path(namespace: str) -> tuple[str, str, str, str]:
    """CustomObjectsApi's (group, version, namespace, plural) of a ComputeDomain in `namespace`."""
    group, version, plural = COMPUTE_DOMAIN
    return group, version, namespace, plural


def create(ctx: Context, obj: Manifest) -> Any:
    kind, meta = obj["kind"], obj["metadata"]
    ns = meta.get("namespace", ctx.run.namespace)
    call = {
        "Namespace": lambda: ctx.api.core.create_namespace(obj),
        "Job": lambda: ctx.api.batch.create_namespaced_job(ns, obj),
        "Service": lambda: ctx.api.core.create_namespaced_service(ns, obj),
        "Secret": lambda: ctx.api.core.create_namespaced_secret(ns, obj),
        "Pod": lambda: ctx.api.core.create_namespaced_pod(ns, obj),
        "PersistentVolumeClaim": lambda: ctx.api.core.create_namespaced_persistent_volume_claim(ns, obj),
        "ComputeDomain": lambda: ctx.api.custom.create_namespaced_custom_object(*custom_path(ns), obj),
    }[kind]
    created = api_call(call)
    if ns != ctx.run.namespace and kind == "Job":
        ctx.tenant_jobs.append((ns, meta["name"]))
    elif ns != ctx.run.namespace and kind != "Namespace":
        ctx.tenant_objects.append((kind, ns, meta["name"]))
    return created


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


ADMISSION_TIMEOUT = 600.0  # seconds a probe waits for Kueue to admit it before it is reported as not admitted


def submit_to_manager(ctx: Context, check: Check, job: Manifest, timeout: float = ADMISSION_TIMEOUT) -> str:
    """Create a tenant's queued Job on the MultiKueue manager and wait until it is dispatched to this worker:
    "" once the manager's Workload names the site's MultiKueueCluster in `status.clusterName`, else why not.

    The manager's Kueue suspends the Job and reserves quota; MultiKueue copies the Workload to the workers and,
    once one admits it, the Job to that worker, under the same name and namespace (kubernetes-sigs/kueue at
    versions.KUEUE, site/content/en/docs/concepts/multikueue.md, "Workload Dispatching": `status.clusterName`).
    MultiKueueClusters are named after their sites (components/hybrid/manager.py)."""
    meta = job["metadata"]
    namespace, name, queue = meta["namespace"], meta["name"], meta["labels"][QUEUE_LABEL]
    if ctx.manager is None:
        return f"the MultiKueue manager {check.manager} was not reached: give its kubeconfig"
    created = api_call(ctx.manager.batch.create_namespaced_job, namespace, job)
    ctx.manager_jobs.append((namespace, name))
    if not (created.spec and created.spec.suspend):
        return (
            f"Kueue on manager {check.manager} did not hold Job {namespace}/{name}: it ran outside LocalQueue {queue}"
        )
    deadline = ctx.clock() + timeout * ctx.timeout_scale
    while True:
        workload = manager_workload(ctx.manager, namespace, name)
        cluster = ((workload or {}).get("status") or {}).get("clusterName")
        if cluster == check.site:
            return ""
        if cluster:
            return f"MultiKueue dispatched Job {namespace}/{name} to worker {cluster}, not to {check.site}"
        if ctx.clock() >= deadline:
            return f"not dispatched by MultiKueue within {timeout:.0f}s: {_pending(workload, namespace, name)}"
        ctx.progress(check.id, f"{name}: waiting for the manager to dispatch it")
        ctx.sleep(ctx.poll_seconds)


def manager_workload(api: ClusterApi, namespace: str, job: str) -> dict[str, Any] | None:
    """The Workload that Kueue made for Job `namespace/job` (owned by it), or None."""
    group, version = queues.KUEUE_API.split("/")
    listed = api_call(api.custom.list_namespaced_custom_object, group, version, namespace, "workloads")
    for wl in listed.get("items", []):
        owners = wl.get("metadata", {}).get("ownerReferences") or []
        if any(o.get("kind") == "Job" and o.get("name") == job for o in owners):
            return dict(wl)
    return None


def _pending(workload: dict[str, Any] | None, namespace: str, job: str) -> str:
    if workload is None:
        return f"no Workload for Job {namespace}/{job} (is the namespace managed by Kueue?)"
    name = workload["metadata"]["name"]
    for c in (workload.get("status") or {}).get("conditions") or []:
        if c.get("type") in ("QuotaReserved", "Admitted") and c.get("status") != "True":
            return f"Workload {namespace}/{name} {c['type']}={c.get('status')}: {c.get('message') or c.get('reason')}"
    return f"Workload {namespace}/{name} has no worker yet"


def wait_dispatched(ctx: Context, check: Check, namespace: str, name: str, timeout: float,
                    index: int | None = None) -> tuple[JobOutcome, str]:  # fmt: skip
    """Poll a dispatched Job until its Workload on the manager is Finished, and read the logs of its pod on the
    worker as soon as that pod ends: MultiKueue deletes the worker's copy once the Workload finishes
    (multikueue.md, step 4). `Finished` and its reasons `Succeeded` / `Failed`: kueue apis/kueue/v1beta2/
    workload_types.go at versions.KUEUE."""
    assert ctx.manager is not None
    deadline, logs = ctx.clock() + timeout * ctx.timeout_scale, ""
    while True:
        logs = logs or _ended_pod_logs(ctx, namespace, name, index)
        workload = manager_workload(ctx.manager, namespace, name) or {}
        conditions = (workload.get("status") or {}).get("conditions") or []
        done = next((c for c in conditions if c.get("type") == "Finished" and c.get("status") == "True"), None)
        if done is not None:
            logs = logs or _ended_pod_logs(ctx, namespace, name, index)
            if done.get("reason") == "Succeeded":
                return JobOutcome(True), logs
            why = f"{done.get('reason') or ''} {done.get('message') or ''}".strip()
            return JobOutcome(False, f"Workload of Job {namespace}/{name} finished: {why}"), logs
        ctx.progress(check.id, f"{name}: running on worker {check.site}")
        if ctx.clock() >= deadline:
            return JobOutcome(False, f"Job {namespace}/{name} did not finish within {timeout:.0f}s"), logs
        ctx.sleep(ctx.poll_seconds)


def _ended_pod_logs(ctx: Context, namespace: str, name: str, index: int | None) -> str:
    """The logs of the worker's pod of Job `name` (completion `index`) once it has ended, else ""."""
    selector = f"job-name={name}"
    if index is not None:
        selector += f",batch.kubernetes.io/job-completion-index={index}"
    pods = api_call(ctx.api.core.list_namespaced_pod, namespace, label_selector=selector).items
    ended = [p for p in pods if p.status is not None and p.status.phase in ("Succeeded", "Failed")]
    if not ended:
        return ""
    return str(api_call(ctx.api.core.read_namespaced_pod_log, ended[0].metadata.name, namespace) or "")


def submit_queued(ctx: Context, check: Check, job: Manifest, timeout: float = ADMISSION_TIMEOUT) -> str:
    """Create a tenant's queued Job and wait until Kueue admits it: "" once admitted, else why not.

    Kueue's Job webhook suspends a Job that names a LocalQueue as it is created, and its controller unsuspends
    it once the Job's Workload is admitted on the ClusterQueue's quota (kubernetes-sigs/kueue at versions.KUEUE,
    site/content/en/docs/concepts/workload.md; pkg/controller/jobs/job). A Job created unsuspended never went
    through Kueue, so it proves no journey."""
    meta = job["metadata"]
    namespace, name, queue = meta["namespace"], meta["name"], meta["labels"][QUEUE_LABEL]
    created = create(ctx, job)
    if not (created.spec and created.spec.suspend):
        return f"Kueue did not hold Job {namespace}/{name}: it ran outside LocalQueue {namespace}/{queue}"
    deadline = ctx.clock() + timeout * ctx.timeout_scale
    while True:
        got = api_call(ctx.api.batch.read_namespaced_job_status, name, namespace)
        if got.spec is not None and not got.spec.suspend:
            return ""
        if ctx.clock() >= deadline:
            return f"not admitted by Kueue within {timeout:.0f}s: {workload_condition(ctx, namespace, name)}"
        ctx.progress(check.id, f"{name}: waiting for Kueue to admit it")
        ctx.sleep(ctx.poll_seconds)


def workload_condition(ctx: Context, namespace: str, job: str) -> str:
    """The message of the Workload of a Job that is not admitted: its QuotaReserved or Admitted condition (Kueue
    apis/kueue/v1beta2/workload_types.go), e.g. which flavor's quota is short."""
    if ctx.api.custom is None:
        return "its Workload was not read"
    group, version = queues.KUEUE_API.split("/")
    listed = api_call(ctx.api.custom.list_namespaced_custom_object, group, version, namespace, "workloads")
    for wl in listed.get("items", []):
        owners = wl.get("metadata", {}).get("ownerReferences") or []
        if not any(o.get("kind") == "Job" and o.get("name") == job for o in owners):
            continue
        name = wl["metadata"]["name"]
        conditions = (wl.get("status") or {}).get("conditions") or []
        for kind in ("QuotaReserved", "Admitted"):
            c = next((c for c in conditions if c.get("type") == kind and c.get("status") != "True"), None)
            if c is not None:
                return f"Workload {namespace}/{name} {kind}={c.get('status')}: {c.get('message') or c.get('reason')}"
        return f"Workload {namespace}/{name} has no pending condition yet"
    return f"no Workload for Job {namespace}/{job} (is the namespace managed by Kueue?)"


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
