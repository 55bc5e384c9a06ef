"""Built-in ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1; no controller, no Kyverno) that back up
tenancy at admission: an untrusted tenant's pods stay on its dedicated nodes (and in its sandbox RuntimeClass), an
RDMA namespace enforces the Pod Security baseline with IPC_LOCK added (check P6), and no tenant pod tolerates
every taint, another tenant's dedicated nodes, a shared pool that does not name its tenant or a node gpufleet took
out of service, nor is created bound to a node past the scheduler (check T11), and no tenant pod mounts a volume
type Pod Security restricted forbids (check T16).
Used by `components.kubernetes.tenancy`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from model import conventions
from model.conventions import TENANT_LABEL
from model.spec import Tenant
from model.tags import Tags

# Pod Security Standards, baseline profile (kubernetes.io/docs/concepts/security/pod-security-standards):
# capabilities a container may add, and the "safe" sysctls. RDMA namespaces allow IPC_LOCK on top.
BASELINE_CAPABILITIES = (
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE", "SETFCAP",
    "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
)  # fmt: skip
SAFE_SYSCTLS = (
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
)  # fmt: skip
SELINUX_TYPES = ("container_t", "container_init_t", "container_kvm_t", "container_engine_t")
# The volume types the restricted profile allows ("Volume Types", same page). Baseline forbids only hostPath, so a
# baseline pod may mount nfs, iscsi, rbd, cephfs and the other in-tree network volumes inline: straight from the
# server, past the tenant's own directory. Every tenant gets this list, whatever its Pod Security level.
RESTRICTED_VOLUME_TYPES = (
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret",
)  # fmt: skip
# An inline CSI volume mounts what its volumeAttributes name, with no PersistentVolume the estate scoped. None of
# the drivers gpufleet installs serves one (csi-driver-nfs lists the Ephemeral lifecycle mode only with
# feature.enableInlineVolume, false in its values.yaml at versions.NFS_CSI_DRIVER; the EFS and FSx drivers list only
# Persistent), but a bare-metal cluster may run others. So untrusted tenants may not use them at all.
INLINE_CSI_REFUSED = "!has(object.spec.volumes) || object.spec.volumes.all(v, !has(v.csi))"


# A pod whose ownerReferences name a controller: what the Job, ReplicaSet and StatefulSet controllers create.
OWNED_POD = (
    "has(object.metadata.ownerReferences) && "
    "object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller)"
)


def untrusted_validations(
    tenant: Tenant, runtime_class: str | None, owned_pods_only: bool = False
) -> list[dict[str, str]]:
    """CEL rules of the untrusted tenant's ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1).

    `owned_pods_only`: the site's CNI leaves standalone pods outside every NetworkPolicy (model.cni
    SKIPS_STANDALONE_PODS, the EKS VPC CNI). There a pod must name a controller owner, else it would escape the
    tenant's default-deny. Orphaning an owned pod is an UPDATE that breaks the rule, so it is refused too.
    Other CNIs police standalone pods like any other, so they stay allowed there.
    The tenant loses Kueue's plain pods and pod groups, which Kueue itself ranks below the Job API and JobSet
    (kubernetes-sigs/kueue site/content/en/docs/tasks/run/plain_pods.md at versions.KUEUE: "We recommend using
    the kubernetes Job API or similar CRDs such as JobSet"). Deployment and StatefulSet pods have owners and pass.
    MultiKueue copies a dispatched pod to its worker without ownerReferences (pkg/controller/jobs/pod/
    pod_multikueue_adapter.go, CloneObjectMetaForCreation), so an EKS worker refuses such a plain or Deployment pod.
    """
    key = conventions.DEDICATED_TENANT_LABEL
    gated = "has(object.spec.schedulingGates) && size(object.spec.schedulingGates) > 0"
    pinned = (
        f"has(object.spec.nodeSelector) && '{key}' in object.spec.nodeSelector && "
        f"object.spec.nodeSelector['{key}'] == '{tenant.name}'"
    )
    rules = [
        {
            "expression": f"({gated}) || ({pinned})",
            "message": f"pods of untrusted tenant {tenant.name} run only on its dedicated nodes "
            f"(nodeSelector {key}={tenant.name}, set by Kueue at admission)",
        },
    ]
    if runtime_class:
        rules.append(
            {
                "expression": f"has(object.spec.runtimeClassName) && object.spec.runtimeClassName == '{runtime_class}'",
                "message": f"pods of untrusted tenant {tenant.name} must set runtimeClassName: {runtime_class}",
            }
        )
    if owned_pods_only:
        rules.append(
            {
                "expression": OWNED_POD,
                "message": f"pods of untrusted tenant {tenant.name} must be created by a controller (a Job, JobSet, "
                "Deployment or StatefulSet): this cluster's CNI applies no NetworkPolicy to a pod without ownerReferences",
            }
        )
    rules.append(
        {
            "expression": INLINE_CSI_REFUSED,
            "message": f"pods of untrusted tenant {tenant.name} may not mount inline CSI volumes; claim storage "
            "with a PersistentVolumeClaim",
        }
    )
    return rules


def rdma_pod_policy() -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """CEL variables and validations of an RDMA namespace's ValidatingAdmissionPolicy: the Pod Security baseline
    controls (host namespaces, privileged, capabilities, hostPath, host ports, procMount, seccomp, AppArmor,
    SELinux, sysctls) with IPC_LOCK added to the allowed capabilities."""
    caps = ", ".join(f"'{c}'" for c in (*BASELINE_CAPABILITIES, "IPC_LOCK"))
    sysctls = ", ".join(f"'{c}'" for c in SAFE_SYSCTLS)
    selinux = ", ".join(f"'{t}'" for t in SELINUX_TYPES)
    variables = [
        {
            "name": "containers",
            "expression": "object.spec.containers"
            " + (has(object.spec.initContainers) ? object.spec.initContainers : [])"
            " + (has(object.spec.ephemeralContainers) ? object.spec.ephemeralContainers : [])",
        },
        {"name": "podSecurity", "expression": "has(object.spec.securityContext) ? object.spec.securityContext : {}"},
    ]

    def each(cond: str) -> str:
        return f"variables.containers.all(c, !has(c.securityContext) || ({cond}))"

    validations = [
        (
            "!(has(object.spec.hostNetwork) && object.spec.hostNetwork) && !(has(object.spec.hostPID) && "
            "object.spec.hostPID) && !(has(object.spec.hostIPC) && object.spec.hostIPC)",
            "host namespaces (hostNetwork, hostPID, hostIPC) are not allowed",
        ),
        (
            each("!has(c.securityContext.privileged) || !c.securityContext.privileged"),
            "privileged containers are not allowed",
        ),
        (
            each(
                "!has(c.securityContext.capabilities) || !has(c.securityContext.capabilities.add) || "
                f"c.securityContext.capabilities.add.all(cap, cap in [{caps}])"
            ),
            "containers may add only the Pod Security baseline capabilities and IPC_LOCK",
        ),
        (
            "!has(object.spec.volumes) || object.spec.volumes.all(v, !has(v.hostPath))",
            "hostPath volumes are not allowed",
        ),
        (
            "variables.containers.all(c, !has(c.ports) || c.ports.all(p, !has(p.hostPort) || p.hostPort == 0))",
            "host ports are not allowed",
        ),
        (
            each("!has(c.securityContext.procMount) || c.securityContext.procMount == 'Default'"),
            "procMount must be Default",
        ),
        (
            "(!has(variables.podSecurity.seccompProfile) || variables.podSecurity.seccompProfile.type != 'Unconfined')"
            " && "
            + each("!has(c.securityContext.seccompProfile) || c.securityContext.seccompProfile.type != 'Unconfined'"),
            "seccomp may not be Unconfined",
        ),
        (
            "(!has(variables.podSecurity.appArmorProfile) || "
            "variables.podSecurity.appArmorProfile.type != 'Unconfined') && "
            + each("!has(c.securityContext.appArmorProfile) || c.securityContext.appArmorProfile.type != 'Unconfined'"),
            "AppArmor may not be Unconfined",
        ),
        (
            "(!has(variables.podSecurity.seLinuxOptions) || (!has(variables.podSecurity.seLinuxOptions.user) && "
            "!has(variables.podSecurity.seLinuxOptions.role) && (!has(variables.podSecurity.seLinuxOptions.type) || "
            f"variables.podSecurity.seLinuxOptions.type in [{selinux}]))) && "
            + each(
                "!has(c.securityContext.seLinuxOptions) || (!has(c.securityContext.seLinuxOptions.user) && "
                "!has(c.securityContext.seLinuxOptions.role) && (!has(c.securityContext.seLinuxOptions.type) || "
                f"c.securityContext.seLinuxOptions.type in [{selinux}]))"
            ),
            "SELinux options may set only an allowed type",
        ),
        (
            f"!has(variables.podSecurity.sysctls) || variables.podSecurity.sysctls.all(s, s.name in [{sysctls}])",
            "only the safe sysctls are allowed",
        ),
    ]
    return variables, [{"expression": e, "message": f"RDMA namespace: {m}"} for e, m in validations]


TOLERATIONS_POLICY = "gpufleet-tenant-tolerations"
POD_RESOURCES = ("pods",)
# Ephemeral containers (`kubectl debug`) reach a running pod through the `pods/ephemeralcontainers` subresource
# (an UPDATE of that subresource, never of `pods`), and an admission rule on `pods` does not match subresources
# (kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/#matching-requests-rules;
# kubernetes.io/docs/concepts/workloads/pods/ephemeral-containers/). A policy that judges containers matches both.
POD_AND_EPHEMERAL_RESOURCES = ("pods", "pods/ephemeralcontainers")
# Taints gpufleet adds to take a node out of service: a node a probe or a detector failed (`gpufleet verify`), and
# a stopped burst group's (model.conventions). Only gpufleet's own daemons and verify's re-probe tolerate them.
OUT_OF_SERVICE_TAINT_KEYS = (conventions.QUARANTINE_KEY, conventions.BURST_STOPPED_TAINT.key)
# A pod created with spec.nodeName skips the scheduler, and the kubelet admits it against NoExecute taints only
# (kubernetes/kubernetes pkg/kubelet/lifecycle/predicate.go, generalFilter: "Kubelet is only interested in the
# NoExecute taint"; k8s.io/api core/v1 TaintEffectNoSchedule lets "pods submitted to Kubelet without going through
# the scheduler" start). Whatever its tolerations, it would run on a quarantined node, a stopped burst group's or a
# tenant's dedicated node, so tenant pods may not set it on CREATE. The scheduler binds through the pods/binding
# subresource (pkg/scheduler/framework/plugins/defaultbinder: Pods(ns).Bind, POST .../pods/{name}/binding), which a
# rule on `pods` does not match (see POD_AND_EPHEMERAL_RESOURCES) and tenants may not create (tenancy.ROLE_RULES).
# An update cannot set the field (kubernetes.io/docs/concepts/workloads/pods/#pod-update-and-replacement).
NODE_NAME_VALIDATION = {
    "expression": "request.operation != 'CREATE' || !has(object.spec.nodeName) || object.spec.nodeName == ''",
    "message": "tenant pods may not set spec.nodeName: the scheduler places them (a pod bound at creation skips "
    "the NoSchedule taints of quarantined, stopped and dedicated nodes)",
}
TOLERATION_VALIDATIONS = [
    {
        "expression": "!has(object.spec.tolerations) || object.spec.tolerations.all(t, has(t.key) && t.key != '' "
        f"&& (t.key != '{TENANT_LABEL}' || (has(t.value) && t.value == namespaceObject.metadata.labels['{TENANT_LABEL}'])))",
        "message": "tenant pods may not tolerate every taint (a toleration needs a key) nor another tenant's "
        "dedicated nodes (tenant=<other>)",
    },
    {
        "expression": "!has(object.spec.tolerations) || object.spec.tolerations.all(t, !has(t.key) || "
        f"!(t.key in [{', '.join(repr(k) for k in OUT_OF_SERVICE_TAINT_KEYS)}]))",
        "message": "tenant pods may not tolerate the taints of nodes gpufleet took out of service ("
        + ", ".join(OUT_OF_SERVICE_TAINT_KEYS)
        + ")",
    },
    NODE_NAME_VALIDATION,
]


VOLUMES_POLICY = "gpufleet-tenant-volumes"
VOLUME_VALIDATIONS = [
    {
        "expression": "!has(object.spec.volumes) || object.spec.volumes.all(v, "
        + " || ".join(f"has(v.{t})" for t in RESTRICTED_VOLUME_TYPES)
        + ")",
        "message": "tenant pods may use only the volume types of Pod Security restricted ("
        + ", ".join(RESTRICTED_VOLUME_TYPES)
        + "): an inline nfs or other network volume would mount a file system past the tenant's own directory",
    }
]


def toleration_validations(shared: Mapping[str, Sequence[str]]) -> list[dict[str, str]]:
    """T11's rules for a cluster: TOLERATION_VALIDATIONS, and with shared time-sliced pools (pool -> the tenants of
    its `sharing.shared_by`), a toleration of a shared pool's taint only in the pods of a tenant it names."""
    if not shared:
        return list(TOLERATION_VALIDATIONS)
    key = conventions.SHARED_POOL_TAINT_KEY
    table = "{" + ", ".join(f"'{p}': [{', '.join(repr(t) for t in ts)}]" for p, ts in sorted(shared.items())) + "}"
    own = f"namespaceObject.metadata.labels['{TENANT_LABEL}']"
    return [
        *TOLERATION_VALIDATIONS,
        {
            "expression": "!has(object.spec.tolerations) || object.spec.tolerations.all(t, !has(t.key) || "
            f"t.key != '{key}' || (has(t.value) && t.value in {table} && {own} in {table}[t.value]))",
            "message": f"tenant pods may tolerate a shared pool's taint ({key}=<pool>) only if the pool's "
            "sharing.shared_by names their tenant",
        },
    ]


