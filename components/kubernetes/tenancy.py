"""TenantBundle: one tenant's namespace on one site, with its quota, limits, network policy, RBAC and trust level.

There is one bundle per tenant per site where the tenant has GPU quota (`queues.tenants_on_site`). Its Kueue queues
are built by `components.kubernetes.kueue.Kueue`. Checks T1-T9 and T11 of docs/checklist.md.

- An untrusted tenant (agents running generated code) has quota only on pools dedicated to it, never
  time-sliced. The schema enforces both.
- Kueue manages every pod in tenant namespaces and injects the dedicated flavor's nodeSelector and toleration.
  So untrusted pods land on the tenant's own nodes.
- Built-in admission policies back this up (admission.py; the CNI's limits: model.cni).
- An untrusted tenant's egress is denied except DNS, its own namespace, `egress_cidrs` and the S3 it declares.
- RDMA pods need IPC_LOCK, which Pod Security baseline and restricted refuse (check P6). An RDMA namespace
  enforces `privileged`, and an admission policy enforces baseline plus IPC_LOCK instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.kubernetes import tenant_s3
from components.kubernetes.admission import (
    POD_AND_EPHEMERAL_RESOURCES,
    POD_RESOURCES,
    pod_admission_policy,
    rdma_pod_policy,
    untrusted_validations,
)
from model import conventions, dra, kinds, queues
from model.cni import skips_standalone_pods
from model.conventions import RDMA_LABEL, TRUST_LABEL, pod_security_labels
from model.kinds.facts import StorageEgress
from model.spec import (
    SHARED_FILE_SYSTEM_KINDS,
    AwsSite,
    EstateSpec,
    Site,
    Tenant,
)
from model.tags import Tags

RBAC_API_GROUP = "rbac.authorization.k8s.io"
READ = ["get", "list", "watch"]
WRITE = [*READ, "create", "update", "patch", "delete"]

# Object-count quota (MTB-PL1-CC-FNS-2). No LoadBalancer or NodePort services: they open the tenant to the
# outside (MTB-PL1-BC-HI-1); a platform ingress is the way in.
OBJECT_COUNTS: dict[str, str] = {
    "pods": "500",
    "count/jobs.batch": "500",
    "services": "50",
    "services.loadbalancers": "0",
    "services.nodeports": "0",
    "persistentvolumeclaims": "100",
    "configmaps": "200",
    "secrets": "200",
}
DEFAULT_LIMITS = {"cpu": "4", "memory": "16Gi"}
DEFAULT_REQUESTS = {"cpu": "1", "memory": "4Gi"}

# Namespaced RBAC of tenant members (T7): explicit verbs and resources only. Not granted: pods/exec,
# pods/attach, pods/portforward, nodes/proxy, roles/rolebindings (no bind/escalate/impersonate either), and
# only read access to resourcequotas, limitranges and networkpolicies.
ROLE_RULES: tuple[dict[str, Any], ...] = (
    {
        "apiGroups": [""],
        "resources": ["pods", "services", "configmaps", "secrets", "persistentvolumeclaims"],
        "verbs": WRITE,
    },
    {
        "apiGroups": [""],
        "resources": ["pods/log", "events", "serviceaccounts", "resourcequotas", "limitranges"],
        "verbs": READ,
    },
    {"apiGroups": ["apps"], "resources": ["deployments", "statefulsets"], "verbs": WRITE},
    {"apiGroups": ["apps"], "resources": ["replicasets"], "verbs": READ},
    {"apiGroups": ["batch"], "resources": ["jobs", "cronjobs"], "verbs": WRITE},
    {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": WRITE},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["localqueues", "workloads"], "verbs": READ},
    {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": READ},
    {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": READ},
)
# On a site with rack-scale pools a gang's pods share one NVIDIA ComputeDomain, which its user creates in the
# namespace (NVIDIA/k8s-dra-driver-gpu README at versions.NVIDIA_DRA_DRIVER; model.dra).
COMPUTE_DOMAIN_RULE: dict[str, Any] = {
    "apiGroups": [dra.COMPUTE_DOMAIN_API.partition("/")[0]],
    "resources": ["computedomains"],
    "verbs": WRITE,
}


def role_rules(site: Site) -> tuple[dict[str, Any], ...]:
    """The tenant-member Role's rules on `site`: ROLE_RULES, and ComputeDomains where a pool is rack-scale."""
    return (*ROLE_RULES, COMPUTE_DOMAIN_RULE) if dra.rack_scale_pools(site) else ROLE_RULES


