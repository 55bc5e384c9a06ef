"""Tenancy pack, Pod Security at admission: tenant namespaces enforce restricted or baseline and only the registered
system namespaces are privileged (T6), IPC_LOCK only in RDMA namespaces guarded by a Deny admission policy (P6), and
Deny admission policies in tenant namespaces refuse wildcard tolerations (T11) and admit only the volume
types of Pod Security restricted there (T16). Rule objects are in `rules.ALL`.
"""

from __future__ import annotations

from collections.abc import Callable

from pulumi_policy import ReportViolation, ResourceValidationArgs, StackValidationArgs

from model.conventions import (
    NAMESPACE_NAME_LABEL,
    POD_SECURITY_MODES,
    POD_SECURITY_PREFIX,
    PRIVILEGED_NAMESPACES,
    QUARANTINE_KEY,
    RDMA_LABEL,
    TENANT_LABEL,
)
from policies.common import as_dict, as_list, config, get, k8s_labels, k8s_name, objects, tenant_namespaces

# -- T6 ---------------------------------------------------------------------------------------------------


def privileged_namespaces(args: ResourceValidationArgs) -> list[str]:
    """The exemption register: `privilegedNamespaces` from config, else the components' own register."""
    configured = config(args, "privilegedNamespaces", None)
    if configured is not None:
        return [str(n) for n in configured]
    return sorted(PRIVILEGED_NAMESPACES)


def namespace_pod_security(args: ResourceValidationArgs, report: ReportViolation) -> None:
    labels = k8s_labels(args.props)
    name = k8s_name(args.props, args.name)
    levels = {mode: labels.get(f"{POD_SECURITY_PREFIX}{mode}") for mode in POD_SECURITY_MODES}
    # An RDMA tenant namespace may hand enforcement to an admission policy (baseline + IPC_LOCK, rule
    # rdma-namespace-guarded); its audit and warn levels must still be restricted or baseline.
    rdma = bool(labels.get(TENANT_LABEL)) and labels.get(RDMA_LABEL) == "true" and levels["enforce"] == "privileged"
    audit_levels = [levels["audit"], levels["warn"]]
    if rdma and any(v not in ("restricted", "baseline") for v in audit_levels):
        report(f"RDMA namespace {name} must audit and warn at restricted or baseline (has {audit_levels})", None)
    if not rdma and any(v == "privileged" for v in levels.values()) and name not in privileged_namespaces(args):
        report(f"namespace {name} is Pod Security privileged but is not on the exemption list", None)
    if labels.get(TENANT_LABEL):
        if not rdma and levels["enforce"] not in ("restricted", "baseline"):
            report(f"tenant namespace {name} must enforce restricted or baseline (has {levels['enforce']})", None)
        missing = [m for m in ("audit", "warn") if not levels[m]]
        if missing:
            report(f"tenant namespace {name} lacks Pod Security labels for {missing}", None)


def rdma_namespace_guarded(args: StackValidationArgs, report: ReportViolation) -> None:
    """P6: a namespace that lets pods add IPC_LOCK (Pod Security enforce=privileged, marked for RDMA) has a
    Deny-mode ValidatingAdmissionPolicy bound to it that restricts capabilities and privileged containers."""
    policies = {k8s_name(p.props, p.name): p for p in objects(args.resources, "ValidatingAdmissionPolicy")}
    bindings = list(objects(args.resources, "ValidatingAdmissionPolicyBinding"))
    for ns_res in objects(args.resources, "Namespace"):
        labels = k8s_labels(ns_res.props)
        if labels.get(RDMA_LABEL) != "true" or labels.get(f"{POD_SECURITY_PREFIX}enforce") != "privileged":
            continue
        ns = k8s_name(ns_res.props, ns_res.name)
        guarded = False
        for b in bindings:
            spec = as_dict(b.props.get("spec"))
            selector = as_dict(get(spec, "matchResources.namespaceSelector.matchLabels"))
            if selector.get(NAMESPACE_NAME_LABEL) != ns or "Deny" not in list(spec.get("validationActions") or []):
                continue
            policy = policies.get(str(spec.get("policyName")))
            if policy is None:
                continue
            expressions = " ".join(str(v.get("expression", "")) for v in get(policy.props, "spec.validations") or [])
            if "capabilities" in expressions and "privileged" in expressions:
                guarded = True
        if not guarded:
            report(
                f"namespace {ns} enforces Pod Security privileged for RDMA but no Deny admission policy bound to it "
                "restricts capabilities and privileged containers",
                None,
            )


# -- T11 --------------------------------------------------------------------------------------------------


def _guarded_by(args: StackValidationArgs, judges: Callable[[str], bool]) -> bool:
    """A Deny admission policy bound to every namespace labelled `tenant` has validations that `judges` accepts."""
    policies = {k8s_name(p.props, p.name): p for p in objects(args.resources, "ValidatingAdmissionPolicy")}
    for b in objects(args.resources, "ValidatingAdmissionPolicyBinding"):
        spec = as_dict(b.props.get("spec"))
        selector = as_dict(get(spec, "matchResources.namespaceSelector"))
        expressions = [as_dict(e) for e in as_list(selector.get("matchExpressions"))]
        selects_tenants = any(e.get("key") == TENANT_LABEL and e.get("operator") == "Exists" for e in expressions)
        policy = policies.get(str(spec.get("policyName")))
        if not selects_tenants or policy is None or "Deny" not in list(spec.get("validationActions") or []):
            continue
        if judges(" ".join(str(v.get("expression", "")) for v in get(policy.props, "spec.validations") or [])):
            return True
    return False


def tenant_tolerations_guarded(args: StackValidationArgs, report: ReportViolation) -> None:
    """T11: where tenant namespaces exist, a Deny admission policy bound to namespaces labelled `tenant` refuses
    keyless (wildcard) tolerations, names the quarantine taint's key (which it refuses) and judges spec.nodeName
    (a pod created bound to a node skips the scheduler, so every NoSchedule taint)."""

    def judges(text: str) -> bool:
        return (
            "tolerations" in text
            and "has(t.key)" in text
            and f"'{QUARANTINE_KEY}'" in text
            and "object.spec.nodeName" in text
        )

    if tenant_namespaces(args.resources) and not _guarded_by(args, judges):
        report(
            "no Deny admission policy bound to tenant namespaces refuses wildcard tolerations, tolerations of "
            f"the quarantine taint {QUARANTINE_KEY} and pods created with spec.nodeName (T11)",
            None,
        )


# -- T16 --------------------------------------------------------------------------------------------------


def _allows_only_restricted_volumes(text: str) -> bool:
    """The validations admit a volume only as one of Pod Security restricted's types (an allow-list: no nfs)."""
    return "object.spec.volumes" in text and "has(v.persistentVolumeClaim)" in text and "has(v.nfs)" not in text


def tenant_inline_volumes_guarded(args: StackValidationArgs, report: ReportViolation) -> None:
    """T16: where tenant namespaces exist, a Deny admission policy bound to namespaces labelled `tenant` admits
    only the volume types of Pod Security restricted, so no inline nfs or other network volume mounts a shared
    file system past the tenant's own directory (baseline forbids only hostPath)."""
    if tenant_namespaces(args.resources) and not _guarded_by(args, _allows_only_restricted_volumes):
        report(
            "no Deny admission policy bound to tenant namespaces limits their pods to the volume types of Pod "
            "Security restricted, so a pod may mount a file system inline (nfs), past its own directory (T16)",
            None,
        )
