"""Hand-built Plan resources shaped like the components' (camelCase engine inputs), for per-rule fixtures.

Each builder returns a compliant resource; tests break one field at a time with `**overrides` / `with_`.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from gpufleet.engine.plan import Plan, PlanResource
from model.conventions import (
    DEVICE_PLUGIN_CONFIG_LABEL,
    FABRIC_LABEL,
    GPU_PRESENT_LABEL,
    POOL_LABEL,
    TENANT_NODE_LABEL,
)

AWS_SITE = "gpufleet:index:Estate$gpufleet:aws:Site"
BM_SITE = "gpufleet:index:Estate$gpufleet:baremetal:Site"
AWS_PROVIDER = f"{AWS_SITE}$pulumi:providers:aws::site-aws"
TAGS = {"owner": "ml-platform", "cost-center": "cc-1", "env": "prod", "cluster": "c1", "tenant": "shared"}
COST_LABELS = {f"gpufleet.io/{k}": v for k, v in TAGS.items()}


def res(type_: str, name: str, inputs: dict[str, Any], *, site: str = AWS_SITE, **kw: Any) -> PlanResource:
    return PlanResource(
        key=f"{site}${type_}::{name}", type=type_, name=name, parent=None, custom=True, inputs=inputs, **kw
    )


def with_(r: PlanResource, **changes: Any) -> PlanResource:
    """A copy of `r` with top-level inputs replaced (None deletes) or PlanResource fields set (protect=...)."""
    out = copy.deepcopy(r)
    for k, v in changes.items():
        if k in ("protect", "retain_on_delete", "dependencies", "provider"):
            setattr(out, k, v)
        elif v is None:
            out.inputs.pop(k, None)
        else:
            out.inputs[k] = v
    return out


def plan(*resources: PlanResource) -> Plan:
    provider = PlanResource(AWS_PROVIDER, "pulumi:providers:aws", "site-aws", None, True, {"region": "us-east-1"})
    return Plan(project="gpufleet", stack="test", resources=[provider, *resources])


def k8s(kind: str, name: str, namespace: str | None = None, site: str = AWS_SITE, **body: Any) -> PlanResource:
    meta: dict[str, Any] = {"name": name, **body.pop("metadata", {})}
    if namespace:
        meta["namespace"] = namespace
    api = body.pop("apiVersion", "v1")
    type_ = body.pop("type_", f"kubernetes:core/v1:{kind}")
    return res(
        type_,
        f"{namespace or ''}-{kind}-{name}",
        {"apiVersion": api, "kind": kind, "metadata": meta, **body},
        site=site,
    )


# -- tenancy ----------------------------------------------------------------------------------------------


def namespace(tenant: str = "research", labels: dict[str, str] | None = None) -> PlanResource:
    psa = {f"pod-security.kubernetes.io/{m}": "restricted" for m in ("enforce", "audit", "warn")}
    base = {**psa, "tenant": tenant, **COST_LABELS, "gpufleet.io/tenant": tenant}
    return k8s("Namespace", tenant, metadata={"labels": labels if labels is not None else base})


def quota(ns: str = "research", hard: dict[str, Any] | None = None) -> PlanResource:
    default = {
        "requests.nvidia.com/gpu": 8, "requests.cpu": 256, "requests.memory": "2048Gi", "pods": 500,
        "services": 50, "persistentvolumeclaims": 100, "count/jobs.batch": 500,
    }  # fmt: skip
    return k8s("ResourceQuota", "quota", ns, spec={"hard": hard if hard is not None else default})


def limit_range(ns: str = "research") -> PlanResource:
    limits = [{"type": "Container", "default": {"cpu": "1", "memory": "2Gi"}, "defaultRequest": {"cpu": "500m"}}]
    return k8s("LimitRange", "limits", ns, spec={"limits": limits})


def default_sa(ns: str = "research", automount: Any = False) -> PlanResource:
    return k8s(
        "ServiceAccount",
        "default",
        ns,
        automountServiceAccountToken=automount,
        type_="kubernetes:core/v1:ServiceAccountPatch",
    )


def local_queue(ns: str = "research") -> PlanResource:
    return k8s(
        "LocalQueue",
        ns,
        ns,
        apiVersion="kueue.x-k8s.io/v1beta2",
        type_="kubernetes:kueue.x-k8s.io/v1beta2:LocalQueue",
        spec={"clusterQueue": ns},
    )


def cluster_queue(ns: str = "research", selector: Any = "pinned", covered: list[str] | None = None) -> PlanResource:
    sel = {"matchLabels": {"kubernetes.io/metadata.name": ns}} if selector == "pinned" else selector
    spec: dict[str, Any] = {"resourceGroups": [{"coveredResources": covered or ["cpu", "memory", "nvidia.com/gpu"]}]}
    if sel is not None:
        spec["namespaceSelector"] = sel
    return k8s(
        "ClusterQueue",
        ns,
        apiVersion="kueue.x-k8s.io/v1beta2",
        type_="kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue",
        spec=spec,
    )


def priority_class(name: str = "training") -> PlanResource:
    return k8s(
        "PriorityClass",
        name,
        value=1000,
        apiVersion="scheduling.k8s.io/v1",
        type_="kubernetes:scheduling.k8s.io/v1:PriorityClass",
    )


def role(ns: str = "research", rules: list[dict[str, Any]] | None = None, kind: str = "Role") -> PlanResource:
    default = [{"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["get", "list", "create", "delete"]}]
    return k8s(kind, "tenant", ns if kind == "Role" else None, rules=rules if rules is not None else default,
               apiVersion="rbac.authorization.k8s.io/v1", type_=f"kubernetes:rbac.authorization.k8s.io/v1:{kind}")  # fmt: skip


def role_binding(
    ns: str = "research",
    role_ref: dict[str, str] | None = None,
    kind: str = "RoleBinding",
    labels: dict[str, str] | None = None,
) -> PlanResource:
    ref = role_ref or {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "tenant"}
    subjects = [{"kind": "Group", "name": "oidc:research", "apiGroup": "rbac.authorization.k8s.io"}]
    return k8s(kind, "tenant", ns if kind == "RoleBinding" else None, roleRef=ref, subjects=subjects,
               metadata={"labels": labels or {}}, apiVersion="rbac.authorization.k8s.io/v1",
               type_=f"kubernetes:rbac.authorization.k8s.io/v1:{kind}")  # fmt: skip


def default_deny(ns: str = "research") -> PlanResource:
    return k8s("NetworkPolicy", "default-deny", ns, apiVersion="networking.k8s.io/v1", type_="kubernetes:networking.k8s.io/v1:NetworkPolicy",
               spec={"podSelector": {}, "policyTypes": ["Ingress", "Egress"]})  # fmt: skip


def allow_dns(ns: str = "research", ports: list[dict[str, Any]] | None = None) -> PlanResource:
    to = [
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
        }
    ]
    egress = [
        {
            "to": to,
            "ports": ports if ports is not None else [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
        }
    ]
    return k8s("NetworkPolicy", "allow-dns", ns, apiVersion="networking.k8s.io/v1", type_="kubernetes:networking.k8s.io/v1:NetworkPolicy",
               spec={"podSelector": {}, "policyTypes": ["Egress"], "egress": egress})  # fmt: skip


def netpol(ns: str, name: str, spec: dict[str, Any]) -> PlanResource:
    return k8s(
        "NetworkPolicy",
        name,
        ns,
        apiVersion="networking.k8s.io/v1",
        type_="kubernetes:networking.k8s.io/v1:NetworkPolicy",
        spec=spec,
    )


def k8s_provider(name: str = "site-k8s", site: str = AWS_SITE, cluster: PlanResource | None = None) -> PlanResource:
    """A site's Kubernetes provider; an EKS site's depends on its cluster (the kubeconfig comes from it)."""
    deps = [cluster.key] if cluster is not None else []
    return PlanResource(f"{site}$pulumi:providers:kubernetes::{name}", "pulumi:providers:kubernetes", name, None,
                        True, {"enableServerSideApply": "true"}, dependencies=deps)  # fmt: skip


def vpc_cni_addon(
    cluster: str = "c1-prod-site", values: str | None = '{"enableNetworkPolicy": "true"}'
) -> PlanResource:
    inputs = {"addonName": "vpc-cni", "clusterName": cluster, "addonVersion": "v1.0.0-fixture", "tags": TAGS}
    if values is not None:
        inputs["configurationValues"] = values
    return res("aws:eks/addon:Addon", "site-cluster-vpc-cni", inputs)


def tenant_policies_on(provider: PlanResource, ns: str = "research") -> list[PlanResource]:
    """A tenant namespace and its default-deny policy, sent through `provider`."""
    return [with_(namespace(ns), provider=provider.key), with_(default_deny(ns), provider=provider.key)]


def shared_volume(
    ns: str = "research",
    *,
    driver: str = "fsx.csi.aws.com",
    handle: str = "fs-0123456789abcdef0",
    mountname: str | None = "abcdefgh/tenants/research",
    read_only: bool = False,
    name: str | None = None,
) -> PlanResource:
    """A PersistentVolume pre-bound to a claim in namespace `ns`, shaped like the AWS storage tiers' volumes."""
    csi: dict[str, Any] = {"driver": driver, "volumeHandle": handle}
    if mountname is not None:
        csi["volumeAttributes"] = {
            "dnsname": "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
            "mountname": mountname,
        }
    if read_only:
        csi["readOnly"] = True
    spec = {"csi": csi, "claimRef": {"namespace": ns, "name": "lustre"}, "accessModes": ["ReadWriteMany"]}
    return k8s("PersistentVolume", name or f"lustre-{ns}", spec=spec, type_="kubernetes:core/v1:PersistentVolume")


