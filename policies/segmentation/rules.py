"""Segmentation: who can reach what. Default-deny network policies per tenant namespace (with DNS) on a cluster whose
CNI enforces them, no allow-all policies, no internet ingress on security groups, the EFA security group open only to itself, nodes private,
the EKS endpoint private or restricted, IMDSv2 with hop limit 1, and storage that is not public.
Check-list items T5, A1-A3, A7, A10, A13 of docs/checklist.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pulumi_policy import PolicyResource, ReportViolation, ResourceValidationArgs, StackValidationArgs

from model.cni import ENFORCING as ENFORCING_CNIS
from model.cni import K8S_PROVIDER_TYPE
from model.conventions import FABRIC_TAG, POOL_LABEL, POOL_TAG
from policies.common import (
    EKS_CLUSTER,
    LAUNCH_TEMPLATE,
    MANDATORY,
    NODE_GROUP,
    S3_BUCKET_POLICY,
    S3_BUCKETS,
    S3_PUBLIC_ACCESS_BLOCK,
    SECURITY_GROUP,
    SG_EGRESS_RULE,
    SG_INGRESS_RULE,
    SG_RULE,
    SUBNET,
    TENANTS_SCHEMA,
    as_dict,
    as_list,
    attached_to,
    config,
    expected_tenants,
    get,
    in_namespace,
    is_false,
    is_open_cidr,
    is_true,
    k8s_name,
    k8s_namespace,
    namespace_of_tenant,
    objects,
    plain,
    resource_policy,
    schema,
    stack_policy,
    tenant_namespaces,
)
from policies.segmentation.standalone_pods import standalone_pod_problems

PACK_NAME = "segmentation"
DEFAULT_ENFORCEMENT = MANDATORY

# -- T5 -----------------------------------------------------------------------------------------------------


def _is_default_deny(props: Mapping[str, Any]) -> bool:
    spec = as_dict(props.get("spec"))
    selector = spec.get("podSelector")
    types = {str(t) for t in as_list(spec.get("policyTypes"))}
    return (
        isinstance(selector, Mapping)
        and not selector.get("matchLabels")
        and not selector.get("matchExpressions")
        and {"Ingress", "Egress"} <= types
        and not spec.get("ingress")
        and not spec.get("egress")
    )


def _is_port(value: Any, number: int) -> bool:
    """Ports arrive as ints from a Plan but as floats from the engine (protobuf Struct numbers)."""
    try:
        return float(value) == number
    except (TypeError, ValueError):
        return False


def _allows_dns(props: Mapping[str, Any]) -> bool:
    for rule in as_list(get(props, "spec.egress")):
        for port in as_list(as_dict(rule).get("ports")):
            p = as_dict(port)
            if (_is_port(p.get("port"), 53) or p.get("port") in ("dns", "dns-tcp")) and p.get("protocol", "UDP") in (
                "UDP",
                "TCP",
            ):
                return True
    return False


def tenant_default_deny(args: StackValidationArgs, report: ReportViolation) -> None:
    for tenant in expected_tenants(args):
        ns = namespace_of_tenant(args, tenant)
        if ns is None:
            report(f"tenant {tenant} has no namespace (so no network policies)", None)
            continue
        policies = in_namespace(args.resources, ns, "NetworkPolicy")
        if not any(_is_default_deny(p.props) for p in policies):
            report(f"namespace {ns} (tenant {tenant}) has no default-deny ingress+egress NetworkPolicy", None)
        if not any(_allows_dns(p.props) for p in policies):
            report(f"namespace {ns} (tenant {tenant}) has no NetworkPolicy allowing DNS (port 53) egress", None)


EKS_ADDON = "aws:eks/addon:Addon"


def _enables_network_policy(addon: PolicyResource) -> bool:
    values = addon.props.get("configurationValues")
    try:
        doc = json.loads(values) if isinstance(values, str) else values
    except ValueError:
        return False
    return str(as_dict(doc).get("enableNetworkPolicy", "")).lower() == "true"


def tenant_networkpolicy_enforced(args: StackValidationArgs, report: ReportViolation) -> None:
    """T5: tenant NetworkPolicies land on a cluster whose CNI enforces them. On an EKS cluster of the stack, the
    vpc-cni add-on the stack manages sets enableNetworkPolicy "true" (without it EKS stores the policies and
    enforces none: EKS user guide, cni-network-policy-configure); on any other cluster (bare metal, adopted EKS)
    the CNI the stack file declares (`networkPolicyCni`, by Kubernetes provider name) is one that enforces them.
    Where that CNI leaves standalone pods outside every policy (vpc-cni), an untrusted tenant's namespace refuses
    pods without a controller owner at admission."""
    tenant_ns = set(tenant_namespaces(args.resources))
    by_provider: dict[str, tuple[str, set[str]]] = {}
    for np in objects(args.resources, "NetworkPolicy"):
        ns = k8s_namespace(np.props)
        if ns in tenant_ns and np.provider is not None:
            by_provider.setdefault(np.provider.urn, (np.provider.name, set()))[1].add(str(ns))
    if not by_provider:
        return
    addons = {
        str(a.props.get("clusterName")): a
        for a in args.resources
        if a.resource_type == EKS_ADDON and a.props.get("addonName") == "vpc-cni"
    }
    for cluster, addon in addons.items():
        if not _enables_network_policy(addon):
            report(f'the vpc-cni add-on of EKS cluster {cluster} does not set enableNetworkPolicy "true"', addon.urn)
    declared = as_dict(config(args, "networkPolicyCni", {}))
    providers = {r.urn: r for r in args.resources if r.resource_type == K8S_PROVIDER_TYPE}
    for urn, (name, namespaces) in sorted(by_provider.items()):
        where = f"tenant namespaces {', '.join(sorted(namespaces))} (Kubernetes provider {name})"
        provider = providers.get(urn)
        eks = next((d for d in provider.dependencies if d.resource_type == EKS_CLUSTER), None) if provider else None
        if eks is not None:
            cluster = str(eks.props.get("name") or eks.name)
            if cluster not in addons:
                report(
                    f"{where}: EKS cluster {cluster} has no vpc-cni add-on turning NetworkPolicy enforcement on", urn
                )
            for problem in standalone_pod_problems(args.resources, where, "vpc-cni", namespaces):
                report(problem, urn)
            continue
        cni = declared.get(name)
        if cni is None:
            report(
                f"{where}: the cluster's CNI is not declared, so nothing shows their NetworkPolicies are enforced", urn
            )
        elif cni not in ENFORCING_CNIS:
            report(f"{where}: the cluster's CNI ({cni}) enforces no NetworkPolicy", urn)
        else:
            for problem in standalone_pod_problems(args.resources, where, str(cni), namespaces):
                report(problem, urn)


def _open_peer(peer: Any) -> bool:
    block = as_dict(as_dict(peer).get("ipBlock"))
    return bool(block) and is_open_cidr(block.get("cidr")) and not block.get("except")


def no_allow_all_networkpolicy(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """An empty rule (`{}`) or an open ipBlock in an ingress rule lets everything in."""
    name = k8s_name(args.props, args.name)
    for direction, peer_key in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(as_list(get(args.props, f"spec.{direction}"))):
            r = as_dict(rule)
            if not r.get(peer_key) and not r.get("ports"):
                report(f"NetworkPolicy {name} spec.{direction}[{i}] is empty: it allows all {direction}", None)
            if direction == "ingress" and any(_open_peer(p) for p in as_list(r.get(peer_key))):
                report(f"NetworkPolicy {name} spec.ingress[{i}] admits 0.0.0.0/0", None)


# -- A13 ----------------------------------------------------------------------------------------------------


def _open_cidrs(rule: Mapping[str, Any]) -> list[str]:
    cidrs = [*as_list(rule.get("cidrBlocks")), *as_list(rule.get("ipv6CidrBlocks"))]
    cidrs += [c for c in (rule.get("cidrIpv4"), rule.get("cidrIpv6")) if c]
    return [str(c) for c in cidrs if is_open_cidr(c)]


def sg_no_public_ingress(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type == SECURITY_GROUP:
        rules = [as_dict(r) for r in as_list(args.props.get("ingress"))]
    elif args.resource_type == SG_RULE:
        rules = [dict(args.props)] if args.props.get("type") == "ingress" else []
    else:
        rules = [dict(args.props)]
    for rule in rules:
        open_ = _open_cidrs(rule)
        if open_:
            ports = f"{rule.get('fromPort', rule.get('ipProtocol', ''))}-{rule.get('toPort', '')}"
            report(f"ingress from {open_} (ports {ports}) on security group {args.name}", None)


_EFA_WORD = re.compile(r"(^|[^a-z])efa([^a-z]|$)")


def is_efa_security_group(r: PolicyResource) -> bool:
    """The EFA security group, by convention: tagged with its `fabric` (AWS fabrics are EFA), or its name,
    description or Name tag has the word `efa`."""
    tags = as_dict(r.props.get("tags"))
    if tags.get(FABRIC_TAG):
        return True
    texts = [r.name, r.props.get("name"), r.props.get("namePrefix"), r.props.get("description"), tags.get("Name")]
    return any(_EFA_WORD.search(str(t).lower()) for t in texts if t)


def _normalise_rule(rule: Mapping[str, Any]) -> dict[str, Any]:
    """One shape for inline rules and separate rule resources: a reference to the rule's own group is `self`."""
    out = dict(rule)
    ref = out.pop("sourceSecurityGroupId", None) or out.pop("referencedSecurityGroupId", None)
    if ref is not None and ref == rule.get("securityGroupId"):
        out["self"] = True
    elif ref is not None:
        out["securityGroups"] = [*as_list(out.get("securityGroups")), ref]
    return out


