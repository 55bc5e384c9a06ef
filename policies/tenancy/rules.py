"""Tenancy: each tenant in its own namespace with quotas, limits, Pod Security, least-privilege RBAC, its own
Kueue queues and (when dedicated) its own tainted nodes. Check-list items T1-T16 and P6 of docs/checklist.md
that are properties of resources or of the stack, and tenant volumes on shared file systems scoped to a
directory per tenant (volumes.py).

Not here: T11 (tenant pods' tolerations: tenants' own manifests, Checkov/admission), T12 (time-slicing vs
tenancy: gpu-guardrails), T14 (quota sum vs physical GPUs: enforced by the estate schema), T5 (segmentation).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml
from pulumi_policy import ReportViolation, ResourceValidationArgs, StackValidationArgs

from model.conventions import (
    DEDICATED_TENANT_LABEL,
    GPU_RESOURCE,
    HELM_RELEASE,
    MIG_RESOURCE_PREFIX,
    SHARED,
    TENANT_LABEL,
    TENANT_NODE_LABEL,
)
from model.yaml_text import safe_load
from policies.common import (
    MANDATORY,
    NODE_GROUP,
    TENANTS_SCHEMA,
    as_dict,
    as_list,
    chart_name,
    expected_tenants,
    get,
    has_taint,
    in_namespace,
    is_false,
    k8s_labels,
    k8s_name,
    k8s_namespace,
    namespace_of_tenant,
    node_view,
    objects,
    resource_policy,
    schema,
    stack_policy,
    tenant_namespaces,
)
from policies.tenancy.pod_security import (
    namespace_pod_security,
    rdma_namespace_guarded,
    tenant_inline_volumes_guarded,
    tenant_tolerations_guarded,
)
from policies.tenancy.s3 import tenant_s3_scoped, untrusted_tenant_s3_declared
from policies.tenancy.volumes import tenant_volumes_scoped

PACK_NAME = "tenancy"
DEFAULT_ENFORCEMENT = MANDATORY

REQUIRED_COMPUTE_QUOTA = (("requests.cpu", "cpu"), ("requests.memory", "memory"))
OBJECT_COUNT_QUOTA = ("pods", "services", "persistentvolumeclaims", "count/jobs.batch")
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection", "*"})
ESCALATION_VERBS = frozenset({"bind", "escalate", "impersonate"})
EXEC_RESOURCES = frozenset({"nodes/proxy", "pods/exec", "pods/attach"})
GUARD_RESOURCES = frozenset({"resourcequotas", "limitranges", "networkpolicies"})


def _ns_for(args: StackValidationArgs, tenant: str, report: ReportViolation) -> str | None:
    ns = namespace_of_tenant(args, tenant)
    if ns is None:
        report(f"tenant {tenant} has no namespace labelled {TENANT_LABEL}={tenant}", None)
    return ns


# -- T1 ------------------------------------------------------------------------------------------------


def tenant_namespace(args: StackValidationArgs, report: ReportViolation) -> None:
    """Every tenant of the estate has a Namespace labelled tenant=<id> (and only one)."""
    by_tenant: dict[str, list[str]] = {}
    for ns, tenant in tenant_namespaces(args.resources).items():
        by_tenant.setdefault(tenant, []).append(ns)
    for tenant in expected_tenants(args):
        if tenant not in by_tenant:
            report(f"tenant {tenant} has no namespace labelled {TENANT_LABEL}={tenant}", None)
    for tenant, namespaces in by_tenant.items():
        if len(namespaces) > 1:
            report(f"tenant {tenant} is spread over namespaces {sorted(namespaces)}", None)


def no_default_namespace(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if k8s_namespace(args.props) == "default":
        report(f"{args.props.get('kind')} {k8s_name(args.props, args.name)} is in the default namespace", None)


# -- T2 / T4 -----------------------------------------------------------------------------------------------


def quota_requests_only(args: ResourceValidationArgs, report: ReportViolation) -> None:
    hard = as_dict(get(args.props, "spec.hard"))
    bad = sorted(k for k in hard if k.startswith("limits.nvidia.com/"))
    if bad:
        report(
            f"ResourceQuota {k8s_name(args.props, args.name)} sets {bad}; extended resources allow requests only", None
        )


def _quota_keys(args: StackValidationArgs, namespace: str) -> set[str]:
    keys: set[str] = set()
    for q in in_namespace(args.resources, namespace, "ResourceQuota"):
        keys |= set(as_dict(get(q.props, "spec.hard")))
    return keys


def tenant_gpu_quota(args: StackValidationArgs, report: ReportViolation) -> None:
    """Each tenant namespace has a ResourceQuota on requests.nvidia.com/gpu (or MIG resources), cpu, memory."""
    for tenant in expected_tenants(args):
        ns = _ns_for(args, tenant, report)
        if ns is None:
            continue
        keys = _quota_keys(args, ns)
        if not any(k == f"requests.{GPU_RESOURCE}" or k.startswith(f"requests.{MIG_RESOURCE_PREFIX}") for k in keys):
            report(f"namespace {ns} (tenant {tenant}) has no ResourceQuota on requests.{GPU_RESOURCE}", None)
        for alternatives in REQUIRED_COMPUTE_QUOTA:
            if not keys & set(alternatives):
                report(f"namespace {ns} (tenant {tenant}) has no ResourceQuota on {alternatives[0]}", None)


def tenant_object_counts(args: StackValidationArgs, report: ReportViolation) -> None:
    for tenant in expected_tenants(args):
        ns = _ns_for(args, tenant, report)
        if ns is None:
            continue
        missing = [k for k in OBJECT_COUNT_QUOTA if k not in _quota_keys(args, ns)]
        if missing:
            report(f"namespace {ns} (tenant {tenant}) has no object-count quota for {missing}", None)


# -- T3 ---------------------------------------------------------------------------------------------------


def tenant_limit_range(args: StackValidationArgs, report: ReportViolation) -> None:
    for tenant in expected_tenants(args):
        ns = _ns_for(args, tenant, report)
        if ns is None:
            continue
        ok = any(
            isinstance(limit, Mapping)
            and limit.get("type") == "Container"
            and limit.get("default")
            and limit.get("defaultRequest")
            for lr in in_namespace(args.resources, ns, "LimitRange")
            for limit in as_list(get(lr.props, "spec.limits"))
        )
        if not ok:
            report(
                f"namespace {ns} (tenant {tenant}) has no LimitRange with Container default and defaultRequest", None
            )


# -- T7 ---------------------------------------------------------------------------------------------------


def rbac_least_privilege(args: ResourceValidationArgs, report: ReportViolation) -> None:
    name = k8s_name(args.props, args.name)
    for i, rule in enumerate(as_list(args.props.get("rules"))):
        if not isinstance(rule, Mapping):
            continue
        verbs = {str(v) for v in as_list(rule.get("verbs"))}
        resources = {str(r) for r in as_list(rule.get("resources"))}
        groups = {str(g) for g in as_list(rule.get("apiGroups"))}
        where = f"{args.props.get('kind')} {name} rules[{i}]"
        if "*" in verbs or "*" in resources or "*" in groups:
            report(f"{where} uses a wildcard (verbs {sorted(verbs)}, resources {sorted(resources)})", None)
        if verbs & ESCALATION_VERBS:
            report(f"{where} grants {sorted(verbs & ESCALATION_VERBS)}", None)
        if resources & EXEC_RESOURCES and verbs & {"create", "get", "*"}:
            report(f"{where} grants {sorted(verbs)} on {sorted(resources & EXEC_RESOURCES)}", None)
        if k8s_namespace(args.props) and resources & GUARD_RESOURCES and verbs & WRITE_VERBS:
            report(f"{where} lets the namespace edit {sorted(resources & GUARD_RESOURCES)}", None)


def tenant_rbac_namespaced(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Tenants get RoleBindings in their namespace, never cluster-wide bindings or cluster-admin/admin."""
    name = k8s_name(args.props, args.name)
    labels = k8s_labels(args.props)
    role = as_dict(args.props.get("roleRef"))
    if args.props.get("kind") == "ClusterRoleBinding" and (labels.get(TENANT_LABEL) or _tenant_label(labels)):
        report(f"ClusterRoleBinding {name} binds a tenant cluster-wide; use a RoleBinding in its namespace", None)
    if role.get("kind") == "ClusterRole" and role.get("name") in ("cluster-admin", "admin"):
        report(f"{args.props.get('kind')} {name} grants ClusterRole {role.get('name')}", None)


