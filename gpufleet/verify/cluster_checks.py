"""Cluster-level checks: GPU telemetry (DCGM exporter) and the opt-in degraded drill (quarantine, evict, recover,
return)."""

from __future__ import annotations

from typing import Any

from gpufleet.verify import manifests, parsers, quarantine
from gpufleet.verify.kube import ApiError, Context, api_call, create, tail
from gpufleet.verify.quarantine import DRILL
from gpufleet.verify.results import Result, Status, skipped
from gpufleet.verify.suite import Check
from model import conventions, nodes, versions

# The GPU Operator's exporter DaemonSet and Service (NVIDIA/gpu-operator assets/state-dcgm-exporter/
# 0800_daemonset.yaml, 0600_service.yaml): pods labelled app=nvidia-dcgm-exporter serving /metrics on 9400.
EXPORTER_SELECTOR = "app=nvidia-dcgm-exporter"
EXPORTER_PORT = 9400


def _ready(node: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in (node.status.conditions or []))


def exporter(ctx: Context, check: Check) -> Result:
    """Every ready node of a GPU pool has a running exporter whose /metrics carries a series per GPU."""
    listed = api_call(ctx.api.core.list_node, label_selector=conventions.POOL_LABEL).items
    gpu_nodes = {n.metadata.name: (n.metadata.labels or {}).get(conventions.POOL_LABEL) for n in listed if _ready(n)}
    if not gpu_nodes:
        return skipped(check, f"no ready GPU node on site {ctx.site.name} now")
    pods = api_call(
        ctx.api.core.list_namespaced_pod, conventions.GPU_OPERATOR_NAMESPACE, label_selector=EXPORTER_SELECTOR
    ).items
    by_node = {p.spec.node_name: p.metadata.name for p in pods if p.status.phase == "Running"}
    per_node: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    for node, pool in sorted(gpu_nodes.items()):
        expected = ctx.spec.pool_gpus_per_node(pool) if pool in {p.name for p in ctx.site.node_pools} else None
        pod = by_node.get(node)
        if pod is None:
            problems.append(f"{node}: no running exporter")
            continue
        try:
            text = api_call(
                ctx.api.core.connect_get_namespaced_pod_proxy_with_path,
                f"{pod}:{EXPORTER_PORT}",
                conventions.GPU_OPERATOR_NAMESPACE,
                "metrics",
            )
        except ApiError as e:
            problems.append(f"{node}: /metrics not served ({e.status} {e.reason})")
            continue
        try:
            scrape = parsers.parse_exporter(str(text))
        except parsers.ParseError as e:
            problems.append(f"{node}: /metrics unreadable ({e}); log: {tail(str(text))}")
            continue
        per_node[node] = {"gpus": len(scrape.gpus), "expected": expected, "xid": scrape.xid}
        if expected is not None and len(scrape.gpus) < expected:
            problems.append(f"{node}: series for {len(scrape.gpus)} of {expected} GPUs")
    xids = {n: v["xid"] for n, v in per_node.items() if v["xid"]}
    served = len(gpu_nodes) - len([p for p in problems if "GPUs" not in p])
    detail = "; ".join(problems + ([f"XID reported: {xids}"] if xids else []))
    status = Status.failed if problems else Status.passed
    return Result(check, status, f"{served}/{len(gpu_nodes)} GPU nodes served", detail, {"nodes": per_node})


def gang_job(ctx: Context, name: str, check: Check) -> manifests.Manifest:
    """Two CPU-only pods on the pool's nodes; disruptions (eviction) do not count against the Job."""
    assert check.pool is not None
    pool = ctx.spec.pool(check.pool)
    pod = {
        "nodeSelector": {conventions.POOL_LABEL: pool.name},
        "tolerations": [t.toleration() for t in nodes.pool_taints(pool)],
        "containers": [
            {
                "name": "gang",
                "image": versions.BUSYBOX.reference,
                "command": ["sleep", "3600"],
                "securityContext": manifests.RESTRICTED,
                "resources": {
                    "requests": {"cpu": "100m", "memory": "64Mi"},
                    "limits": {"cpu": "100m", "memory": "64Mi"},
                },
            }
        ],
    }
    job = manifests.job_manifest(ctx.run, name, check.id, pod, count=2, deadline=1800)
    job["spec"]["backoffLimit"] = 2
    job["spec"]["podFailurePolicy"] = {
        "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]
    }
    return job


def _running(ctx: Context, name: str) -> list[Any]:
    pods = api_call(ctx.api.core.list_namespaced_pod, ctx.run.namespace, label_selector=f"job-name={name}").items
    return [p for p in pods if p.status.phase == "Running" and p.metadata.deletion_timestamp is None]


def _wait_running(ctx: Context, check: Check, name: str, avoid: str | None, timeout: float) -> list[Any] | None:
    deadline = ctx.clock() + timeout * ctx.timeout_scale
    while ctx.clock() < deadline:
        pods = [p for p in _running(ctx, name) if p.spec.node_name != avoid]
        if len(pods) >= 2:
            return pods
        ctx.progress(check.id, f"{name}: {len(pods)}/2 pods running" + (f" off {avoid}" if avoid else ""))
        ctx.sleep(ctx.poll_seconds)
    return None