def tenant_bundle(ns: str = "research") -> list[PlanResource]:
    """Everything the tenancy and segmentation stack rules expect of one tenant."""
    return [namespace(ns), quota(ns), limit_range(ns), default_sa(ns), local_queue(ns), default_deny(ns), allow_dns(ns)]


# -- nodes ------------------------------------------------------------------------------------------------


def node_group(
    pool: str = "h100",
    instance_type: str | None = None,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    max_size: int = 4,
    subnets: list[str] | None = None,
    lt: PlanResource | None = None,
) -> PlanResource:
    default_labels = {POOL_LABEL: pool, GPU_PRESENT_LABEL: "true"}
    inputs: dict[str, Any] = {
        "labels": labels if labels is not None else default_labels,
        "taints": taints
        if taints is not None
        else [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}],
        "scalingConfig": {"minSize": 0, "desiredSize": 1, "maxSize": max_size},
        "subnetIds": subnets or ["subnet-a-id", "subnet-b-id"],
        "launchTemplate": {"id": f"{pool}-lt-id"},
        "tags": {**TAGS, "pool": pool},
    }
    if instance_type:
        inputs["instanceTypes"] = [instance_type]
    deps = [lt.key] if lt is not None else []
    return res("aws:eks/nodeGroup:NodeGroup", f"{pool}-ng", inputs, provider=AWS_PROVIDER, dependencies=deps)