def _tenant_label(labels: dict[str, str]) -> str | None:
    value = labels.get(DEDICATED_TENANT_LABEL)
    return value if value and value != SHARED else None


# -- T8 ---------------------------------------------------------------------------------------------------


def default_sa_no_automount(args: StackValidationArgs, report: ReportViolation) -> None:
    for tenant in expected_tenants(args):
        ns = _ns_for(args, tenant, report)
        if ns is None:
            continue
        ok = any(
            k8s_name(sa.props, sa.name) == "default" and is_false(sa.props.get("automountServiceAccountToken"))
            for sa in in_namespace(args.resources, ns, "ServiceAccount")
        )
        if not ok:
            report(
                f"the default ServiceAccount of namespace {ns} does not set automountServiceAccountToken: false", None
            )


# -- T9 ---------------------------------------------------------------------------------------------------


def dedicated_pool_isolation(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """A pool labelled for a tenant is tainted for it, and a tenant taint matches the tenant label when present.

    EKS node groups cannot carry `node-restriction.kubernetes.io/` labels (the node-group API rejects
    kubernetes.io prefixes), so on a node group the tenant taint alone marks a dedicated pool.
    """
    view = node_view(args.resource_type, args.props)
    if view is None:
        return
    tenant = view.dedicated_tenant
    if tenant and not has_taint(view.taints, TENANT_LABEL, tenant):
        report(f"pool {view.pool} is dedicated to {tenant} but lacks taint {TENANT_LABEL}={tenant}:NoSchedule", None)
    for t in (t for t in view.taints if t.key == TENANT_LABEL):
        if t.effect != "NoSchedule":
            report(f"pool {view.pool} tenant taint {t} must have effect NoSchedule", None)
        if tenant is not None and t.value != tenant:
            report(f"pool {view.pool} has taint {t} but its tenant node label is {tenant!r}", None)
        if tenant is None and view.source == "node":
            report(f"node {view.pool} has taint {t} but no {TENANT_NODE_LABEL} label", None)


# -- T13 --------------------------------------------------------------------------------------------------


def kueue_queue_pinned(args: ResourceValidationArgs, report: ReportViolation) -> None:
    name = k8s_name(args.props, args.name)
    selector = get(args.props, "spec.namespaceSelector")
    if not isinstance(selector, Mapping) or not (selector.get("matchLabels") or selector.get("matchExpressions")):
        report(f"ClusterQueue {name} namespaceSelector is missing or {{}} (admits every namespace)", None)
    covered = {
        str(r)
        for g in as_list(get(args.props, "spec.resourceGroups"))
        for r in as_list(as_dict(g).get("coveredResources"))
    }
    if not any(r == GPU_RESOURCE or r.startswith(MIG_RESOURCE_PREFIX) for r in covered):
        report(f"ClusterQueue {name} does not cover {GPU_RESOURCE}", None)


def kueue_manages_all_jobs(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """The Kueue release's controller config sets manageJobsWithoutQueueName: true, so a job without a queue
    label is held instead of bypassing tenant quotas."""
    if chart_name(args.props) != "kueue":
        return
    text = get(args.props, "values.managerConfig.controllerManagerConfigYaml")
    try:
        doc = safe_load(text) if isinstance(text, str) else None
    except yaml.YAMLError:
        doc = None
    if not (isinstance(doc, dict) and doc.get("manageJobsWithoutQueueName") is True):
        report(
            f"Kueue release {args.name} does not set manageJobsWithoutQueueName: true in its controller config", None
        )


def tenant_local_queue(args: StackValidationArgs, report: ReportViolation) -> None:
    for tenant in expected_tenants(args):
        ns = _ns_for(args, tenant, report)
        if ns is not None and not in_namespace(args.resources, ns, "LocalQueue"):
            report(f"namespace {ns} (tenant {tenant}) has no Kueue LocalQueue", None)


# -- T15 --------------------------------------------------------------------------------------------------


def priority_classes(args: StackValidationArgs, report: ReportViolation) -> None:
    if not expected_tenants(args):
        return
    if not list(objects(args.resources, "PriorityClass")):
        report("the estate defines no PriorityClass (inference/training/batch/interactive)", None)


TENANTS_CONFIG = schema(tenants=TENANTS_SCHEMA)
PRIVILEGED_CONFIG: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string"},
    "description": "System namespaces allowed Pod Security `privileged` (T6 exemption register).",
}

ALL = [
    stack_policy(
        tenant_namespace,
        name="tenant-namespace",
        description="T1: each tenant has its own Namespace labelled tenant=<id> (EKS BPG multitenancy; CKV_K8S_21).",
        enforcement=MANDATORY,
        config_schema=TENANTS_CONFIG,
        remediation="List the tenant under `tenants:` in the stack file; gpufleet creates its namespace.",
    ),
    resource_policy(
        no_default_namespace,
        name="no-default-namespace",
        description="T1: nothing is deployed into the `default` namespace (CKV_K8S_21; Kyverno disallow-default-namespace).",
        types=None,
        kinds=(
            "Deployment",
            "DaemonSet",
            "StatefulSet",
            "Job",
            "CronJob",
            "Pod",
            "Service",
            "ConfigMap",
            "Secret",
            "ServiceAccount",
            "Role",
            "RoleBinding",
            "LocalQueue",
            "ResourceQuota",
            "LimitRange",
            "NetworkPolicy",
        ),
        enforcement=MANDATORY,
        remediation="Put the object into a tenant or system namespace.",
    ),
    resource_policy(
        quota_requests_only,
        name="quota-requests-only",
        description="T2: GPU quotas use requests.nvidia.com/gpu; limits.nvidia.com/gpu is not a valid extended-resource quota (k8s resource-quotas).",
        kinds=("ResourceQuota",),
        enforcement=MANDATORY,
        remediation="Quote GPUs as `requests.nvidia.com/gpu` (tenants[].gpu_quota); remove limits.nvidia.com/* keys.",
    ),
    stack_policy(
        tenant_gpu_quota,
        name="tenant-gpu-quota",
        description="T2: each tenant namespace has a ResourceQuota on GPUs, cpu and memory (EKS BPG Quotas; MTB-PL1-CC-FNS-1).",
        enforcement=MANDATORY,
        config_schema=TENANTS_CONFIG,
        remediation="Give the tenant a gpu_quota, cpu_quota and memory_quota_gib in the stack file.",
    ),
    stack_policy(
        tenant_object_counts,
        name="tenant-object-counts",
        description="T4: each tenant namespace has object-count quotas (pods, services, PVCs, jobs) (MTB-PL1-CC-FNS-2).",
        enforcement=MANDATORY,
        config_schema=TENANTS_CONFIG,
        remediation="The tenant bundle must set object counts in its ResourceQuota; report a gpufleet bug if missing.",
    ),
    stack_policy(
        tenant_limit_range,
        name="tenant-limit-range",
        description="T3: each tenant namespace has a LimitRange with container default requests and limits (EKS BPG Limit ranges).",
        enforcement=MANDATORY,
        config_schema=TENANTS_CONFIG,
        remediation="The tenant bundle must create a LimitRange; report a gpufleet bug if missing.",
    ),
    resource_policy(
        namespace_pod_security,
        name="namespace-pod-security",
        description="T6: tenant namespaces enforce restricted/baseline with audit and warn; privileged only on exempt system namespaces (EKS BPG pods).",
        kinds=("Namespace",),
        enforcement=MANDATORY,
        config_schema=schema(privilegedNamespaces=PRIVILEGED_CONFIG),
        remediation="Set tenants[].pod_security to restricted or baseline; privileged only for GPU/Network Operator namespaces.",
    ),
    stack_policy(
        tenant_tolerations_guarded,
        name="tenant-tolerations-guarded",
        description="T11: tenant pods may not carry wildcard tolerations (operator Exists without a key) or tolerate another tenant's dedicated nodes or gpufleet's quarantine and burst-stopped taints, nor be created with spec.nodeName (which skips the scheduler and so every NoSchedule taint); a Deny admission policy bound to tenant namespaces enforces it (EKS BPG multitenancy).",
        enforcement=MANDATORY,
        remediation="Keep the gpufleet-tenant-tolerations admission policy that gpufleet installs on every cluster with tenants.",
    ),
    stack_policy(
        rdma_namespace_guarded,
        name="rdma-namespace-guarded",
        description="P6: IPC_LOCK (RDMA) only in namespaces marked gpufleet.io/rdma, whose Pod Security enforcement is taken over by a Deny admission policy (baseline + IPC_LOCK).",
        enforcement=MANDATORY,
        remediation="Let gpufleet create the RDMA namespace's admission policy (tenants[].rdma: true); never label a tenant namespace privileged by hand.",
    ),
    stack_policy(
        tenant_volumes_scoped,
        name="tenant-volumes-scoped",
        description="T16: a tenant's volume on a shared file system (FSx for Lustre, EFS) mounts a directory of its own (a Lustre fileset, an EFS access point), never the whole file system, and no two tenants share a writable directory.",
        enforcement=MANDATORY,
        remediation="Let gpufleet create tenant volumes (tenants[].file_systems); a hand-made volume must mount the tenant's own directory (FSx mountname <mount name>/tenants/<tenant>, EFS volumeHandle <fs-id>::<access point>).",
    ),
    stack_policy(
        tenant_inline_volumes_guarded,
        name="tenant-inline-volumes-guarded",
        description="T16: tenant pods may use only the volume types of Pod Security restricted (no inline nfs, iscsi, cephfs or other network volume, which would mount a shared file system past the tenant's own directory); a Deny admission policy bound to tenant namespaces enforces it (kubernetes.io Pod Security Standards, Volume Types).",
        enforcement=MANDATORY,
        remediation="Keep the gpufleet-tenant-volumes admission policy that gpufleet installs on every cluster with tenants; tenants mount shared file systems through their own claims.",
    ),
    resource_policy(
        rbac_least_privilege,
        name="rbac-least-privilege",
        description="T7: Roles have no wildcards, no bind/escalate/impersonate, no exec/proxy, and tenants cannot edit quotas or network policies (CKV_K8S_49/155-158; CKV2_K8S_1-3).",
        kinds=("Role", "ClusterRole"),
        enforcement=MANDATORY,
        remediation="Grant explicit verbs on explicit resources; never edit rights on resourcequotas/limitranges/networkpolicies.",
    ),
    resource_policy(
        tenant_rbac_namespaced,
        name="tenant-rbac-namespaced",
        description="T7: tenant access is namespaced RoleBindings only, never cluster-admin/admin (EKS BPG iam; MTB-PL1-CC-CPI-1).",
        kinds=("RoleBinding", "ClusterRoleBinding"),
        enforcement=MANDATORY,
        remediation="Bind tenants[].members with a RoleBinding to a namespaced Role in the tenant namespace.",
    ),
    stack_policy(
        default_sa_no_automount,
        name="default-sa-no-automount",
        description="T8: each tenant namespace's default ServiceAccount sets automountServiceAccountToken: false (CKV_K8S_38/41).",
        enforcement=MANDATORY,
        config_schema=TENANTS_CONFIG,
        remediation="The tenant bundle must patch the default ServiceAccount; report a gpufleet bug if missing.",
    ),
    resource_policy(
        dedicated_pool_isolation,
        name="dedicated-pool-tainted",
        description="T9: node pools dedicated to a tenant carry taint tenant=<id>:NoSchedule matching label node-restriction.kubernetes.io/tenant (EKS BPG multitenancy).",
        types=(NODE_GROUP,),
        kinds=("Node",),
        enforcement=MANDATORY,
        remediation="Set dedicated_to on the pool; gpufleet adds the matching tenant label and taint.",
    ),
    resource_policy(
        kueue_queue_pinned,
        name="kueue-clusterqueue-pinned",
        description="T13: each Kueue ClusterQueue pins namespaceSelector to its tenant namespace (not {}) and covers nvidia.com/gpu (Kueue cluster_queue).",
        kinds=("ClusterQueue",),
        enforcement=MANDATORY,
        remediation="ClusterQueues come from tenants[]; a hand-written one must select its namespace by kubernetes.io/metadata.name.",
    ),
    resource_policy(
        kueue_manages_all_jobs,
        name="kueue-manages-all-jobs",
        description="T13: Kueue manages jobs without a queue label (manageJobsWithoutQueueName: true), so no job bypasses tenant quotas (Kueue installation docs).",
        types=(HELM_RELEASE,),
        enforcement=MANDATORY,
        remediation="The Kueue component sets this in its controller config; a missing flag is a gpufleet bug.",
    ),
    stack_policy(
        tenant_local_queue,
        name="tenant-local-queue",
        description="T13: each tenant namespace has a Kueue LocalQueue (Kueue installation docs).",
        enforcement=MANDATORY,
        config_schema=TENANTS_CONFIG,
        remediation="Give the tenant a gpu_quota so gpufleet creates its ClusterQueue and LocalQueue.",
    ),
    stack_policy(
        priority_classes,
        name="priority-classes",
        description="T15: PriorityClasses are defined so Kueue and the scheduler preempt by priority (EKS BPG multitenancy Pod priority).",
        enforcement=MANDATORY,
        config_schema=TENANTS_CONFIG,
        remediation="The scheduling component must create PriorityClasses; report a gpufleet bug if missing.",
    ),
    stack_policy(
        tenant_s3_scoped,
        name="tenant-s3-scoped",
        description="T17: no tenant IAM role (tagged tenant=<id>) allows an S3 wildcard action (s3:*, *) on every bucket or holds an AWS managed S3 policy (CKV_AWS_355/356; EKS pod-identities).",
        enforcement=MANDATORY,
        remediation="Grant tenants buckets through tenants[].s3 (bucket, prefix, access); gpufleet scopes the role to arn:aws:s3:::<bucket>/<prefix>*.",
    ),
    stack_policy(
        untrusted_tenant_s3_declared,
        name="untrusted-tenant-s3-declared",
        description="T17: an untrusted tenant's IAM role reaches only the bucket prefixes the stack declares for it (tenants[].s3); none when it declares none.",
        enforcement=MANDATORY,
        config_schema=schema(
            tenantS3Grants={
                "type": "object",
                "additionalProperties": {"type": "array", "items": {"type": "string"}},
                "description": "Declared S3 grants per tenant (tenants[].s3): tenant -> `<bucket>/<prefix>`.",
            }
        ),
        remediation="Declare the untrusted tenant's buckets and prefixes in tenants[].s3, or remove its S3 access.",
    ),
]
