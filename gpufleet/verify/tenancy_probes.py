"""Tenancy probes: what a tenant's namespace really refuses, tried from inside it.

Probe pods run busybox (versions.BUSYBOX) under Pod Security `restricted` as Jobs in the tenant namespaces, as
the tenant's ServiceAccount and through its LocalQueue, where Kueue admits them like any tenant Job. Each probe
that can only fail by being refused has a control that must succeed, so a broken probe is never read as isolation.
The quota and queue probes are server-side dry runs: the API server runs admission (ResourceQuota, Kueue's
webhooks) and persists nothing.
"""

from __future__ import annotations

import ipaddress
import shlex
import uuid
from typing import Any

from gpufleet.verify import manifests
from gpufleet.verify.kube import ApiError, Context, api_call, create, job_logs, submit_queued, tail, wait_job
from gpufleet.verify.manifests import QUEUE_LABEL, Manifest, Run
from gpufleet.verify.results import Result, Status, skipped
from gpufleet.verify.suite import Check, egress_target
from model import conventions, queues, versions
from model.spec import Tenant

REACHED, BLOCKED = "GPUFLEET-REACHED", "GPUFLEET-BLOCKED"
PROBE_PORT = 8080
SMALL = {"cpu": "100m", "memory": "64Mi"}


def probe_job(run: Run, name: str, check: str, namespace: str, command: str, runtime_class: str | None = None,
              resources: dict[str, str] | None = None, queue: str | None = None) -> Manifest:  # fmt: skip
    """A busybox Job; with `queue`, a tenant's Job through that LocalQueue of `namespace`."""
    pod: dict[str, Any] = {
        "serviceAccountName": conventions.TENANT_SERVICE_ACCOUNT,
        "automountServiceAccountToken": False,
        "containers": [
            {
                "name": "probe",
                "image": versions.BUSYBOX.reference,
                "command": ["sh", "-c", command],
                "securityContext": manifests.RESTRICTED,
                "resources": {"requests": resources or SMALL, "limits": resources or SMALL},
            }
        ],
    }
    if runtime_class:
        pod["runtimeClassName"] = runtime_class
    job = manifests.job_manifest(run, name, check, pod, namespace=namespace, deadline=600)
    return manifests.queued(job, queue) if queue else job


def connect_command(host: str, port: int) -> str:
    """The probe's `sh -c` text: the host quoted, so no address text (an IPv6 zone, say) reaches the shell as code."""
    return f"if nc -w 5 {shlex.quote(host)} {port:d} </dev/null; then echo {REACHED}; else echo {BLOCKED}; fi"


def _runtime_class(ctx: Context, tenant: Tenant) -> str | None:
    return ctx.site.kubernetes.sandbox_runtime_class if tenant.trust == "untrusted" else None


def _submit(ctx: Context, check: Check, job: Manifest) -> str:
    """Create a probe Job: in a tenant namespace through the tenant's LocalQueue, admitted by Kueue; "" once it
    may run, else why not."""
    if job["metadata"]["namespace"] == ctx.run.namespace:
        create(ctx, job)
        return ""
    return submit_queued(ctx, check, job)


def _queue(ctx: Context, namespace: str) -> str | None:
    return None if namespace == ctx.run.namespace else namespace  # the tenant's LocalQueue, named after it


def _probe(ctx: Context, check: Check, namespace: str, command: str, runtime_class: str | None = None) -> str:
    """Run a probe Job to completion; REACHED, BLOCKED, or the reason it did not finish."""
    name = ctx.name("probe")
    job = probe_job(ctx.run, name, check.id, namespace, command, runtime_class, queue=_queue(ctx, namespace))
    refused = _submit(ctx, check, job)
    if refused:
        return refused
    outcome = wait_job(ctx, check, namespace, name, timeout=300)
    logs = job_logs(ctx, namespace, name)
    for word in (REACHED, BLOCKED):
        if word in logs:
            return word
    return outcome.reason or f"probe printed neither verdict: {tail(logs)}"