def _on_old_object(expression: str, variables: Sequence[Mapping[str, str]]) -> str:
    """`expression` judged on `oldObject`: `object` renamed, each `variables.<name>` spelled out on `oldObject`."""
    for v in variables:
        expression = re.sub(rf"\bvariables\.{v['name']}\b", f"({v['expression']})", expression)
    return re.sub(r"\bobject\b", "oldObject", expression)


def grandfathered(
    validations: Sequence[Mapping[str, str]], variables: Sequence[Mapping[str, str]] = ()
) -> list[dict[str, str]]:
    """`validations` that refuse on UPDATE only what the update introduces.

    A rule matching UPDATE would trap an object admitted before the rule existed: a controller's label or
    finalizer change, or Kueue ungating a pod, would be refused. So an update passes a rule its old object broke
    already, and is refused when it breaks a rule the old object kept. `oldObject` is null on CREATE, where the
    rule holds as written (https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/,
    "Validation expression"). The old side spells the variables out, as variables see `object` only.
    """
    return [
        {
            **rule,
            "expression": f"({rule['expression']}) || "
            f"(request.operation == 'UPDATE' && !({_on_old_object(rule['expression'], variables)}))",
        }
        for rule in validations
    ]


def policy_spec(
    validations: Sequence[Mapping[str, str]],
    variables: Sequence[Mapping[str, str]] = (),
    resources: tuple[str, ...] = POD_RESOURCES,
) -> dict[str, Any]:
    """A ValidatingAdmissionPolicy's spec on `resources`, create and update; updates are grandfathered."""
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": list(resources),
                }
            ]
        },
        **({"variables": [dict(v) for v in variables]} if variables else {}),
        "validations": grandfathered(validations, variables),
    }


