"""What a pod asks for, the way Kubernetes sums it: quantities, a pod's effective requests and limits, label
selectors.

A pod's effective request of a resource is the larger of the sum over its regular containers and the largest
init container (https://kubernetes.io/docs/concepts/workloads/pods/init-containers/#resource-sharing-within-containers).
Admission (ResourceQuota, LimitRange) and Kueue (pkg/resources at versions.KUEUE) both count a pod this way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from kubernetes.utils.quantity import parse_quantity

Amounts = dict[str, Decimal]


def quantity(value: Any) -> Decimal:
    """A Kubernetes quantity ("500m", "16Gi", 8) as a number; ValueError when it is not one."""
    return Decimal(parse_quantity(value))


def show(resource: str, amount: Decimal) -> str:
    """A quantity as a person reads it: memory-like resources in Gi, the rest as numbers."""
    if resource.endswith(("memory", "storage")) or resource.startswith("hugepages-"):
        gib = amount / Decimal(2**30)
        return f"{gib.normalize():f}Gi"
    return f"{amount.normalize():f}"


def container_amounts(container: dict[str, Any], kind: str) -> Amounts:
    """`requests` or `limits` of one container, as numbers."""
    values = ((container.get("resources") or {}).get(kind)) or {}
    return {str(k): quantity(v) for k, v in values.items()}


def pod_requests(spec: dict[str, Any]) -> Amounts:
    """A pod's effective requests, a container's limit standing in for a request it leaves out (as the API server
    defaults a pod, and Kueue a workload: pkg/workload/resources.go, UseLimitsAsMissingRequestsInPod)."""
    filled = {
        key: [{"resources": {"requests": {**c.get("resources", {}).get("limits", {}), **c.get("resources", {}).get("requests", {})}}}
              for c in spec.get(key) or []]
        for key in ("containers", "initContainers")
    }  # fmt: skip
    return pod_amounts(filled, "requests")


def pod_amounts(spec: dict[str, Any], kind: str) -> Amounts:
    """A pod's effective `requests` or `limits`: max(sum of containers, largest init container) per resource."""
    total: Amounts = {}
    for c in spec.get("containers") or []:
        for r, v in container_amounts(c, kind).items():
            total[r] = total.get(r, Decimal(0)) + v
    for c in spec.get("initContainers") or []:
        for r, v in container_amounts(c, kind).items():
            total[r] = max(total.get(r, Decimal(0)), v)
    return total


def add(into: Amounts, amounts: Mapping[str, Decimal], times: int = 1) -> Amounts:
    for r, v in amounts.items():
        into[r] = into.get(r, Decimal(0)) + v * times
    return into


def matches(selector: dict[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Whether `labels` match a metav1.LabelSelector (an empty selector matches everything).
    https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#resources-that-support-set-based-requirements
    """
    selector = selector or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        match op:
            case "In":
                ok = key in labels and labels[key] in values
            case "NotIn":
                ok = key not in labels or labels[key] not in values
            case "Exists":
                ok = key in labels
            case "DoesNotExist":
                ok = key not in labels
            case _:
                ok = False
        if not ok:
            return False
    return True


def namespace_labels(namespace: dict[str, Any] | None, name: str) -> dict[str, str]:
    """A namespace's labels with the one the API server sets on every namespace (kubernetes.io/metadata.name)."""
    labels = dict(((namespace or {}).get("metadata") or {}).get("labels") or {})
    labels["kubernetes.io/metadata.name"] = name
    return labels


def joined(items: Iterable[str]) -> str:
    return ", ".join(items)