def _self_only(rule: Mapping[str, Any]) -> bool:
    broader = (
        as_list(rule.get("cidrBlocks"))
        + as_list(rule.get("ipv6CidrBlocks"))
        + as_list(rule.get("prefixListIds"))
        + as_list(rule.get("securityGroups"))
        + [rule.get(k) for k in ("cidrIpv4", "cidrIpv6", "prefixListId") if rule.get(k)]
    )
    return is_true(rule.get("self")) and not broader


def _all_protocols(rule: Mapping[str, Any]) -> bool:
    return str(rule.get("protocol", rule.get("ipProtocol"))) in ("-1", "all")


def efa_sg_self_only(args: StackValidationArgs, report: ReportViolation) -> None:
    """EFA needs all-protocol ingress and egress to the group itself, and nothing broader (AWS EFA SG guide)."""
    for sg in (r for r in args.resources if r.resource_type == SECURITY_GROUP and is_efa_security_group(r)):
        rules: dict[str, list[dict[str, Any]]] = {
            "ingress": [_normalise_rule(as_dict(x)) for x in as_list(sg.props.get("ingress"))],
            "egress": [_normalise_rule(as_dict(x)) for x in as_list(sg.props.get("egress"))],
        }
        for r in attached_to(args.resources, sg):
            if sg not in r.dependencies:
                continue
            if r.resource_type == SG_RULE and r.props.get("type") in rules:
                rules[str(r.props["type"])].append(_normalise_rule(r.props))
            elif r.resource_type == SG_INGRESS_RULE:
                rules["ingress"].append(_normalise_rule(r.props))
            elif r.resource_type == SG_EGRESS_RULE:
                rules["egress"].append(_normalise_rule(r.props))
        for direction, found in rules.items():
            for rule in found:
                if not _self_only(rule):
                    shown = {k: v for k, v in rule.items() if k != "securityGroupId"}
                    report(
                        f"EFA security group {sg.name} has a {direction} rule broader than itself: {plain(shown)}",
                        sg.urn,
                    )
            if not any(_self_only(rule) and _all_protocols(rule) for rule in found):
                report(f"EFA security group {sg.name} lacks an all-protocol {direction} rule to itself", sg.urn)