def pod_admission_policy(
    resource_names: tuple[str, str],
    policy_name: str,
    labels: dict[str, str],
    validations: list[dict[str, str]],
    namespace_selector: dict[str, Any],
    parent: pulumi.Resource,
    variables: list[dict[str, str]] | None = None,
    resources: tuple[str, ...] = POD_RESOURCES,
) -> None:
    """A ValidatingAdmissionPolicy on `resources` (pods and, for container checks, their ephemeral containers;
    create and update, see `grandfathered`) and its Deny binding to `namespace_selector`."""
    spec: Any = policy_spec(validations, variables or (), resources)
    policy = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
        resource_names[0],
        metadata=k8s.meta.v1.ObjectMetaArgs(name=policy_name, labels=labels),
        spec=spec,
        opts=pulumi.ResourceOptions(parent=parent),
    )
    binding: Any = {
        "policyName": policy_name,
        "validationActions": ["Deny"],
        "matchResources": {"namespaceSelector": namespace_selector},
    }
    k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
        resource_names[1],
        metadata=k8s.meta.v1.ObjectMetaArgs(name=policy_name, labels=labels),
        spec=binding,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[policy]),
    )


class TenantTolerations(pulumi.ComponentResource):
    """T11 for every tenant namespace of a cluster: one ValidatingAdmissionPolicy, bound (Deny) to namespaces
    labelled `tenant`, refusing keyless tolerations and tolerations of another tenant's dedicated-node taint or of
    the quarantine and burst-stopped taints, and pods created with spec.nodeName. Kueue's injected tolerations
    (the GPU taint, the pod's own tenant taint) pass."""

    def __init__(
        self,
        name: str,
        tags: Tags,
        opts: pulumi.ResourceOptions | None = None,
        shared: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        super().__init__("gpufleet:kubernetes:TenantTolerations", name, None, opts)
        pod_admission_policy(
            (f"{name}-policy", f"{name}-binding"),
            TOLERATIONS_POLICY,
            tags.labels(),
            toleration_validations(shared or {}),
            {"matchExpressions": [{"key": TENANT_LABEL, "operator": "Exists"}]},
            self,
        )
        self.register_outputs({})


class TenantVolumes(pulumi.ComponentResource):
    """T16 at admission for every tenant namespace of a cluster: one ValidatingAdmissionPolicy, bound (Deny) to
    namespaces labelled `tenant`, admitting only the volume types of Pod Security restricted. Tenants reach shared
    file systems through their own claims, never an inline volume."""

    def __init__(self, name: str, tags: Tags, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:kubernetes:TenantVolumes", name, None, opts)
        pod_admission_policy(
            (f"{name}-policy", f"{name}-binding"),
            VOLUMES_POLICY,
            tags.labels(),
            VOLUME_VALIDATIONS,
            {"matchExpressions": [{"key": TENANT_LABEL, "operator": "Exists"}]},
            self,
        )
        self.register_outputs({})
