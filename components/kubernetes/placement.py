"""Where the GPU stack's daemons run: on GPU nodes only, tolerating exactly the taints gpufleet puts there.

Taints come from `model.nodes.pool_taints` (the GPU taint on every GPU node, `tenant=<id>:NoSchedule` on
pools dedicated to one tenant), so a daemon tolerates precisely the pools it serves and nothing broader — no
wildcard `operator: Exists` without a key. The quarantine taint `gpufleet verify` adds at run time (any reason)
is tolerated too. A rollout deletes a DaemonSet's pods, and the controller recreates one only on nodes whose taints
it tolerates (kubernetes.io/docs/concepts/workloads/controllers/daemonset/#taints-and-tolerations): a quarantined
node would lose its device plugin, advertise no GPUs, and fail the re-probe `verify --return` needs.
The stopped taint of a burst group is not: its nodes are on their way out, and no pod gpufleet writes tolerates
it (model.conventions.BURST_STOPPED_TAINT).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from model.conventions import GPU_PRESENT_LABEL, GPU_TAINT, QUARANTINE_TOLERATION
from model.nodes import pool_taints
from model.spec import NodePool

Pool = NodePool


def tolerations(pools: Iterable[Pool]) -> list[dict[str, str]]:
    """Tolerations for every taint of `pools` (always the GPU taint), without duplicates, GPU taint first; then
    the quarantine taint's."""
    seen = {GPU_TAINT.key + "=" + GPU_TAINT.value: GPU_TAINT.toleration()}
    for pool in pools:
        for taint in pool_taints(pool):
            seen.setdefault(f"{taint.key}={taint.value}", taint.toleration())
    return [*seen.values(), dict(QUARANTINE_TOLERATION)]


def require_labels(key: str, values: Iterable[str]) -> dict[str, Any]:
    """A node affinity requiring label `key` to be one of `values`."""
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}]
            }
        }
    }


def gpu_nodes_affinity() -> dict[str, Any]:
    """Run only on nodes labelled `nvidia.com/gpu.present=true` (set on every pool by model.nodes)."""
    return require_labels(GPU_PRESENT_LABEL, ["true"])


def off_gpu_nodes_affinity() -> dict[str, Any]:
    """Keep a controller off GPU nodes (prefer the control plane where it is schedulable)."""
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": GPU_PRESENT_LABEL, "operator": "NotIn", "values": ["true"]}]}
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 1,
                    "preference": {
                        "matchExpressions": [
                            {"key": "node-role.kubernetes.io/control-plane", "operator": "In", "values": [""]}
                        ]
                    },
                }
            ],
        }
    }
