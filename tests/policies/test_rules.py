"""Every rule has a fixture that passes and one that violates, asserted by rule id through `gpufleet.review.check.run`
(the same policy objects the real CLI loads)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from components.kubernetes.admission import OWNED_POD, VOLUME_VALIDATIONS
from gpufleet.engine.plan import Plan, PlanResource
from gpufleet.review import check
from gpufleet.review.findings import Finding
from model.conventions import (
    FABRIC_LABEL,
    GPU_PRESENT_LABEL,
    POOL_LABEL,
    RACK_LABEL,
    REMEDIATOR_LABEL,
    ROLE_LABEL,
    TENANT_NODE_LABEL,
)
from tests.policies import fixtures as fx


@dataclass
class Case:
    rule: str
    good: list[PlanResource]
    bad: list[PlanResource]
    config: dict[str, Any] = field(default_factory=dict)
    id: str = ""


def bundle_without(kind: str, ns: str = "research") -> list[PlanResource]:
    return [r for r in fx.tenant_bundle(ns) if r.inputs.get("kind") != kind]


def bundle_without_policy(name: str) -> list[PlanResource]:
    return [r for r in fx.tenant_bundle() if r.inputs["metadata"]["name"] != name]


TENANTS = {"tenants": ["research"]}
EKS = fx.with_(fx.eks_cluster(public=False), name="c1-prod-site")
EKS_K8S = fx.k8s_provider(cluster=EKS)
DC_K8S = fx.k8s_provider("dc-k8s", site=fx.BM_SITE)
DC2_K8S = fx.k8s_provider("dc2-k8s", site=fx.BM_SITE)
B = fx.bucket()
EFA_SELF = {"protocol": "-1", "fromPort": 0, "toPort": 0, "self": True}
LT_P5 = fx.launch_template()
LT_RESERVED = fx.with_(
    fx.launch_template(efa=4),
    placement=None,
    capacityReservationSpecification={"capacityReservationTarget": {"capacityReservationId": "cr-0123456789abcdef0"}},
)
LT_EFA_32 = fx.launch_template(efa=32)
LT_G6E = fx.launch_template("small", instance_type="g6e.xlarge")  # no EFA on this type: no fabric to ask for
TRAINING = {POOL_LABEL: "h100", GPU_PRESENT_LABEL: "true", ROLE_LABEL: "training"}
JANITOR = {POOL_LABEL: "h100", GPU_PRESENT_LABEL: "true", REMEDIATOR_LABEL: "nvsentinel-janitor"}
EFA_TRAINING = {**TRAINING, FABRIC_LABEL: "train-efa"}
# A site in Europe (Milan), a Region the EC2 topology prerequisites page does not list: EKS labels no layer there.
MILAN = PlanResource(
    f"{fx.AWS_SITE}$pulumi:providers:aws::milan-aws",
    "pulumi:providers:aws",
    "milan-aws",
    None,
    True,
    {"region": "eu-south-1"},
)
MILAN_P5 = replace(fx.node_group(instance_type="p5.48xlarge", labels=EFA_TRAINING), provider=MILAN.key)
EKS_LEVELS = [f"topology.k8s.aws/network-node-layer-{n}" for n in (1, 2, 3)]
IB_TRAINING_NODES = [fx.node_patch(h, labels={**TRAINING, FABRIC_LABEL: "ib"}) for h in ("gpu-01", "gpu-02")]
R_AGENTS = fx.tenant_role("agents")
UNTRUSTED_NS = fx.namespace("agents", labels={"tenant": "agents", "gpufleet.io/trust": "untrusted"})
S3_LIST = {"Effect": "Allow", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::b", "Condition": {"StringLike": {"s3:prefix": ["agents/in/*"]}}}  # fmt: skip
RDMA_LABELS = {
    "tenant": "research",
    "gpufleet.io/rdma": "true",
    "pod-security.kubernetes.io/enforce": "privileged",
    "pod-security.kubernetes.io/audit": "restricted",
    "pod-security.kubernetes.io/warn": "restricted",
}
RDMA_NS = fx.namespace(labels=RDMA_LABELS)
RDMA_VAP = fx.k8s(
    "ValidatingAdmissionPolicy",
    "gpufleet-rdma-research",
    spec={"validations": [{"expression": "caps: c.securityContext.capabilities ... privileged"}]},
)
RDMA_BINDING = fx.k8s(
    "ValidatingAdmissionPolicyBinding",
    "gpufleet-rdma-research",
    spec={
        "policyName": "gpufleet-rdma-research",
        "validationActions": ["Deny"],
        "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "research"}}},
    },
)
TOL_VAP = fx.k8s(
    "ValidatingAdmissionPolicy",
    "gpufleet-tenant-tolerations",
    spec={
        "validations": [
            {"expression": "!has(object.spec.tolerations) || object.spec.tolerations.all(t, has(t.key))"},
            {"expression": "!has(object.spec.tolerations) || "
             "object.spec.tolerations.all(t, !has(t.key) || !(t.key in ['gpufleet.io/quarantine']))"},
            {"expression": "request.operation != 'CREATE' || !has(object.spec.nodeName)"},
        ]
    },
)  # fmt: skip
# Refuses keyless tolerations but admits one of the quarantine taint: tenant pods would land on nodes that failed.
TOL_VAP_NO_QUARANTINE = fx.with_(
    TOL_VAP, spec={"validations": [TOL_VAP.inputs["spec"]["validations"][i] for i in (0, 2)]}
)
# Refuses the tolerations but admits a pod created with spec.nodeName: it skips the scheduler and so every
# NoSchedule taint, the quarantine taint included.
TOL_VAP_NODE_NAME = fx.with_(TOL_VAP, spec={"validations": TOL_VAP.inputs["spec"]["validations"][:2]})
TOL_BINDING = fx.k8s(
    "ValidatingAdmissionPolicyBinding",
    "gpufleet-tenant-tolerations",
    spec={
        "policyName": "gpufleet-tenant-tolerations",
        "validationActions": ["Deny"],
        "matchResources": {"namespaceSelector": {"matchExpressions": [{"key": "tenant", "operator": "Exists"}]}},
    },
)
VOL_VAP = fx.k8s(
    "ValidatingAdmissionPolicy",
    "gpufleet-tenant-volumes",
    spec={"validations": VOLUME_VALIDATIONS},
)
VOL_BINDING = fx.k8s(
    "ValidatingAdmissionPolicyBinding",
    "gpufleet-tenant-volumes",
    spec={**TOL_BINDING.inputs["spec"], "policyName": "gpufleet-tenant-volumes"},
)
VOL_ALLOWS_NFS = fx.with_(VOL_VAP, spec={"validations": [{"expression": "object.spec.volumes.all(v, has(v.persistentVolumeClaim) || has(v.nfs))"}]})  # fmt: skip
UNTRUSTED_ON_EKS = [fx.with_(r, provider=EKS_K8S.key) for r in (UNTRUSTED_NS, fx.default_deny("agents"))]
OWNED_VAP = fx.k8s("ValidatingAdmissionPolicy", "gpufleet-untrusted-agents", spec={"validations": [{"expression": OWNED_POD}]})  # fmt: skip
OWNED_BINDING = fx.k8s(
    "ValidatingAdmissionPolicyBinding",
    "gpufleet-untrusted-agents",
    spec={
        "policyName": "gpufleet-untrusted-agents",
        "validationActions": ["Deny"],
        "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "agents"}}},
    },
)
CASES = [
    # -- tenancy
    Case("tenant-namespace", fx.tenant_bundle(), [fx.namespace("product")], TENANTS),
    Case("tenant-namespace", fx.tenant_bundle(), [fx.namespace("research"), fx.k8s("Namespace", "research-2", metadata={"labels": {"tenant": "research"}})], id="split"),
    Case("no-default-namespace", [fx.role("research")], [fx.role("default")]),
    Case("quota-requests-only", [fx.quota()], [fx.quota(hard={"limits.nvidia.com/gpu": 4})]),
    Case("tenant-gpu-quota", fx.tenant_bundle(), [*bundle_without("ResourceQuota"), fx.quota(hard={"requests.cpu": 1, "requests.memory": "1Gi"})], TENANTS),
    Case("tenant-gpu-quota", fx.tenant_bundle(), [*bundle_without("ResourceQuota"), fx.quota(hard={"requests.nvidia.com/gpu": 8})], TENANTS, id="no-cpu"),
    Case("tenant-object-counts", fx.tenant_bundle(), [*bundle_without("ResourceQuota"), fx.quota(hard={"requests.nvidia.com/gpu": 8, "requests.cpu": 1, "requests.memory": "1Gi"})], TENANTS),
    Case("tenant-limit-range", fx.tenant_bundle(), bundle_without("LimitRange"), TENANTS),
    Case(
        "namespace-pod-security",
        [fx.namespace(), fx.k8s("Namespace", "gpu-operator", metadata={"labels": {"pod-security.kubernetes.io/enforce": "privileged"}})],
        [fx.namespace(labels={"tenant": "research", "pod-security.kubernetes.io/enforce": "privileged"})],
    ),
    Case(
        "namespace-pod-security",
        [fx.namespace()],
        [fx.k8s("Namespace", "telemetry", metadata={"labels": {"pod-security.kubernetes.io/enforce": "privileged"}})],
        id="unregistered-privileged",
    ),
    Case("tenant-tolerations-guarded", [fx.namespace(), TOL_VAP, TOL_BINDING], [fx.namespace(), TOL_VAP]),
    Case(
        "tenant-tolerations-guarded",
        [fx.namespace(), TOL_VAP, TOL_BINDING],
        [fx.namespace(), TOL_VAP, fx.with_(TOL_BINDING, spec={**TOL_BINDING.inputs["spec"], "validationActions": ["Warn"]})],
        id="warn-only",
    ),
    Case(
        "tenant-tolerations-guarded",
        [fx.namespace(), TOL_VAP, TOL_BINDING],
        [fx.namespace(), TOL_VAP_NO_QUARANTINE, TOL_BINDING],
        id="quarantine-tolerated",
    ),
    Case(
        "tenant-tolerations-guarded",
        [fx.namespace(), TOL_VAP, TOL_BINDING],
        [fx.namespace(), TOL_VAP_NODE_NAME, TOL_BINDING],
        id="node-name-allowed",
    ),
    Case("tenant-inline-volumes-guarded", [fx.namespace(), VOL_VAP, VOL_BINDING], [fx.namespace(), VOL_VAP]),
    Case("tenant-inline-volumes-guarded", [fx.namespace(), VOL_VAP, VOL_BINDING], [fx.namespace(), VOL_ALLOWS_NFS, VOL_BINDING], id="allows-nfs"),
    Case("rdma-namespace-guarded", [RDMA_NS, RDMA_VAP, RDMA_BINDING], [RDMA_NS, RDMA_VAP]),
    Case(
        "rdma-namespace-guarded",
        [RDMA_NS, RDMA_VAP, RDMA_BINDING],
        [RDMA_NS, fx.with_(RDMA_VAP, spec={"validations": [{"expression": "true"}]}), RDMA_BINDING],
        id="policy-checks-nothing",
    ),
    Case("namespace-pod-security", [RDMA_NS], [fx.namespace(labels={**RDMA_LABELS, "pod-security.kubernetes.io/warn": "privileged"})], id="rdma-audit"),
    Case("rbac-least-privilege", [fx.role()], [fx.role(rules=[{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}])]),
    Case("rbac-least-privilege", [fx.role()], [fx.role(rules=[{"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create"]}])], id="exec"),
    Case("rbac-least-privilege", [fx.role()], [fx.role(rules=[{"apiGroups": [""], "resources": ["resourcequotas"], "verbs": ["patch"]}])], id="edit-quota"),
    Case("rbac-least-privilege", [fx.role()], [fx.role(rules=[{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["escalate"]}])], id="escalate"),
    Case("tenant-rbac-namespaced", [fx.role_binding()], [fx.role_binding(role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"})]),
    Case("tenant-rbac-namespaced", [fx.role_binding()], [fx.role_binding(kind="ClusterRoleBinding", labels={"tenant": "research"})], id="cluster-binding"),
    Case("default-sa-no-automount", fx.tenant_bundle(), [*bundle_without("ServiceAccount"), fx.default_sa(automount=True)], TENANTS),
    Case(
        "dedicated-pool-tainted",
        [fx.dedicated_node_group(), fx.node_patch(labels={TENANT_NODE_LABEL: "agents"}, taints=[{"key": "tenant", "value": "agents", "effect": "NoSchedule"}])],
        [fx.node_patch(labels={TENANT_NODE_LABEL: "agents", GPU_PRESENT_LABEL: "true"})],
    ),
    Case(
        "dedicated-pool-tainted",
        [fx.dedicated_node_group()],
        [fx.node_patch(labels={TENANT_NODE_LABEL: "agents"}, taints=[{"key": "tenant", "value": "research", "effect": "NoSchedule"}])],
        id="wrong-tenant",
    ),
    Case("kueue-clusterqueue-pinned", [fx.cluster_queue()], [fx.cluster_queue(selector={})]),
    Case("kueue-clusterqueue-pinned", [fx.cluster_queue()], [fx.cluster_queue(selector=None)], id="missing-selector"),
    Case("kueue-clusterqueue-pinned", [fx.cluster_queue()], [fx.cluster_queue(covered=["cpu", "memory"])], id="no-gpu"),
    Case("kueue-manages-all-jobs", [fx.kueue_release(), fx.helm_release()], [fx.kueue_release(manage_all=False)]),
    Case("kueue-manages-all-jobs", [fx.kueue_release()], [fx.helm_release("kueue", "0.0.1-fixture")], id="no-config"),
    Case("tenant-local-queue", fx.tenant_bundle(), bundle_without("LocalQueue"), TENANTS),
    Case("tenant-volumes-scoped", [fx.namespace(), fx.shared_volume()], [fx.namespace(), fx.shared_volume(mountname="abcdefgh")]),
    Case("tenant-volumes-scoped", [fx.namespace(), fx.shared_volume()], [fx.namespace(), fx.shared_volume(mountname=None)], id="driver-default-root"),
    Case(
        "tenant-volumes-scoped",
        [fx.namespace(), fx.namespace("product"), fx.shared_volume(mountname="abcdefgh/s3", read_only=True), fx.shared_volume("product", mountname="abcdefgh/s3", read_only=True)],
        [fx.namespace(), fx.namespace("product"), fx.shared_volume(mountname="abcdefgh/tenants"), fx.shared_volume("product", mountname="abcdefgh/tenants/product")],
        id="nested-directories",
    ),
    Case(
        "tenant-volumes-scoped",
        [fx.namespace(), fx.shared_volume(driver="efs.csi.aws.com", handle="fs-0123456789abcdef0::fsap-0123456789abcdef0", mountname=None)],
        [fx.namespace(), fx.shared_volume(driver="efs.csi.aws.com", handle="fs-0123456789abcdef0::", mountname=None)],
        id="efs-without-access-point",
    ),
    Case(
        "tenant-volumes-scoped",
        [fx.namespace(), fx.namespace("product"), fx.shared_volume(driver="efs.csi.aws.com", handle="fs-1::fsap-1", mountname=None), fx.shared_volume("product", driver="efs.csi.aws.com", handle="fs-1::fsap-2", mountname=None)],
        [fx.namespace(), fx.namespace("product"), fx.shared_volume(driver="efs.csi.aws.com", handle="fs-1::fsap-1", mountname=None), fx.shared_volume("product", driver="efs.csi.aws.com", handle="efs:fs-1::fsap-1", mountname=None)],
        id="efs-shared-access-point",
    ),
    Case("priority-classes", [*fx.tenant_bundle(), fx.priority_class()], fx.tenant_bundle(), TENANTS),
    # -- segmentation
    # EKS enforces NetworkPolicy only with the vpc-cni add-on's enableNetworkPolicy "true" (EKS user guide,
    # https://docs.aws.amazon.com/eks/latest/userguide/cni-network-policy-configure.html); elsewhere the declared CNI.
    Case("tenant-networkpolicy-enforced", [EKS, EKS_K8S, fx.vpc_cni_addon(), *fx.tenant_policies_on(EKS_K8S)],
         [EKS, EKS_K8S, fx.vpc_cni_addon(values=None), *fx.tenant_policies_on(EKS_K8S)]),
    Case("tenant-networkpolicy-enforced", [EKS, EKS_K8S, fx.vpc_cni_addon(), *fx.tenant_policies_on(EKS_K8S)],
         [EKS, EKS_K8S, *fx.tenant_policies_on(EKS_K8S)], id="no-addon"),
    Case("tenant-networkpolicy-enforced", [DC_K8S, *fx.tenant_policies_on(DC_K8S)],
         [DC2_K8S, *fx.tenant_policies_on(DC2_K8S)], {"networkPolicyCni": {"dc-k8s": "calico", "dc2-k8s": "none"}},
         id="declared"),
    Case("tenant-networkpolicy-enforced", [DC_K8S, *fx.tenant_policies_on(DC_K8S)],
         [DC2_K8S, *fx.tenant_policies_on(DC2_K8S)], {"networkPolicyCni": {"dc-k8s": "cilium"}}, id="undeclared"),
    # The VPC CNI applies no policy to a pod without ownerReferences (EKS user guide, cni-network-policy,
    # Considerations): an untrusted tenant there must be refused such pods; calico polices them.
    Case("tenant-networkpolicy-enforced", [EKS, EKS_K8S, fx.vpc_cni_addon(), *UNTRUSTED_ON_EKS, OWNED_VAP, OWNED_BINDING],
         [EKS, EKS_K8S, fx.vpc_cni_addon(), *UNTRUSTED_ON_EKS], id="untrusted-standalone-pods"),
    Case("tenant-networkpolicy-enforced", [DC_K8S, *(fx.with_(r, provider=DC_K8S.key) for r in (UNTRUSTED_NS, fx.default_deny("agents")))],
         [DC2_K8S, *(fx.with_(r, provider=DC2_K8S.key) for r in (UNTRUSTED_NS, fx.default_deny("agents")))],
         {"networkPolicyCni": {"dc-k8s": "calico", "dc2-k8s": "vpc-cni"}}, id="untrusted-on-calico-or-adopted-eks"),
    Case("tenant-default-deny", fx.tenant_bundle(), bundle_without_policy("default-deny"), TENANTS),
    Case("tenant-default-deny", fx.tenant_bundle(), bundle_without_policy("allow-dns"), TENANTS, id="no-dns"),
    Case("no-allow-all-networkpolicy", [fx.default_deny(), fx.allow_dns()], [fx.netpol("research", "open", {"podSelector": {}, "ingress": [{}]})]),
    Case(
        "no-allow-all-networkpolicy",
        [fx.netpol("research", "egress-gw", {"podSelector": {}, "egress": [{"to": [{"ipBlock": {"cidr": "198.51.100.10/32"}}]}]})],
        [fx.netpol("research", "world", {"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "0.0.0.0/0"}}]}]})],
        id="open-ipblock",
    ),
    Case("sg-no-public-ingress", [fx.security_group()], [fx.security_group(ingress=[{"protocol": "tcp", "fromPort": 22, "toPort": 22, "cidrBlocks": ["0.0.0.0/0"]}])]),
    Case(
        "sg-no-public-ingress",
        [fx.security_group()],
        [fx.res("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule", "ssh", {"securityGroupId": "sg-1", "cidrIpv6": "::/0", "ipProtocol": "tcp", "fromPort": 22, "toPort": 22})],
        id="ipv6-rule",
    ),
    Case("efa-sg-self-only", [fx.efa_security_group()], [fx.efa_security_group(ingress=[EFA_SELF, {"protocol": "tcp", "fromPort": 22, "toPort": 22, "cidrBlocks": ["10.0.0.0/8"]}])]),
    Case("efa-sg-self-only", [fx.efa_security_group()], [fx.efa_security_group(egress=[])], id="no-self-egress"),
    Case("nodes-private", [LT_P5, fx.subnet()], [fx.subnet(public_ip=True)]),
    Case(
        "nodes-private",
        [LT_P5],
        [fx.with_(LT_P5, networkInterfaces=[{"deviceIndex": 0, "interfaceType": "interface", "associatePublicIpAddress": "true"}])],
        id="public-ip",
    ),
    Case("eks-endpoint-restricted", [fx.eks_cluster(cidrs=["203.0.113.0/24"]), fx.eks_cluster(public=False)], [fx.eks_cluster(cidrs=None)]),
    Case("eks-endpoint-restricted", [fx.eks_cluster(cidrs=["203.0.113.0/24"])], [fx.eks_cluster(cidrs=["0.0.0.0/0"])], id="open-cidr"),
    Case("eks-endpoint-restricted", [fx.eks_cluster(public=False)], [fx.eks_cluster(public=False, private=False)], id="no-private"),
    Case("imds-v2-hop-limit", [LT_P5], [fx.launch_template(hop=2)]),
    Case("imds-v2-hop-limit", [fx.launch_template(hop=2)], [fx.launch_template(pool="l40s", hop=2)], {"imdsHopLimitExceptions": ["h100"]}, id="exception"),
    Case("imds-v2-hop-limit", [LT_P5], [fx.with_(LT_P5, metadataOptions={"httpTokens": "optional", "httpPutResponseHopLimit": 1})], id="imdsv1"),
    Case("s3-public-access-block", [fx.public_access_block(B)], [fx.public_access_block(B, blockPublicPolicy=False)]),
    Case("storage-not-public", [B, fx.public_access_block(B), fx.bucket_policy(B)], [B, fx.public_access_block(B)]),
    Case("storage-not-public", [B, fx.public_access_block(B), fx.bucket_policy(B)], [B, fx.bucket_policy(B)], id="no-pab"),
    # -- cost-tags
    Case("required-tags", [fx.security_group()], [fx.with_(fx.security_group(), tags={"owner": "ml-platform", "env": ""})]),
    Case("required-tags", [fx.with_(fx.security_group(), tags={**fx.TAGS, "project": "p"})], [fx.security_group()], {"requiredTags": ["owner", "project"]}, id="configured"),
    Case("tags-propagate", [LT_P5, fx.node_group()], [fx.with_(LT_P5, tagSpecifications=[{"resourceType": "instance", "tags": fx.TAGS}])]),
    Case("tags-propagate", [LT_P5, fx.node_group()], [fx.with_(fx.node_group(), launchTemplate=None)], id="no-launch-template"),
    Case("cost-labels", [fx.namespace(), fx.node_patch()], [fx.namespace(labels={"tenant": "research"})]),
    Case("cost-labels", [fx.node_patch()], [fx.node_patch(labels={POOL_LABEL: "base"})], id="node"),
    Case("budget-cap", [LT_P5, fx.node_group(lt=LT_P5, max_size=4)], [LT_P5, fx.node_group(lt=LT_P5, max_size=8)], {"budgetUsdPerHour": 300}),
    Case("budget-cap", [fx.node_group(instance_type="g6e.12xlarge", max_size=6)], [fx.node_group(instance_type="p5.48xlarge", max_size=6)], {"budgetUsdPerHour": 300}, id="instance-types"),
    Case("gpu-instance-allowlist", [LT_P5], [fx.launch_template(instance_type="g6e.12xlarge")], {"allowedInstanceTypes": ["p5.48xlarge"]}),
    # -- gpu-guardrails
    Case("gpu-taint", [fx.node_group(), fx.node_patch()], [fx.node_group(taints=[])]),
    Case("gpu-taint", [fx.node_patch()], [fx.node_patch(taints=[])], id="node"),
    Case("one-remediator", [fx.with_(fx.node_group(), nodeRepairConfig={"enabled": True}), fx.with_(fx.node_group(labels=JANITOR), nodeRepairConfig={"enabled": False})], [fx.with_(fx.node_group(labels=JANITOR), nodeRepairConfig={"enabled": True})]),
    Case("efa-placement", [fx.launch_template(efa=4), LT_RESERVED], [fx.with_(fx.launch_template(efa=4), placement=None)]),
    Case("efa-single-subnet", [fx.efa_node_group()], [fx.efa_node_group(subnets=["subnet-a-id", "subnet-b-id"])]),
    Case("efa-interface-count", [fx.launch_template(efa=32)], [fx.launch_template(efa=33)]),
    Case("efa-interface-count", [fx.launch_template(instance_type="g6e.12xlarge", efa=1)], [fx.launch_template(instance_type="g6e.xlarge", efa=1)], id="no-efa-type"),
    Case(
        "efa-training-pool-fabric",
        [LT_EFA_32, fx.node_group(labels=TRAINING, lt=LT_EFA_32), LT_G6E, fx.node_group("small", labels=TRAINING, lt=LT_G6E)],
        [LT_P5, fx.node_group(labels=TRAINING, lt=LT_P5)],
    ),
    Case("training-pool-topology", [*IB_TRAINING_NODES, *fx.kueue_flavor("h100", "ib", [RACK_LABEL])], [*IB_TRAINING_NODES, *fx.kueue_flavor("h100", None, [])]),
    # EKS: a p5.48xlarge carries network-node-layer-1..3 (model.catalog.topology; EKS User Guide ml-workload-topology),
    # so its EFA flavor needs their Topology; a g5.48xlarge EC2 describes no topology of has nothing to remedy.
    Case("training-pool-topology", [fx.node_group(instance_type="p5.48xlarge", labels=EFA_TRAINING), *fx.kueue_flavor("h100", "train-efa", EKS_LEVELS)], [fx.node_group(instance_type="p5.48xlarge", labels=EFA_TRAINING), *fx.kueue_flavor("h100", None, [])], id="eks"),
    Case("training-pool-topology", [fx.node_group(instance_type="g5.48xlarge", labels=EFA_TRAINING), *fx.kueue_flavor("h100", None, [])], [*IB_TRAINING_NODES, *fx.kueue_flavor("h100", "gpufleet-hosts", [])], id="eks-unlabelled"),
    Case("training-pool-topology", [MILAN, MILAN_P5, *fx.kueue_flavor("h100", None, [])], [fx.node_group(instance_type="p5.48xlarge", labels=EFA_TRAINING), *fx.kueue_flavor("h100", None, [])], id="eks-unlisted-region"),
    Case("training-pool-topology", [*IB_TRAINING_NODES[:1], *fx.kueue_flavor("h100", None, [])], [*IB_TRAINING_NODES, *fx.kueue_flavor("h100", "gpufleet-hosts", [])], id="hosts-only"),
    Case("fsx-colocated", [fx.efa_node_group(), fx.fsx()], [fx.efa_node_group(), fx.fsx(subnets=["subnet-b-id"])]),
    Case("time-slicing-single-tenant", fx.time_sliced_nodes(dedicated=True), fx.time_sliced_nodes(dedicated=False)),
    Case(
        "time-slicing-fail-requests",
        fx.time_sliced_nodes(dedicated=True),
        [fx.k8s("ConfigMap", "dp", "gpu-operator", data={"ts": "version: v1\nsharing:\n  timeSlicing:\n    resources: []\n"})],
    ),
    Case("operator-driver-site", [fx.helm_release(values=fx.EKS_OPERATOR_VALUES), fx.helm_release(values=fx.BM_OPERATOR_VALUES, site=fx.BM_SITE)], [fx.helm_release(values=fx.BM_OPERATOR_VALUES)]),
    Case("operator-driver-site", [fx.helm_release(values=fx.BM_OPERATOR_VALUES, site=fx.BM_SITE)], [fx.helm_release(values={"driver": {"enabled": True}}, site=fx.BM_SITE)], id="baremetal-unpinned"),
    Case("operator-driver-site", [fx.helm_release(values=fx.BM_OPERATOR_VALUES, site=fx.BM_SITE)], [fx.helm_release(values=fx.BM_HOST_DRIVER_VALUES, site=fx.BM_SITE)], id="baremetal-driver-off-unlisted"),
    Case("operator-driver-site", [fx.helm_release(values=fx.BM_HOST_DRIVER_VALUES, site=fx.BM_SITE)], [fx.helm_release(values=fx.BM_OPERATOR_VALUES, site=fx.BM_SITE)], {"hostDriverReleases": ["gpu-operator-release"]}, id="baremetal-host-driver"),
    Case("chart-versions-pinned", [fx.helm_release(), fx.helm_release("kueue", "0.19.2")], [fx.helm_release(version=None)]),
    Case("chart-versions-pinned", [fx.helm_release()], [fx.helm_release(version="latest")], id="latest"),
    Case("chart-versions-pinned", [fx.helm_release()], [fx.helm_release(version="^26.0")], id="range"),
    Case("stateful-storage-protected", [B, fx.fsx()], [fx.bucket(protect=False)]),
    Case("stateful-storage-protected", [B], [fx.bucket(retain=False)], id="not-retained"),
    # -- tenant S3 (T17)
    Case("tenant-s3-scoped", [R_AGENTS, fx.role_policy(R_AGENTS, [fx.s3_objects("b", "agents/")])], [R_AGENTS, fx.role_policy(R_AGENTS, [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}])]),
    Case("tenant-s3-scoped", [R_AGENTS, fx.role_policy(R_AGENTS, [fx.s3_objects("b", "agents/", ["s3:*"])])], [R_AGENTS, fx.role_policy(R_AGENTS, [fx.s3_objects("*", "", ["s3:Get*"])])], id="any-bucket-arn"),
    Case("tenant-s3-scoped", [R_AGENTS], [R_AGENTS, fx.res("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "full", {"policyArn": "arn:aws:iam::aws:policy/AmazonS3FullAccess"}, dependencies=[R_AGENTS.key])], id="managed-policy"),
    Case("untrusted-tenant-s3-declared", [UNTRUSTED_NS, R_AGENTS, fx.role_policy(R_AGENTS, [fx.s3_objects("b", "agents/in/"), S3_LIST])], [UNTRUSTED_NS, R_AGENTS, fx.role_policy(R_AGENTS, [fx.s3_objects("b", "agents/")])], {"tenantS3Grants": {"agents": ["b/agents/in/"]}}),
    Case("untrusted-tenant-s3-declared", [fx.namespace("agents"), R_AGENTS, fx.role_policy(R_AGENTS, [fx.s3_objects("b", "agents/")])], [UNTRUSTED_NS, R_AGENTS, fx.role_policy(R_AGENTS, [fx.s3_objects("b", "agents/")])], id="undeclared"),
]  # fmt: skip


def pack_of(rule: str) -> str:
    return next(p.name for p in check.packs() for pol in p.policies if pol.name == rule)


def findings(case: Case, resources: list[PlanResource]) -> list[Finding]:
    configs = {pack_of(case.rule): {case.rule: case.config}} if case.config else None
    return check.run(fx.plan(*resources), configs, only={case.rule})


@pytest.mark.parametrize("case", CASES, ids=[f"{c.rule}-{c.id}" if c.id else c.rule for c in CASES])
def test_rule_passes_good_fixture_and_flags_bad_one(case: Case) -> None:
    assert findings(case, case.good) == []
    bad = findings(case, case.bad)
    assert bad, f"{case.rule} did not flag its violating fixture"
    assert {f.rule for f in bad} == {case.rule}
    assert all(f.remediation for f in bad)


# Rules judged on the config gpufleet writes alone (no resource differs between passing and violating): each has
# its own test below instead of a Case.
CONFIG_ONLY = {"budget-priced"}


def test_every_rule_has_a_passing_and_a_violating_fixture() -> None:
    assert {c.rule for c in CASES} | CONFIG_ONLY == check.rule_ids()


def test_budget_priced_names_each_missing_price_instead_of_passing_a_partial_envelope() -> None:
    pack = pack_of("budget-priced")
    resources = fx.plan(LT_P5, fx.node_group(lt=LT_P5, max_size=2))
    priced = {"budgetUsdPerHour": 300, "maxUsdPerHour": 110.08}
    assert check.run(resources, {pack: {"budget-priced": priced}}, only={"budget-priced"}) == []
    missing = {**priced, "unpricedItems": ["tier lustre", "EKS control plane (usw2)"]}
    (finding,) = check.run(resources, {pack: {"budget-priced": missing}}, only={"budget-priced"})
    assert "price missing for tier lustre, EKS control plane (usw2), cannot check the budget" in finding.message
    assert "prices" in finding.remediation and "scaling.max" not in finding.remediation
    # A priced part already over the cap is over whatever is missing: budget-cap reports that, not this rule.
    over = {**missing, "maxUsdPerHour": 310.0}
    assert check.run(resources, {pack: {"budget-priced": over}}, only={"budget-priced"}) == []


def test_advisory_rules_report_advisory_and_mandatory_rules_mandatory() -> None:
    levels = {p.name: p.enforcement_level.value for pack in check.packs() for p in pack.policies if p.enforcement_level}
    for case in CASES:
        for f in findings(case, case.bad):
            assert f.enforcement == levels[case.rule]


def test_enforcement_override_turns_a_mandatory_rule_advisory_or_off() -> None:
    bad = [fx.bucket(protect=False)]
    pack = pack_of("stateful-storage-protected")
    for level, expected in (("advisory", ["advisory"]), ("disabled", [])):
        configs = {pack: {"stateful-storage-protected": {"enforcementLevel": level}}}
        found = check.run(fx.plan(*bad), configs, only={"stateful-storage-protected"})
        assert [f.enforcement for f in found] == expected


def test_provider_default_tags_do_not_satisfy_required_tags() -> None:
    untagged = fx.with_(fx.security_group(), tags=None, provider=fx.AWS_PROVIDER)
    p = fx.plan(untagged)
    p.get(fx.AWS_PROVIDER).inputs["defaultTags"] = (
        '{"tags": {"owner": "a", "cost-center": "b", "env": "c", "cluster": "d", "tenant": "e"}}'
    )
    assert [f.rule for f in check.run(p, only={"required-tags"})] == ["required-tags"]


def test_stack_findings_name_the_resource_they_concern() -> None:
    bad = [fx.efa_security_group(egress=[])]
    (finding,) = check.run(fx.plan(*bad), only={"efa-sg-self-only"})
    assert finding.resource == bad[0].key


def test_budget_cap_leaves_a_type_the_catalog_cannot_price_to_budget_priced_when_gpufleet_named_it() -> None:
    """Without an envelope figure, budget-cap sums GPU node groups at catalog prices. A type the stack prices itself
    is not in the catalog: when gpufleet wrote what is unpriced, budget-priced owns the verdict, not a false
    "no catalog price" here (g6e.12xlarge has no eu-west-1 catalog price)."""
    pack = pack_of("budget-cap")
    group = fx.node_group(instance_type="g6e.12xlarge", max_size=2)
    eu = PlanResource(fx.AWS_PROVIDER, "pulumi:providers:aws", "site-aws", None, True, {"region": "eu-west-1"})
    resources = Plan(project="gpufleet", stack="test", resources=[eu, group])
    alone = check.run(resources, {pack: {"budget-cap": {"budgetUsdPerHour": 300}}}, only={"budget-cap"})
    assert [f.message for f in alone] == [
        f"node group {group.name}: no catalog price for g6e.12xlarge in eu-west-1; the budget cannot be checked"
    ]
    named = {"budgetUsdPerHour": 300, "unpricedItems": ["tier lustre"]}
    assert check.run(resources, {pack: {"budget-cap": named}}, only={"budget-cap"}) == []