def _running_pod(ctx: Context, check: Check, namespace: str, job: str, timeout: float) -> Any | None:
    deadline = ctx.clock() + timeout * ctx.timeout_scale
    while ctx.clock() < deadline:
        pods = api_call(ctx.api.core.list_namespaced_pod, namespace, label_selector=f"job-name={job}").items
        for p in pods:
            if p.status.phase == "Running" and p.status.pod_ip:
                return p
        ctx.progress(check.id, f"waiting for {namespace}/{job} to run")
        ctx.sleep(ctx.poll_seconds)
    return None


def cross_tenant(ctx: Context, check: Check) -> Result:
    assert check.tenant and check.other_tenant
    me, other = ctx.spec.tenant(check.tenant), ctx.spec.tenant(check.other_tenant)
    target = ctx.name("target")
    serve = f"mkdir -p /tmp/www && httpd -f -p {PROBE_PORT} -h /tmp/www"
    refused = _submit(ctx, check, probe_job(ctx.run, target, check.id, other.name, serve, _runtime_class(ctx, other),
                                            queue=other.name))  # fmt: skip
    pod = None if refused else _running_pod(ctx, check, other.name, target, timeout=300)
    if pod is None:
        return Result(
            check, Status.error, detail=f"the target pod in {other.name} never ran{': ' + refused if refused else ''}"
        )
    ip = pod.status.pod_ip
    from_me = _probe(ctx, check, me.name, connect_command(ip, PROBE_PORT), _runtime_class(ctx, me))
    control = _probe(ctx, check, other.name, connect_command(ip, PROBE_PORT), _runtime_class(ctx, other))
    evidence = {"target": f"{other.name}/{ip}:{PROBE_PORT}", "from_tenant": from_me, "control": control}
    if control != REACHED:
        return Result(check, Status.error, "inconclusive", f"control from {other.name}: {control}", evidence)
    if from_me == REACHED:
        return Result(check, Status.failed, "reached", f"{me.name} reached a pod of {other.name}", evidence)
    if from_me != BLOCKED:
        return Result(check, Status.error, "inconclusive", from_me, evidence)
    return Result(check, Status.passed, "refused", f"{me.name} -> {other.name} refused; {other.name} itself: reached",
                  evidence)  # fmt: skip


def egress(ctx: Context, check: Check) -> Result:
    assert check.tenant
    tenant = ctx.spec.tenant(check.tenant)
    address, port = egress_target(ctx.suite.options.egress_probe)  # judged when the options were made
    listed = [c for c in tenant.egress_cidrs if address in ipaddress.ip_network(c, strict=False)]
    if listed:
        return skipped(check, f"{address} is inside the tenant's egress_cidrs ({', '.join(listed)}); pick another")
    cmd = connect_command(str(address), port)
    from_tenant = _probe(ctx, check, tenant.name, cmd, _runtime_class(ctx, tenant))
    control = _probe(ctx, check, ctx.run.namespace, cmd)
    evidence = {"probe": ctx.suite.options.egress_probe, "from_tenant": from_tenant, "control": control}
    if control != REACHED:
        return Result(check, Status.error, "inconclusive", f"{address}:{port} unreachable from the cluster itself "
                      f"({control}); choose a reachable --egress-probe", evidence)  # fmt: skip
    if from_tenant == REACHED:
        return Result(check, Status.failed, "reached", f"{tenant.name} reached {address}:{port}", evidence)
    if from_tenant != BLOCKED:
        return Result(check, Status.error, "inconclusive", from_tenant, evidence)
    return Result(check, Status.passed, "refused", f"{tenant.name} -> {address}:{port} refused", evidence)


def over_quota_request(ctx: Context, tenant: Tenant) -> tuple[str, int]:
    """The GPU resource with the largest namespace quota and one more unit than that quota allows."""
    ceiling = queues.gpu_quota_ceiling(ctx.spec, ctx.site, tenant)
    resource = max(ceiling, key=lambda r: (ceiling[r], r == conventions.GPU_RESOURCE))
    return resource, ceiling[resource] + 1


