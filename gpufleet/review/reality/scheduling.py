"""Can a pod run on a node? Node selectors, required node affinity and taints/tolerations, as the scheduler
judges them (https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/ and
https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/). Resources are not counted."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from model.conventions import Taint


@dataclass(frozen=True)
class Node:
    source: str  # what brings the node: a node group's logical key, or "existing cluster"
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()


def pod_spec(manifest: dict[str, Any]) -> dict[str, Any] | None:
    """The pod template spec of a workload object (Deployment, StatefulSet, DaemonSet, Job, CronJob, Pod)."""
    kind = manifest.get("kind")
    spec = manifest.get("spec") or {}
    if kind == "Pod":
        return dict(spec)
    if kind == "CronJob":
        spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    template = spec.get("template")
    return dict(template.get("spec") or {}) if isinstance(template, dict) else None


def _expression_matches(expr: dict[str, Any], labels: dict[str, str]) -> bool:
    key, op, values = expr.get("key", ""), expr.get("operator", ""), [str(v) for v in expr.get("values") or []]
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and values:
        try:
            a, b = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return a > b if op == "Gt" else a < b
    return False


def _affinity_matches(spec: dict[str, Any], labels: dict[str, str]) -> bool:
    required = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
        or {}
    ).get("nodeSelectorTerms")
    if not required:
        return True
    # Terms are ORed; the expressions of one term are ANDed (matchFields are not modelled).
    return any(all(_expression_matches(e, labels) for e in t.get("matchExpressions") or []) for t in required)


def _tolerates(tolerations: list[dict[str, Any]], taint: Taint) -> bool:
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint.effect:
            continue
        op = t.get("operator") or "Equal"
        if op == "Exists" and (not t.get("key") or t["key"] == taint.key):
            return True
        if op == "Equal" and t.get("key") == taint.key and str(t.get("value") or "") == taint.value:
            return True
    return False


def fits(spec: dict[str, Any], node: Node) -> bool:
    """Whether the scheduler may place a pod with `spec` on `node` (ignoring resources)."""
    selector = {str(k): str(v) for k, v in (spec.get("nodeSelector") or {}).items()}
    if any(node.labels.get(k) != v for k, v in selector.items()):
        return False
    if not _affinity_matches(spec, node.labels):
        return False
    tolerations = list(spec.get("tolerations") or [])
    return all(_tolerates(tolerations, t) for t in node.taints if t.effect in ("NoSchedule", "NoExecute"))


def describe(spec: dict[str, Any]) -> str:
    """A short statement of what a pod needs from a node, for messages."""
    parts = []
    if spec.get("nodeSelector"):
        parts.append("nodeSelector " + ", ".join(f"{k}={v}" for k, v in spec["nodeSelector"].items()))
    terms = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
        or {}
    ).get("nodeSelectorTerms") or []
    for t in terms:
        parts.append(
            "affinity "
            + " and ".join(
                f"{e.get('key')} {e.get('operator')} {e.get('values') or ''}".strip()
                for e in t.get("matchExpressions") or []
            )
        )
    tolerated = [t.get("key") or "*" for t in spec.get("tolerations") or []]
    parts.append("tolerates " + (", ".join(tolerated) if tolerated else "no taints"))
    return "; ".join(parts)