def _schedulable(ctx: Context, pool: str) -> list[str]:
    """Ready nodes of `pool` neither cordoned nor quarantined."""
    listed = api_call(ctx.api.core.list_node, label_selector=f"{conventions.POOL_LABEL}={pool}").items
    return sorted(
        n.metadata.name
        for n in listed
        if _ready(n)
        and not n.spec.unschedulable
        and not any(t.key == conventions.QUARANTINE_KEY for t in n.spec.taints or [])
    )


def drain(ctx: Context, check: Check) -> Result:
    """The drain drill: quarantine the node of one of a running gang's pods, evict that pod, see the gang run again
    elsewhere, then return the node the documented way and see it schedulable again."""
    assert check.pool is not None
    ready = _schedulable(ctx, check.pool)
    if len(ready) < 2:
        return skipped(check, f"pool {check.pool} has {len(ready)} ready node(s); draining one needs a second")
    name = ctx.name("gang")
    create(ctx, gang_job(ctx, name, check))
    pods = _wait_running(ctx, check, name, None, timeout=600)
    if pods is None:
        return Result(check, Status.error, detail="the gang job never had both pods running")
    node = pods[0].spec.node_name
    if not quarantine.quarantine(ctx.api, node, DRILL):  # quarantined meanwhile by another: not the drill's to return
        return Result(check, Status.error, detail=f"{node} was quarantined by another run or person meanwhile; "
                      "the drill neither drained nor returned it")  # fmt: skip
    ctx.drilled.append(node)
    for p in pods:
        if p.spec.node_name == node:
            body = {"apiVersion": "policy/v1", "kind": "Eviction",
                    "metadata": {"name": p.metadata.name, "namespace": ctx.run.namespace}}  # fmt: skip
            api_call(ctx.api.core.create_namespaced_pod_eviction, p.metadata.name, ctx.run.namespace, body)
    back = _wait_running(ctx, check, name, node, timeout=600)
    quarantine.release(ctx.api, node)  # the documented return path, as `gpufleet verify --return NODE` runs it
    ctx.drilled.remove(node)
    if back is None:
        return Result(check, Status.failed, "not recovered", f"after quarantining {node} the gang did not run again")
    if node in _schedulable(ctx, check.pool):
        where = sorted({p.spec.node_name for p in back})
        detail = f"quarantined and drained {node}; pods running on {', '.join(where)}; {node} returned"
        return Result(check, Status.passed, "recovered", detail)
    return Result(check, Status.failed, "not returned", f"{node} still carries a NoSchedule taint after its return")


def nvlink_domains(ctx: Context, check: Check) -> Result:
    """The inventory's NVLink domains (conventions.NVLINK_DOMAIN_LABEL) against the cliques GPU Feature Discovery
    labels: `<ClusterUUID>.<CliqueID>`, left off a node whose GPUs are not all attached to one fabric clique
    (NVIDIA/k8s-device-plugin internal/lm/imex.go at versions.NVIDIA_DEVICE_PLUGIN). Kueue places a gang by the
    clique, so a domain the fabric splits or merges is not the one sizing and the inventory promised."""
    selector = f"{conventions.POOL_LABEL}={check.pool}"
    listed = [n for n in api_call(ctx.api.core.list_node, label_selector=selector).items if _ready(n)]
    if not listed:
        return skipped(check, f"no ready node of pool {check.pool} now")
    cliques: dict[str, set[str]] = {}
    problems: list[str] = []
    for node in sorted(listed, key=lambda n: n.metadata.name):
        labels, name = node.metadata.labels or {}, node.metadata.name
        domain, clique = labels.get(conventions.NVLINK_DOMAIN_LABEL), labels.get(conventions.GPU_CLIQUE_LABEL)
        if domain is None:
            problems.append(f"{name}: no {conventions.NVLINK_DOMAIN_LABEL} label (the inventory's nvlink_domain)")
        elif clique is None:
            problems.append(
                f"{name} (domain {domain}): no {conventions.GPU_CLIQUE_LABEL}: its GPUs are not on one clique"
            )
        else:
            cliques.setdefault(domain, set()).add(clique)
    for domain, found in sorted(cliques.items()):
        if len(found) > 1:
            problems.append(f"domain {domain} spans cliques {', '.join(sorted(found))}")
    owners: dict[str, list[str]] = {}
    for domain, found in cliques.items():
        for clique in found:
            owners.setdefault(clique, []).append(domain)
    problems += [f"clique {c} holds domains {', '.join(sorted(d))}" for c, d in sorted(owners.items()) if len(d) > 1]
    evidence = {"nodes": len(listed), "domains": {d: sorted(c) for d, c in sorted(cliques.items())}}
    shown = f"{len(listed)} nodes in {len(cliques)} domains"
    if problems:
        return Result(check, Status.failed, shown, "; ".join(problems), evidence)
    return Result(check, Status.passed, shown, "each domain is one clique of its own", evidence)
