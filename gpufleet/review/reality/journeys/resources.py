"""What a pod asks for, the way Kubernetes sums it: quantities, a pod's effective requests and limits, label
selectors.

A pod's effective request of a resource: its regular containers and its sidecars (init containers with
`restartPolicy: Always`) summed, or a plain init container plus the sidecars started before it, whichever is more
(https://kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/#resource-sharing-within-containers and
https://kubernetes.io/docs/concepts/workloads/pods/init-containers/#resource-sharing-within-containers).
The scheduler, admission (ResourceQuota, LimitRange) and Kueue count a pod this way: Kueue's pkg/resources at
versions.KUEUE calls component-helpers' PodRequests.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

Amounts = dict[str, Decimal]

# A quantity's suffixes: binary (Ki .. Ei) and decimal SI (n .. E), as apimachinery's pkg/api/resource/quantity.go
# defines them (`<quantity> ::= <signedNumber><suffix>`). Parsed here, not with the kubernetes client's
# parse_quantity: importing that loads the whole client (hundreds of modules) into every preview.
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "k": Decimal(10**3),
            "K": Decimal(10**3),  # not canonical; read as k, as the kubernetes client reads it
            "M": Decimal(10**6), "G": Decimal(10**9), "T": Decimal(10**12), "P": Decimal(10**15),
            "E": Decimal(10**18)}  # fmt: skip


def quantity(value: Any) -> Decimal:
    """A Kubernetes quantity ("500m", "16Gi", 8) as a number; ValueError when it is not one."""
    if isinstance(value, int | float | Decimal):
        return Decimal(value)
    text = str(value)
    number, factor = text, Decimal(1)
    if text[-2:] in _BINARY:
        number, factor = text[:-2], Decimal(_BINARY[text[-2:]])
    elif text[-1:] in _DECIMAL:
        number, factor = text[:-1], _DECIMAL[text[-1:]]
    try:
        return Decimal(number) * factor
    except InvalidOperation:
        raise ValueError(f"{text!r} is not a Kubernetes quantity") from None


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

    def filled(c: dict[str, Any]) -> dict[str, Any]:
        res = c.get("resources") or {}
        return {**c, "resources": {"requests": {**(res.get("limits") or {}), **(res.get("requests") or {})}}}

    return pod_amounts({key: [filled(c) for c in spec.get(key) or []] for key in ("containers", "initContainers")},
                       "requests")  # fmt: skip


def is_sidecar(container: dict[str, Any]) -> bool:
    """An init container that keeps running beside the main containers (`restartPolicy: Always`)."""
    return container.get("restartPolicy") == "Always"


def pod_amounts(spec: dict[str, Any], kind: str) -> Amounts:
    """A pod's effective `requests` or `limits` per resource: max(containers + sidecars, each plain init container
    + the sidecars before it), as the module docstring says."""
    total: Amounts = {}
    for c in spec.get("containers") or []:
        add(total, container_amounts(c, kind))
    sidecars: Amounts = {}
    peak: Amounts = {}
    for c in spec.get("initContainers") or []:
        amounts = container_amounts(c, kind)
        if is_sidecar(c):
            add(sidecars, amounts)
            continue
        for r, v in amounts.items():
            peak[r] = max(peak.get(r, Decimal(0)), v + sidecars.get(r, Decimal(0)))
    add(total, sidecars)
    for r, v in peak.items():
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