# -- A7 -----------------------------------------------------------------------------------------------------


def nodes_private(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type == LAUNCH_TEMPLATE:
        for i, nic in enumerate(as_list(args.props.get("networkInterfaces"))):
            if is_true(as_dict(nic).get("associatePublicIpAddress")):
                report(f"launch template {args.name} networkInterfaces[{i}] associates a public IP", None)
    elif args.resource_type == SUBNET:
        if is_true(args.props.get("mapPublicIpOnLaunch")):
            report(f"subnet {args.name} maps public IPs on launch", None)
    elif args.resource_type == NODE_GROUP:
        access = as_dict(args.props.get("remoteAccess"))
        if access and not as_list(access.get("sourceSecurityGroupIds")):
            report(f"node group {args.name} allows SSH from anywhere (remoteAccess without source groups)", None)


# -- A3 -----------------------------------------------------------------------------------------------------


def eks_endpoint_restricted(args: ResourceValidationArgs, report: ReportViolation) -> None:
    vpc = as_dict(args.props.get("vpcConfig"))
    if not is_true(vpc.get("endpointPrivateAccess")):
        report(f"EKS cluster {args.name} does not enable the private endpoint", None)
    if is_false(vpc.get("endpointPublicAccess")):
        return
    cidrs = [str(c) for c in as_list(vpc.get("publicAccessCidrs"))]
    if not cidrs:
        report(f"EKS cluster {args.name} has a public endpoint open to 0.0.0.0/0 (no publicAccessCidrs)", None)
    elif any(is_open_cidr(c) for c in cidrs):
        report(f"EKS cluster {args.name} public endpoint allows {cidrs}", None)


# -- A1 / A2 ------------------------------------------------------------------------------------------------


def launch_template_pool(name: str, props: Mapping[str, Any], pools: list[str]) -> str | None:
    """The node pool a launch template belongs to: its gpufleet.io/pool tag, else its name `<pool>-...`."""
    tags = as_dict(props.get("tags"))
    for key in (POOL_LABEL, POOL_TAG):
        if tags.get(key):
            return str(tags[key])
    for pool in sorted(pools, key=len, reverse=True):
        for candidate in (name, props.get("name"), props.get("namePrefix")):
            if candidate and (
                candidate == pool or str(candidate).startswith(f"{pool}-") or f"-{pool}-" in str(candidate)
            ):
                return pool
    return None


def imds_v2(args: ResourceValidationArgs, report: ReportViolation) -> None:
    exceptions = [str(p) for p in config(args, "imdsHopLimitExceptions", [])]
    meta = as_dict(args.props.get("metadataOptions"))
    if meta.get("httpTokens") != "required":
        report(
            f"launch template {args.name} does not require IMDSv2 (metadataOptions.httpTokens={meta.get('httpTokens')})",
            None,
        )
    hop = meta.get("httpPutResponseHopLimit")
    pool = launch_template_pool(args.name, args.props, exceptions)
    allowed = 2 if pool in exceptions else 1
    if hop is None or int(hop) > allowed:
        why = f"pool {pool} is an IMDS exception" if pool in exceptions else "pods must not reach instance credentials"
        report(f"launch template {args.name} hop limit is {hop}; at most {allowed} ({why})", None)


# -- A10 ----------------------------------------------------------------------------------------------------


PAB_FLAGS = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")


def public_access_block(args: ResourceValidationArgs, report: ReportViolation) -> None:
    off = [f for f in PAB_FLAGS if not is_true(args.props.get(f))]
    if off:
        report(f"public access block {args.name} leaves {off} off", None)


def _denies_insecure_transport(policy: Any) -> bool:
    if isinstance(policy, str):
        try:
            policy = json.loads(policy)
        except ValueError:
            return False
    for st in as_list(as_dict(policy).get("Statement")):
        s = as_dict(st)
        cond = as_dict(as_dict(s.get("Condition")).get("Bool"))
        if s.get("Effect") == "Deny" and str(cond.get("aws:SecureTransport")).lower() == "false":
            return True
    return False


def storage_not_public(args: StackValidationArgs, report: ReportViolation) -> None:
    """Every bucket has a full public access block and a bucket policy denying non-TLS requests."""
    for bucket in (r for r in args.resources if r.resource_type in S3_BUCKETS):
        attached = attached_to(args.resources, bucket)
        pabs = [r for r in attached if r.resource_type == S3_PUBLIC_ACCESS_BLOCK]
        if not any(all(is_true(p.props.get(f)) for f in PAB_FLAGS) for p in pabs):
            report(f"bucket {bucket.name} has no public access block with all four flags on", bucket.urn)
        policies = [r for r in attached if r.resource_type == S3_BUCKET_POLICY]
        if not any(_denies_insecure_transport(p.props.get("policy")) for p in policies):
            report(f"bucket {bucket.name} has no bucket policy denying aws:SecureTransport=false", bucket.urn)


IMDS_CONFIG = schema(
    imdsHopLimitExceptions={
        "type": "array",
        "items": {"type": "string"},
        "description": "Node pools whose pods need instance metadata (hop limit 2 allowed).",
    }
)

ALL = [
    stack_policy(
        tenant_default_deny,
        name="tenant-default-deny",
        description="T5: each tenant namespace has a default-deny ingress+egress NetworkPolicy and a DNS allow (EKS BPG network; CKV2_K8S_6; Kyverno add-network-policy).",
        enforcement=MANDATORY,
        config_schema=schema(tenants=TENANTS_SCHEMA),
        remediation="The tenant bundle must create the default-deny and allow-DNS policies; report a gpufleet bug if missing.",
    ),
    stack_policy(
        tenant_networkpolicy_enforced,
        name="tenant-networkpolicy-enforced",
        description='T5: tenant NetworkPolicies are enforced: EKS clusters of the stack run the vpc-cni add-on with enableNetworkPolicy "true" (EKS user guide, cni-network-policy-configure); other clusters declare a CNI that enforces NetworkPolicy (kubernetes.io network-policy-provider tasks); on vpc-cni, which applies no policy to standalone pods (EKS user guide, cni-network-policy, Considerations), untrusted tenant namespaces refuse pods without a controller owner.',
        enforcement=MANDATORY,
        config_schema=schema(
            networkPolicyCni={
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "Kubernetes provider name -> the CNI its cluster runs (written from kubernetes.network_policy_cni).",
            }
        ),
        remediation="Set kubernetes.network_policy_cni of a bare-metal or adopted site to a CNI that enforces NetworkPolicy (calico, cilium, antrea, kube-router, vpc-cni with enableNetworkPolicy); gpufleet manages vpc-cni on clusters it creates. Keep the untrusted tenant's admission policy gpufleet creates (gpufleet-untrusted-<tenant>), which refuses standalone pods on vpc-cni.",
    ),
    resource_policy(
        no_allow_all_networkpolicy,
        name="no-allow-all-networkpolicy",
        description="T5: no NetworkPolicy rule that is empty (allow-all) or admits 0.0.0.0/0 (Kyverno restrict-networkpolicy-empty-podselector).",
        kinds=("NetworkPolicy",),
        enforcement=MANDATORY,
        remediation="List explicit peers; for egress use tenants[].egress_cidrs with specific CIDRs.",
    ),
    resource_policy(
        sg_no_public_ingress,
        name="sg-no-public-ingress",
        description="A13: no security group ingress from 0.0.0.0/0 or ::/0 (CKV_AWS_24/25/260/277).",
        types=(SECURITY_GROUP, SG_RULE, SG_INGRESS_RULE),
        enforcement=MANDATORY,
        remediation="Reach nodes through the private network, SSM or the EKS endpoint; restrict CIDRs in the stack file.",
    ),
    stack_policy(
        efa_sg_self_only,
        name="efa-sg-self-only",
        description="A13/A14: the EFA security group allows all protocols to and from itself and nothing broader (AWS EFA SG guide; EKS sec-group-reqs).",
        enforcement=MANDATORY,
        remediation="Keep the fabric's EFA security group self-referencing only; put other access on the cluster security group.",
    ),
    resource_policy(
        nodes_private,
        name="nodes-private",
        description="A7: nodes in private subnets without public IPs and without SSH from anywhere (CKV_AWS_88/100/130).",
        types=(LAUNCH_TEMPLATE, SUBNET, NODE_GROUP),
        enforcement=MANDATORY,
        remediation="Use private subnets (vpc.private_subnet_ids / the created VPC); use SSM instead of SSH.",
    ),
    resource_policy(
        eks_endpoint_restricted,
        name="eks-endpoint-restricted",
        description="A3: the EKS API endpoint is private, or public only to listed CIDRs (CKV_AWS_38/39).",
        types=(EKS_CLUSTER,),
        enforcement=MANDATORY,
        remediation="Set cluster.endpoint_public_cidrs to the CIDRs that need the API, or leave it empty (private only).",
    ),
    resource_policy(
        imds_v2,
        name="imds-v2-hop-limit",
        description="A1/A2: launch templates require IMDSv2 with hop limit 1, or 2 for pools in the IMDS exceptions (CKV_AWS_79/341; EKS BPG iam).",
        types=(LAUNCH_TEMPLATE,),
        enforcement=MANDATORY,
        config_schema=IMDS_CONFIG,
        remediation="Leave pods_need_imds false; if pods truly need IMDS, list the pool in policies.imds_hop_limit_exceptions.",
    ),
    resource_policy(
        public_access_block,
        name="s3-public-access-block",
        description="A10: S3 public access blocks turn all four flags on (CKV_AWS_53-56).",
        types=(S3_PUBLIC_ACCESS_BLOCK,),
        enforcement=MANDATORY,
        remediation="Keep all four public-access-block flags true on every bucket.",
    ),
    stack_policy(
        storage_not_public,
        name="storage-not-public",
        description="A10: every S3 bucket has a public access block and a TLS-only bucket policy (CKV2_AWS_6; CKV_AWS_379).",
        enforcement=MANDATORY,
        remediation="Object-tier buckets get these from gpufleet; a bucket without them is a gpufleet bug.",
    ),
]
