"""Segmentation pack, T5 on a CNI that leaves standalone pods (no ownerReferences) outside every NetworkPolicy:
an untrusted tenant's namespace there refuses them at admission. Used by `rules.tenant_networkpolicy_enforced`.
"""

from __future__ import annotations

from pulumi_policy import PolicyResource

from model.cni import SKIPS_STANDALONE_PODS as STANDALONE_POD_GAP
from model.conventions import NAMESPACE_NAME_LABEL, TRUST_LABEL
from policies.common import as_dict, as_list, get, k8s_labels, k8s_name, objects


def _untrusted_namespaces(resources: list[PolicyResource], namespaces: set[str]) -> list[str]:
    return sorted(
        k8s_name(r.props, r.name)
        for r in objects(resources, "Namespace")
        if k8s_name(r.props, r.name) in namespaces and k8s_labels(r.props).get(TRUST_LABEL) == "untrusted"
    )


def _refuses_standalone_pods(resources: list[PolicyResource], namespace: str) -> bool:
    """A Deny ValidatingAdmissionPolicy bound to `namespace` (by name) judges the pods' ownerReferences."""
    policies = {k8s_name(p.props, p.name): p for p in objects(resources, "ValidatingAdmissionPolicy")}
    for b in objects(resources, "ValidatingAdmissionPolicyBinding"):
        spec = as_dict(b.props.get("spec"))
        selector = as_dict(get(spec, "matchResources.namespaceSelector.matchLabels"))
        policy = policies.get(str(spec.get("policyName")))
        if selector.get(NAMESPACE_NAME_LABEL) != namespace or policy is None:
            continue
        text = " ".join(str(as_dict(v).get("expression", "")) for v in as_list(get(policy.props, "spec.validations")))
        if "Deny" in list(spec.get("validationActions") or []) and "object.metadata.ownerReferences" in text:
            return True
    return False


def standalone_pod_problems(resources: list[PolicyResource], where: str, cni: str, namespaces: set[str]) -> list[str]:
    """An untrusted tenant's namespace on a CNI that leaves standalone pods unpoliced (model.cni) refuses them."""
    if cni not in STANDALONE_POD_GAP:
        return []
    return [
        f"{where}: untrusted tenant namespace {ns} admits standalone pods, to which {cni} applies no NetworkPolicy "
        f"({STANDALONE_POD_GAP[cni]}); no Deny admission policy bound to it requires a controller owner"
        for ns in _untrusted_namespaces(resources, namespaces)
        if not _refuses_standalone_pods(resources, ns)
    ]