def storage_egress(site: Site) -> list[StorageEgress]:
    """Storage endpoints tenant pods may reach, derived from the site's tiers by its kind (model.kinds)."""
    return kinds.of(site).storage_egress()


def namespace_labels(tags: Tags, tenant: Tenant) -> dict[str, str]:
    psa = pod_security_labels(tenant.pod_security)
    rdma = {}
    if tenant.rdma:  # enforcement moves to the RDMA admission policy (baseline + IPC_LOCK)
        psa.update(pod_security_labels("privileged", ("enforce",)))
        rdma = {RDMA_LABEL: "true"}
    return {
        **tags.labels(tenant=tenant.name, cost_center=tenant.cost_center),
        queues.MANAGED_NAMESPACE_LABEL: tenant.name,
        TRUST_LABEL: tenant.trust,
        **rdma,
        **psa,
    }


def resource_quota_hard(spec: EstateSpec, site: Site, tenant: Tenant) -> dict[str, str]:
    """ResourceQuota `hard`: GPUs only as `requests.<resource>` (extended resources allow no `limits.`); CPU and
    memory as model.queues.cpu_memory_ceiling allows them on the site."""
    cpu, gib = queues.cpu_memory_ceiling(site, tenant)
    memory = f"{gib}Gi"
    hard = {
        "requests.cpu": str(cpu),
        "limits.cpu": str(cpu),
        "requests.memory": memory,
        "limits.memory": memory,
        **{f"requests.{name}": str(n) for name, n in sorted(queues.gpu_quota_ceiling(spec, site, tenant).items())},
        **OBJECT_COUNTS,
        # No claims on a shared file system the tenant may not mount (its StorageClass is named after the tier):
        # https://kubernetes.io/docs/concepts/policy/resource-quotas/#storage-resource-quota
        **{
            f"{t.name}.storageclass.storage.k8s.io/persistentvolumeclaims": "0"
            for t in site.storage
            if t.kind in SHARED_FILE_SYSTEM_KINDS and not tenant.mounts(t.name)
        },
    }
    return hard


@dataclass(frozen=True)
class TenantBundleArgs:
    spec: EstateSpec
    site: Site
    tenant: Tenant
    tags: Tags