def efa_node_group(
    pool: str = "h100", subnets: list[str] | None = None, lt: PlanResource | None = None
) -> PlanResource:
    labels = {POOL_LABEL: pool, GPU_PRESENT_LABEL: "true", FABRIC_LABEL: "train-efa"}
    return node_group(pool, labels=labels, subnets=subnets or ["efa-subnet-id"], lt=lt)


def dedicated_node_group(pool: str = "agents", tenant: str = "agents", taint_value: str | None = None) -> PlanResource:
    taints = [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"},
        {"key": "tenant", "value": taint_value or tenant, "effect": "NO_SCHEDULE"},
    ]
    return node_group(pool, labels={POOL_LABEL: pool, GPU_PRESENT_LABEL: "true"}, taints=taints)


def node_patch(
    host: str = "gpu-01", labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None
) -> PlanResource:
    default = {POOL_LABEL: "base", GPU_PRESENT_LABEL: "true", **COST_LABELS}
    spec = {
        "taints": taints
        if taints is not None
        else [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    }
    return k8s("Node", host, metadata={"labels": labels if labels is not None else default}, spec=spec,
               type_="kubernetes:core/v1:NodePatch", site=BM_SITE)  # fmt: skip


def kueue_flavor(pool: str, topology: str | None, levels: list[str]) -> list[PlanResource]:
    """A pool's ResourceFlavor, naming `topology`, and that Topology with `levels` then the hostname."""
    api = "kueue.x-k8s.io/v1beta2"
    spec: dict[str, Any] = {"nodeLabels": {POOL_LABEL: pool}}
    if topology:
        spec["topologyName"] = topology
    out = [k8s("ResourceFlavor", pool, apiVersion=api, type_=f"kubernetes:{api}:ResourceFlavor", spec=spec)]
    if topology:
        steps = [{"nodeLabel": lv} for lv in [*levels, "kubernetes.io/hostname"]]
        out.append(
            k8s("Topology", topology, apiVersion=api, type_=f"kubernetes:{api}:Topology", spec={"levels": steps})
        )
    return out


def time_sliced_nodes(dedicated: bool) -> list[PlanResource]:
    labels = {POOL_LABEL: "ts", GPU_PRESENT_LABEL: "true", DEVICE_PLUGIN_CONFIG_LABEL: "ts", **COST_LABELS}
    taints = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    if dedicated:
        labels[TENANT_NODE_LABEL] = "research"
        taints.append({"key": "tenant", "value": "research", "effect": "NoSchedule"})
    config = "version: v1\nsharing:\n  timeSlicing:\n    failRequestsGreaterThanOne: true\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n"
    cm = k8s("ConfigMap", "device-plugin-configs", "gpu-operator", data={"ts": config}, site=BM_SITE)
    return [node_patch("gpu-ts", labels=labels, taints=taints), cm]


# -- AWS --------------------------------------------------------------------------------------------------


def launch_template(
    pool: str = "h100", instance_type: str = "p5.48xlarge", efa: int = 0, hop: int = 1, **overrides: Any
) -> PlanResource:
    nics = [
        {"deviceIndex": 0, "networkCardIndex": 0, "interfaceType": "interface", "associatePublicIpAddress": "false"}
    ]
    nics += [{"deviceIndex": 1, "networkCardIndex": i, "interfaceType": "efa-only"} for i in range(efa)]
    tags = {**TAGS, "pool": pool}
    inputs: dict[str, Any] = {
        "instanceType": instance_type,
        "metadataOptions": {"httpEndpoint": "enabled", "httpTokens": "required", "httpPutResponseHopLimit": hop},
        "tagSpecifications": [{"resourceType": t, "tags": tags} for t in ("instance", "volume", "network-interface")],
        "tags": tags,
    }
    if efa:
        inputs["networkInterfaces"] = nics
        inputs["placement"] = {"groupName": "c1-prod-train-efa"}
    inputs.update(overrides)
    return res("aws:ec2/launchTemplate:LaunchTemplate", f"site-{pool}-lt", inputs, provider=AWS_PROVIDER)


def efa_security_group(
    ingress: list[dict[str, Any]] | None = None, egress: list[dict[str, Any]] | None = None
) -> PlanResource:
    own = [{"protocol": "-1", "fromPort": 0, "toPort": 0, "self": True}]
    return res(
        "aws:ec2/securityGroup:SecurityGroup",
        "site-train-efa-sg",
        {"description": "EFA fabric train-efa", "ingress": ingress if ingress is not None else own,
         "egress": egress if egress is not None else own, "tags": {**TAGS, "fabric": "train-efa"}},
    )  # fmt: skip


def security_group(name: str = "site-nodes-sg", ingress: list[dict[str, Any]] | None = None) -> PlanResource:
    rule = [{"protocol": "tcp", "fromPort": 443, "toPort": 443, "cidrBlocks": ["10.0.0.0/16"]}]
    return res(
        "aws:ec2/securityGroup:SecurityGroup",
        name,
        {"description": "nodes", "ingress": ingress if ingress is not None else rule, "tags": TAGS},
    )


def eks_cluster(public: bool = True, cidrs: list[str] | None = None, private: bool = True) -> PlanResource:
    vpc: dict[str, Any] = {"endpointPrivateAccess": private, "endpointPublicAccess": public, "subnetIds": ["a", "b"]}
    if cidrs is not None:
        vpc["publicAccessCidrs"] = cidrs
    return res("aws:eks/cluster:Cluster", "site-cluster-eks", {"vpcConfig": vpc, "tags": TAGS})


def subnet(public_ip: bool = False) -> PlanResource:
    return res(
        "aws:ec2/subnet:Subnet",
        "site-private-a",
        {"cidrBlock": "10.0.0.0/20", "mapPublicIpOnLaunch": public_ip, "tags": TAGS},
    )


def bucket(name: str = "datasets", protect: bool = True, retain: bool = True) -> PlanResource:
    return res(
        "aws:s3/bucket:Bucket",
        f"site-{name}",
        {"bucket": f"c1-{name}", "tags": TAGS},
        protect=protect,
        retain_on_delete=retain,
    )


TLS_ONLY = (
    '{"Version": "2012-10-17", "Statement": [{"Sid": "DenyInsecureTransport", "Effect": "Deny", "Principal": "*",'
    ' "Action": "s3:*", "Resource": ["arn:aws:s3:::c1-datasets/*"], "Condition": {"Bool": {"aws:SecureTransport": "false"}}}]}'
)
PAB_ON = {"blockPublicAcls": True, "blockPublicPolicy": True, "ignorePublicAcls": True, "restrictPublicBuckets": True}


def public_access_block(b: PlanResource, **flags: bool) -> PlanResource:
    return res(
        "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
        b.name,
        {"bucket": f"{b.name}-id", **PAB_ON, **flags},
        dependencies=[b.key],
    )


def bucket_policy(b: PlanResource, policy: str = TLS_ONLY) -> PlanResource:
    return res(
        "aws:s3/bucketPolicy:BucketPolicy", b.name, {"bucket": f"{b.name}-id", "policy": policy}, dependencies=[b.key]
    )


def fsx(subnets: list[str] | None = None, protect: bool = True) -> PlanResource:
    return res("aws:fsx/lustreFileSystem:LustreFileSystem", "site-lustre",
               {"subnetIds": subnets or ["efa-subnet-id"], "deploymentType": "PERSISTENT_2", "tags": TAGS},
               protect=protect, retain_on_delete=protect)  # fmt: skip


def helm_release(
    chart: str = "gpu-operator",
    version: str | None = "v26.7.0",
    values: dict[str, Any] | None = None,
    site: str = AWS_SITE,
) -> PlanResource:
    inputs: dict[str, Any] = {"chart": chart, "namespace": "gpu-operator", "values": values or {}}
    if version is not None:
        inputs["version"] = version
    return res("kubernetes:helm.sh/v3:Release", f"{chart}-release", inputs, site=site)


EKS_OPERATOR_VALUES = {"driver": {"enabled": False}, "toolkit": {"enabled": False}}
BM_OPERATOR_VALUES = {"driver": {"enabled": True, "version": "580.126.20"}, "toolkit": {"enabled": True}}
# a bare-metal site whose host image brings the driver (kubernetes.driver_managed_by: host): toolkit only
BM_HOST_DRIVER_VALUES = {"driver": {"enabled": False}, "toolkit": {"enabled": True}}


def kueue_release(manage_all: bool = True) -> PlanResource:
    config = f"apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nmanageJobsWithoutQueueName: {str(manage_all).lower()}\n"
    return helm_release("kueue", "0.0.1-fixture", {"managerConfig": {"controllerManagerConfigYaml": config}})


# -- tenant S3 identity -------------------------------------------------------------------------------------


def tenant_role(tenant: str = "agents") -> PlanResource:
    return res("aws:iam/role:Role", f"site-tenant-{tenant}-s3-role", {"tags": {**TAGS, "tenant": tenant}})


def role_policy(role: PlanResource, statements: list[dict[str, Any]], suffix: str = "s3") -> PlanResource:
    doc = json.dumps({"Version": "2012-10-17", "Statement": statements})
    return res("aws:iam/rolePolicy:RolePolicy", f"{role.name}-{suffix}", {"policy": doc, "role": f"{role.name}-id"},
               dependencies=[role.key])  # fmt: skip


def s3_objects(bucket: str, prefix: str, actions: list[str] | None = None) -> dict[str, Any]:
    return {"Effect": "Allow", "Action": actions or ["s3:GetObject"], "Resource": f"arn:aws:s3:::{bucket}/{prefix}*"}
