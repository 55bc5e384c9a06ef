"""ValidatingAdmissionPolicies of a cluster, evaluated with cel-python on the objects a workload creates, the way
the API server evaluates them on CREATE: https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/

A binding applies when its `validationActions` include Deny, its policy's `matchConstraints` and its own
`matchResources` match the object (resource rules, namespace and object selectors), and every `matchCondition`
holds. `variables` are evaluated first, in order; `paramRef` names the parameter object (`params`). An
expression cel-python cannot evaluate is reported, never taken as a pass or a refusal.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from gpufleet.review.reality.journeys.core import ClusterView, ref
from gpufleet.review.reality.journeys.resources import matches

VAP_URL = "https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/"


@dataclass(frozen=True)
class Refusal:
    binding: str  # kind/name of the binding that refuses
    policy: str
    message: str


def _rule_matches(rule: dict[str, Any], group: str, version: str, resource: str) -> bool:
    def has(field: str, value: str) -> bool:
        values = rule.get(field) or []
        return "*" in values or value in values

    return (
        has("apiGroups", group)
        and has("apiVersions", version)
        and has("resources", resource)
        and (has("operations", "CREATE"))
    )


def _matches(match: dict[str, Any] | None, obj: dict[str, Any], resource: str, ns_labels: dict[str, str]) -> bool:
    """Whether a matchConstraints / matchResources block matches `obj` (absent rules match everything)."""
    match = match or {}
    group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
    rules = match.get("resourceRules")
    if rules is not None and not any(_rule_matches(r, group, version, resource) for r in rules):
        return False
    if any(_rule_matches(r, group, version, resource) for r in match.get("excludeResourceRules") or []):
        return False
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return matches(match.get("namespaceSelector"), ns_labels) and matches(match.get("objectSelector"), labels)


def _cel(expression: str, activation: dict[str, Any]) -> Any:
    return _program(expression).evaluate(activation)


@functools.cache
def _program(expression: str) -> Any:
    """`expression` compiled once: every walk evaluates the same policies' expressions."""
    import celpy

    env = celpy.Environment()
    return env.program(env.compile(expression))


def evaluate(
    cluster: ClusterView,
    obj: dict[str, Any],
    resource: str,
    namespace: dict[str, Any] | None,
    ns_labels: dict[str, str],
) -> tuple[list[Refusal], list[str]]:
    """(refusals, notes) of every Deny binding on `cluster` that matches `obj` (a `resource`, e.g. "pods")."""
    from celpy import celtypes, json_to_cel

    refusals: list[Refusal] = []
    notes: list[str] = []
    policies = {str((p.get("metadata") or {}).get("name")): p for p in cluster.of("ValidatingAdmissionPolicy")}
    ns_name = ns_labels.get("kubernetes.io/metadata.name", "")
    for binding in cluster.of("ValidatingAdmissionPolicyBinding"):
        bspec = binding.get("spec") or {}
        if "Deny" not in (bspec.get("validationActions") or []):
            continue
        policy = policies.get(str(bspec.get("policyName")))
        if policy is None:
            continue
        pspec = policy.get("spec") or {}
        if not _matches(pspec.get("matchConstraints"), obj, resource, ns_labels):
            continue
        if not _matches(bspec.get("matchResources"), obj, resource, ns_labels):
            continue
        params: Any = None
        if pspec.get("paramKind") and bspec.get("paramRef"):
            pref = bspec["paramRef"]
            params = cluster.get(str(pspec["paramKind"].get("kind")), str(pref.get("name")), pref.get("namespace"))
            if params is None and pref.get("parameterNotFoundAction", "Deny") == "Deny":
                refusals.append(Refusal(ref(binding), ref(policy), f"parameter {pref.get('name')} not found"))
                continue
        activation: dict[str, Any] = {
            "object": json_to_cel(obj),
            "oldObject": None,
            "namespaceObject": json_to_cel(namespace or {}),
            "params": json_to_cel(params) if params is not None else None,
            "request": json_to_cel({"operation": "CREATE", "namespace": ns_name}),
        }
        try:
            values = celtypes.MapType({})
            for v in pspec.get("variables") or []:
                activation["variables"] = values
                values = celtypes.MapType({**values, celtypes.StringType(v["name"]): _cel(v["expression"], activation)})
            activation["variables"] = values
            if not all(bool(_cel(c["expression"], activation)) for c in pspec.get("matchConditions") or []):
                continue
            for rule in pspec.get("validations") or []:
                result = _cel(rule["expression"], activation)
                if isinstance(result, Exception) or not isinstance(result, bool | celtypes.BoolType):
                    notes.append(f"{ref(policy)}: not evaluated offline ({result!r:.80})")
                elif not result:
                    message = rule.get("message") or f"failed expression: {rule['expression']}"
                    refusals.append(Refusal(ref(binding), ref(policy), message))
        except Exception as e:  # cel-python lacks some Kubernetes CEL libraries
            notes.append(f"{ref(policy)}: not evaluated offline ({type(e).__name__}: {e})"[:200])
    return refusals, notes
