"""Quarantine and return: a node that failed a probe or reports a health condition is tainted
`gpufleet.io/quarantine=<why>:NoSchedule`, and `gpufleet verify --return NODE` removes that taint.

- Why a taint and not a cordon: it says who took the node out and why, and nothing else removes it. A person's
  cordon or a remediator's drain stays theirs.
- The kube-scheduler places no new pod there, as no tenant pod tolerates the key. Kueue's topology-aware
  scheduling leaves such nodes out of its fit as well (FindMatchingUntoleratedTaint over scheduling taints,
  kubernetes-sigs/kueue pkg/cache/scheduler/scheduling_simulator_default.go at the pinned tag, versions.KUEUE).
- Without topology-aware scheduling, Kueue admits by flavor quota only. A workload then admitted for a
  quarantined node's capacity waits Pending until the node returns or the pool grows.
- NoSchedule evicts nothing: running pods finish, and the drain drill evicts its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, get_args

from gpufleet.verify.kube import ApiError, ClusterApi, api_call
from gpufleet.verify.results import Result, Status
from gpufleet.verify.suite import Kind
from model.conventions import POOL_LABEL, QUARANTINE_KEY, quarantine_taint
from model.spec.health import NodeCondition

HEALTH_CONDITIONS = frozenset(get_args(NodeCondition))  # the EKS node monitoring agent's conditions
FAILED_PROBE = "verify"
HEALTH = "health"
DRILL = "drill"
WRITE_ATTEMPTS = 5  # reads and writes of a node's taints before a conflict is given up


class NotQuarantined(Exception):
    """`--return NODE` on a node gpufleet did not quarantine."""


def _taints(node: Any) -> list[dict[str, str]]:
    out = []
    for t in (node.spec.taints if node.spec is not None else None) or []:
        entry = {"key": t.key, "effect": t.effect}
        if t.value:
            entry["value"] = t.value
        out.append(entry)
    return out


def _patch_taints(
    api: ClusterApi, node: str, change: Callable[[list[dict[str, str]]], list[dict[str, str]] | None]
) -> None:
    """Read `node`, and write `change(taints)` back unless it is None. spec.taints is replaced whole (an atomic
    list), so the patch carries the resourceVersion read: the API server answers 409 Conflict if another writer
    changed the node meanwhile, and the read and change are retried (kubernetes/community
    contributors/devel/sig-architecture/api-conventions.md, "Concurrency Control and Consistency")."""
    for attempt in range(WRITE_ATTEMPTS):
        read = api_call(api.core.read_node, node)
        taints = change(_taints(read))
        if taints is None:
            return
        patch = {"metadata": {"resourceVersion": read.metadata.resource_version}, "spec": {"taints": taints}}
        try:
            api_call(api.core.patch_node, node, patch)
            return
        except ApiError as e:
            if e.status != 409 or attempt == WRITE_ATTEMPTS - 1:
                raise


def quarantine(api: ClusterApi, node: str, why: str) -> bool:
    """Taint `node` for `why`; False when it already carries the quarantine taint (the first reason stays)."""
    added = False

    def add(taints: list[dict[str, str]]) -> list[dict[str, str]] | None:
        nonlocal added
        added = not any(t["key"] == QUARANTINE_KEY for t in taints)
        return [*taints, quarantine_taint(why).as_k8s()] if added else None

    _patch_taints(api, node, add)
    return added


def release(api: ClusterApi, node: str) -> str:
    """Remove the quarantine taint from `node` and return why it was there; NotQuarantined when it has none.
    Other taints (the GPU taint, a tenant's) stay as they are."""
    why: list[str] = []

    def remove(taints: list[dict[str, str]]) -> list[dict[str, str]]:
        ours = [t for t in taints if t["key"] == QUARANTINE_KEY]
        if not ours:
            raise NotQuarantined(f"node {node} carries no {QUARANTINE_KEY} taint; nothing to return")
        why[:] = [ours[0].get("value", "")]
        return [t for t in taints if t["key"] != QUARANTINE_KEY]

    _patch_taints(api, node, remove)
    return why[0]


def failed_nodes(results: list[Result]) -> list[str]:
    """Nodes a per-node probe (DCGM diagnostics) found faulty: failed tests or XID / ECC findings. A node whose
    probe printed nothing to parse (a timeout: its GPUs held by tenants, the Job Pending) was not probed and
    stays in service."""
    out: list[str] = []
    for r in results:
        if r.check.kind is not Kind.dcgm_diag or r.status is not Status.failed:
            continue
        for node, seen in r.evidence.get("nodes", {}).items():
            if seen.get("failed_tests") or seen.get("findings"):
                out.append(node)
    return out


def unhealthy_nodes(api: ClusterApi, pools: list[str]) -> list[str]:
    """Nodes of `pools` (those the node monitoring agent watches) on which one of its conditions is False.
    Unknown says the agent has not reported (it is starting, or its node lost touch), not that the node is bad."""
    out = []
    for pool in pools:
        for node in api_call(api.core.list_node, label_selector=f"{POOL_LABEL}={pool}").items:
            conditions = (node.status.conditions if node.status is not None else None) or []
            if any(c.type in HEALTH_CONDITIONS and c.status == "False" for c in conditions):
                out.append(node.metadata.name)
    return out


def quarantine_site(api: ClusterApi, results: list[Result], pools: list[str]) -> tuple[list[str], list[str]]:
    """Quarantine every node a probe failed on, and every node of `pools` (the pools in scope whose detectors
    include the node monitoring agent) the agent reports unhealthy. Returns the nodes newly tainted, each as
    `node (why)`, and the problems met."""
    done, problems = [], []
    wanted = {n: FAILED_PROBE for n in failed_nodes(results)}
    try:
        for n in unhealthy_nodes(api, pools):
            wanted.setdefault(n, HEALTH)
    except ApiError as e:
        problems.append(f"could not read node conditions: {e}")
    for node, why in wanted.items():
        try:
            if quarantine(api, node, why):
                done.append(f"{node} ({why})")
        except ApiError as e:
            problems.append(f"could not quarantine node {node}: {e}")
    return done, problems