class TenantBundle(pulumi.ComponentResource):
    """A tenant's Namespace (tenant, cost and Pod Security labels), ResourceQuota, LimitRange, NetworkPolicies
    (default deny, DNS, same namespace, storage, egress CIDRs, S3), Role and RoleBinding for its member groups,
    the namespace's `default` ServiceAccount without token automount, the `s3-access` ServiceAccount of a tenant
    granted S3 on an AWS site, and for an untrusted tenant a ValidatingAdmissionPolicy pinning its pods.

    The tenant namespace is retained on delete: removing a tenant from the spec must not delete its
    PersistentVolumeClaims with it; an administrator deletes the namespace once its data is safe.
    """

    namespace: k8s.core.v1.Namespace

    def __init__(self, name: str, args: TenantBundleArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:kubernetes:TenantBundle", name, None, opts)
        self._name = name
        self._tenant = args.tenant
        self._ns = args.tenant.name
        self._labels = args.tags.labels(tenant=args.tenant.name, cost_center=args.tenant.cost_center)
        self.namespace = self._namespace(args.tags)
        self._in_ns = pulumi.ResourceOptions(parent=self, depends_on=[self.namespace])
        self.resource_quota = self._resource_quota(args.spec, args.site)
        self.limit_range = self._limit_range()
        self.network_policies = self._network_policies(args.site)
        self.role, self.role_binding = self._rbac(args.site)
        self.default_service_account = self._default_service_account()
        aws = kinds.of(args.site).aws_site
        if aws is not None and tenant_s3.has_s3_access(args.spec, aws, args.tenant):
            self._s3_access(aws)
        if args.tenant.trust == "untrusted":
            runtime_class = args.site.kubernetes.sandbox_runtime_class
            validations = untrusted_validations(self._tenant, runtime_class, skips_standalone_pods(args.site))
            self._pod_admission_policy("untrusted", validations)
        if args.tenant.rdma:
            variables, validations = rdma_pod_policy()  # judges every container, ephemeral ones too
            self._pod_admission_policy("rdma", validations, variables, POD_AND_EPHEMERAL_RESOURCES)
        self.register_outputs({"namespace": self.namespace.metadata.name})

    def _meta(self, name: str) -> k8s.meta.v1.ObjectMetaArgs:
        return k8s.meta.v1.ObjectMetaArgs(name=name, namespace=self._ns, labels=self._labels)

    def _namespace(self, tags: Tags) -> k8s.core.v1.Namespace:
        return k8s.core.v1.Namespace(
            f"{self._name}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=self._ns, labels=namespace_labels(tags, self._tenant)),
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=True),
        )

    def _resource_quota(self, spec: EstateSpec, site: Site) -> k8s.core.v1.ResourceQuota:
        return k8s.core.v1.ResourceQuota(
            f"{self._name}-quota",
            metadata=self._meta("tenant-quota"),
            spec={"hard": resource_quota_hard(spec, site, self._tenant)},
            opts=self._in_ns,
        )

    def _limit_range(self) -> k8s.core.v1.LimitRange:
        spec: Any = {"limits": [{"type": "Container", "default": DEFAULT_LIMITS, "defaultRequest": DEFAULT_REQUESTS}]}
        return k8s.core.v1.LimitRange(
            f"{self._name}-limits", metadata=self._meta("tenant-limits"), spec=spec, opts=self._in_ns
        )

    def _policy(self, suffix: str, spec: Any) -> k8s.networking.v1.NetworkPolicy:
        return k8s.networking.v1.NetworkPolicy(
            f"{self._name}-netpol-{suffix}", metadata=self._meta(suffix), spec=spec, opts=self._in_ns
        )

    def _network_policies(self, site: Site) -> dict[str, k8s.networking.v1.NetworkPolicy]:
        everyone: dict[str, Any] = {}
        policies = {
            "default-deny": self._policy(
                "default-deny", {"podSelector": everyone, "policyTypes": ["Ingress", "Egress"]}
            ),
            "allow-dns": self._policy(
                "allow-dns",
                {
                    "podSelector": everyone,
                    "policyTypes": ["Egress"],
                    "egress": [
                        {
                            "to": [
                                {
                                    "namespaceSelector": {
                                        "matchLabels": {conventions.NAMESPACE_NAME_LABEL: "kube-system"}
                                    },
                                    "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
                                }
                            ],
                            "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
                        }
                    ],
                },
            ),
            "allow-same-namespace": self._policy(
                "allow-same-namespace",
                {
                    "podSelector": everyone,
                    "policyTypes": ["Ingress", "Egress"],
                    "ingress": [{"from": [{"podSelector": everyone}]}],
                    "egress": [{"to": [{"podSelector": everyone}]}],
                },
            ),
        }
        if self._tenant.trust == "trusted":
            rules = self._storage_rules(site)
            if rules:
                policies["allow-storage"] = self._policy(
                    "allow-storage", {"podSelector": everyone, "policyTypes": ["Egress"], "egress": rules}
                )
        if self._tenant.egress_cidrs:
            policies["allow-egress-cidrs"] = self._policy(
                "allow-egress-cidrs",
                {
                    "podSelector": everyone,
                    "policyTypes": ["Egress"],
                    "egress": [{"to": [{"ipBlock": {"cidr": c}} for c in self._tenant.egress_cidrs]}],
                },
            )
        return policies

    def _storage_rules(self, site: Site) -> list[dict[str, Any]]:
        rules = []
        for e in storage_egress(site):
            if e.cidr is None:
                pulumi.log.warn(
                    f"tenant {self._ns}: storage tier {e.tier} on site {site.name} is at {e.address or 'an unknown'} "
                    "address, which a NetworkPolicy cannot name; add its CIDR to the tenant's egress_cidrs",
                    self,
                )
                continue
            rules.append({"to": [{"ipBlock": {"cidr": e.cidr}}], "ports": list(e.ports)})
        return rules

    def _rbac(self, site: Site) -> tuple[k8s.rbac.v1.Role, k8s.rbac.v1.RoleBinding | None]:
        role = k8s.rbac.v1.Role(
            f"{self._name}-role",
            metadata=self._meta("tenant-member"),
            rules=[
                k8s.rbac.v1.PolicyRuleArgs(api_groups=r["apiGroups"], resources=r["resources"], verbs=r["verbs"])
                for r in role_rules(site)
            ],
            opts=self._in_ns,
        )
        if not self._tenant.members:
            return role, None
        binding = k8s.rbac.v1.RoleBinding(
            f"{self._name}-rolebinding",
            metadata=self._meta("tenant-member"),
            role_ref=k8s.rbac.v1.RoleRefArgs(api_group=RBAC_API_GROUP, kind="Role", name="tenant-member"),
            subjects=[
                k8s.rbac.v1.SubjectArgs(api_group=RBAC_API_GROUP, kind="Group", name=g) for g in self._tenant.members
            ],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.namespace, role]),
        )
        return role, binding

    def _default_service_account(self) -> k8s.core.v1.ServiceAccountPatch:
        # The ServiceAccount controller creates `default` in every new namespace, and pulumi-kubernetes (since
        # 4.29) refuses to create an object that already exists; a server-side-apply patch sets only
        # automountServiceAccountToken whether or not the controller got there first.
        return k8s.core.v1.ServiceAccountPatch(
            f"{self._name}-default-sa",
            metadata=k8s.meta.v1.ObjectMetaPatchArgs(name=conventions.TENANT_SERVICE_ACCOUNT, namespace=self._ns),
            automount_service_account_token=False,
            opts=self._in_ns,
        )

    def _s3_access(self, site: AwsSite) -> None:
        """The service account the tenant's Pod Identity association names, and egress to S3 and the agent.

        No API token is mounted from it: the Pod Identity webhook projects its own token for the agent."""
        k8s.core.v1.ServiceAccount(
            f"{self._name}-s3-access",
            metadata=self._meta(conventions.TENANT_S3_SERVICE_ACCOUNT),
            automount_service_account_token=False,
            opts=self._in_ns,
        )
        self.network_policies["allow-s3"] = self._policy("allow-s3", tenant_s3.s3_egress_policy_spec(site))

    def _pod_admission_policy(
        self,
        purpose: str,
        validations: list[dict[str, str]],
        variables: list[dict[str, str]] | None = None,
        resources: tuple[str, ...] = POD_RESOURCES,
    ) -> None:
        """A ValidatingAdmissionPolicy on the namespace's pods, and its binding (Deny)."""
        suffix = "" if purpose == "untrusted" else f"-{purpose}"  # the untrusted policy keeps its resource names
        pod_admission_policy(
            (f"{self._name}-pod-policy{suffix}", f"{self._name}-pod-policy-binding{suffix}"),
            f"gpufleet-{purpose}-{self._ns}",
            self._labels,
            validations,
            {"matchLabels": {conventions.NAMESPACE_NAME_LABEL: self._ns}},
            self,
            variables,
            resources,
        )