def quota_probe_pod(ctx: Context, check: Check, tenant: Tenant, name: str, resources: dict[str, str]) -> Manifest:
    """The pod the quota probe offers the API server (a dry run), shaped like the pod of an admitted tenant Job.

    It names its Job as controller owner, since a standalone pod is refused where the CNI cannot police it
    (model.cni.SKIPS_STANDALONE_PODS). An untrusted tenant's pod carries the dedicated nodeSelector Kueue
    injects. So only the quota can refuse it. The Job itself is never created; a dry run persists nothing."""
    job = probe_job(ctx.run, name, check.id, tenant.name, "true", _runtime_class(ctx, tenant), resources)
    spec = dict(job["spec"]["template"]["spec"])
    if tenant.trust == "untrusted":
        spec["nodeSelector"] = {conventions.DEDICATED_TENANT_LABEL: tenant.name}
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": str(uuid.uuid4()), "controller": True}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {**job["metadata"], "ownerReferences": [owner]},
            "spec": spec}  # fmt: skip


def gpu_quota(ctx: Context, check: Check) -> Result:
    assert check.tenant
    tenant = ctx.spec.tenant(check.tenant)
    resource, asked = over_quota_request(ctx, tenant)
    pod = quota_probe_pod(ctx, check, tenant, ctx.name("quota"), {**SMALL, resource: str(asked)})
    try:
        api_call(ctx.api.core.create_namespaced_pod, tenant.name, pod, dry_run="All")
    except ApiError as e:
        if e.status == 403 and "exceeded quota" in (e.body + e.reason):
            return Result(check, Status.passed, "refused", f"{resource}={asked}: {e.reason}")
        return Result(check, Status.error, "refused otherwise", f"{resource}={asked}: {e}")
    return Result(check, Status.failed, "accepted", f"the API server accepted a pod asking for {resource}={asked}")


def queue_held(ctx: Context, check: Check) -> Result:
    assert check.tenant
    tenant = ctx.spec.tenant(check.tenant)
    job = probe_job(ctx.run, ctx.name("queue"), check.id, tenant.name, "true", _runtime_class(ctx, tenant))
    got = api_call(ctx.api.batch.create_namespaced_job, tenant.name, job, dry_run="All")
    suspended = bool(got.spec.suspend)
    queue = (got.metadata.labels or {}).get(QUEUE_LABEL)
    shown = f"suspend={suspended}, queue={queue or '-'}"
    if suspended and queue == queues.DEFAULT_LOCAL_QUEUE:
        return Result(check, Status.passed, shown, "Kueue holds the Job until its default LocalQueue admits it")
    return Result(check, Status.failed, shown, "a Job without a queue name would bypass Kueue")


def dedicated_nodes(ctx: Context, check: Check) -> Result:
    assert check.tenant
    tenant = ctx.spec.tenant(check.tenant)
    name = ctx.name("placement")
    job = probe_job(ctx.run, name, check.id, tenant.name, "sleep 30", _runtime_class(ctx, tenant), queue=tenant.name)
    refused = _submit(ctx, check, job)
    pod = None if refused else _running_pod(ctx, check, tenant.name, name, timeout=600)
    if pod is None:
        return Result(
            check, Status.error, detail=refused or f"no pod of {tenant.name} ran (is a dedicated node ready?)"
        )
    node = api_call(ctx.api.core.read_node, pod.spec.node_name)
    owner = (node.metadata.labels or {}).get(conventions.DEDICATED_TENANT_LABEL)
    shown = f"node {pod.spec.node_name} ({conventions.DEDICATED_TENANT_LABEL}={owner or '-'})"
    if owner == tenant.name:
        return Result(check, Status.passed, shown)
    return Result(check, Status.failed, shown, f"a pod of untrusted tenant {tenant.name} ran on a node not its own")
