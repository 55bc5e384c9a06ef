"""Rules fire on the shapes the components really produce: each case breaks one resource of a synthesized
example plan the way a regression in a component would, and the named rule (and only it) must catch it.
This guards the per-rule fixtures against drifting from the components' actual inputs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from gpufleet.engine.plan import Plan, PlanResource
from gpufleet.review import check
from model.conventions import FABRIC_LABEL
from model.load import ESTATE_KEY, parse_estate
from tests.conftest import ROOT, example_config


@dataclass(frozen=True)
class Break:
    rule: str
    stack: str
    select: Callable[[PlanResource], bool]
    change: Callable[[PlanResource], None]
    id: str


def _type(suffix: str, name_part: str = "") -> Callable[[PlanResource], bool]:
    return lambda r: r.type.endswith(suffix) and name_part in r.name


def _drop_key(*path: str) -> Callable[[PlanResource], None]:
    def change(r: PlanResource) -> None:
        *parents, last = path
        node = r.inputs
        for p in parents:
            node = node[p]
        node.pop(last)

    return change


def _set(path: tuple[str, ...], value: object) -> Callable[[PlanResource], None]:
    def change(r: PlanResource) -> None:
        *parents, last = path
        node = r.inputs
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value

    return change


def _unprotect(r: PlanResource) -> None:
    r.protect = False


def _drop_resource(r: PlanResource) -> None:
    r.type = "gpufleet:test:Dropped"  # the rules no longer see it as what it was


BREAKS = [
    Break("tenant-default-deny", "aws-train", _type("NetworkPolicy", "research-netpol-default-deny"), _drop_resource, "deny-removed"),
    Break("tenant-default-deny", "onprem", _type("NetworkPolicy", "research-netpol-allow-dns"), _drop_resource, "dns-removed"),
    Break("tenant-gpu-quota", "aws-train", _type("ResourceQuota", "research"), _drop_key("spec", "hard", "requests.nvidia.com/gpu"), "gpu-quota"),
    Break("quota-requests-only", "onprem", _type("ResourceQuota", "product"), _set(("spec", "hard", "limits.nvidia.com/gpu"), "8"), "limits-key"),
    Break("default-sa-no-automount", "aws-train", _type("ServiceAccountPatch", "agents"), _set(("automountServiceAccountToken",), True), "automount"),
    Break("namespace-pod-security", "aws-train", _type("core/v1:Namespace", "tenant-agents"), _set(("metadata", "labels", "pod-security.kubernetes.io/enforce"), "privileged"), "privileged-tenant"),
    Break("rdma-namespace-guarded", "aws-train", _type("ValidatingAdmissionPolicyBinding", "research-pod-policy-binding-rdma"), _drop_resource, "binding-removed"),
    Break("tenant-tolerations-guarded", "onprem", _type("ValidatingAdmissionPolicyBinding", "tenant-tolerations-binding"), _drop_resource, "guard-removed"),
    Break("tenant-inline-volumes-guarded", "onprem", _type("ValidatingAdmissionPolicyBinding", "tenant-volumes-binding"), _drop_resource, "guard-removed"),
    Break("tenant-networkpolicy-enforced", "aws-train", _type("ValidatingAdmissionPolicyBinding", "tenant-agents-pod-policy-binding"), _drop_resource, "standalone-pods-admitted"),
    Break("kueue-clusterqueue-pinned", "hybrid", _type("ClusterQueue", "onprem-k8s-kueue-cq-research"), _set(("spec", "namespaceSelector"), {}), "open-selector"),
    Break("rbac-least-privilege", "onprem", _type("rbac.authorization.k8s.io/v1:Role", "research"), _set(("rules",), [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]), "wildcard"),
    Break("efa-sg-self-only", "aws-train", _type("securityGroup:SecurityGroup", "train-efa"), _set(("egress",), [{"protocol": "-1", "fromPort": 0, "toPort": 0, "cidrBlocks": ["0.0.0.0/0"]}]), "open-egress"),
    Break("sg-no-public-ingress", "aws-train", _type("securityGroup:SecurityGroup", "lustre"), _set(("ingress",), [{"protocol": "tcp", "fromPort": 988, "toPort": 988, "cidrBlocks": ["0.0.0.0/0"]}]), "lustre-open"),
    Break("storage-not-public", "aws-train", _type("bucketPolicy:BucketPolicy", "checkpoints"), _drop_resource, "no-tls-policy"),
    Break("eks-endpoint-restricted", "aws-train", _type("eks/cluster:Cluster"), _set(("vpcConfig", "publicAccessCidrs"), ["0.0.0.0/0"]), "open-endpoint"),
    Break("imds-v2-hop-limit", "hybrid", _type("launchTemplate:LaunchTemplate", "burst-h100"), _set(("metadataOptions", "httpPutResponseHopLimit"), 2), "hop-2"),
    Break("stateful-storage-protected", "aws-train", _type("lustreFileSystem:LustreFileSystem"), _unprotect, "fsx-unprotected"),
    Break("gpu-taint", "aws-train", _type("nodeGroup:NodeGroup", "h100"), _set(("taints",), []), "nodegroup"),
    Break("gpu-taint", "onprem", _type("NodePatch", "gpu-r1-01"), _set(("spec", "taints"), []), "node-patch"),
    Break("one-remediator", "aws-train", _type("nodeGroup:NodeGroup", "use1-l40s"), _set(("labels", "gpufleet.io/remediator"), "nvsentinel-janitor"), "second-remediator"),
    Break("efa-placement", "aws-train", _type("launchTemplate:LaunchTemplate", "h100"), _drop_key("placement"), "no-placement-group"),
    Break("efa-single-subnet", "aws-train", _type("nodeGroup:NodeGroup", "h100"), _set(("subnetIds",), ["a-id", "b-id"]), "two-subnets"),
    Break("efa-interface-count", "aws-train", _type("launchTemplate:LaunchTemplate", "h100"), lambda r: r.inputs["networkInterfaces"].extend(r.inputs["networkInterfaces"][1:]), "too-many-efa"),
    Break("operator-driver-site", "aws-train", _type("helm.sh/v3:Release", "gpu-operator"), _set(("values", "driver", "enabled"), True), "eks-driver-on"),
    Break("operator-driver-site", "onprem", _type("helm.sh/v3:Release", "gpu-operator"), _drop_key("values", "driver", "version"), "bm-driver-unpinned"),
    Break("chart-versions-pinned", "hybrid", _type("helm.sh/v3:Release", "onprem-k8s-kueue"), _set(("version",), "latest"), "kueue-latest"),
    Break("kueue-manages-all-jobs", "onprem", _type("helm.sh/v3:Release", "kueue"), _set(("values", "managerConfig", "controllerManagerConfigYaml"), "manageJobsWithoutQueueName: false\n"), "unmanaged"),
    Break("required-tags", "aws-train", _type("nodeGroup:NodeGroup", "use1-l40s"), _drop_key("tags", "cost-center"), "nodegroup-tag"),
    Break("tags-propagate", "hybrid", _type("launchTemplate:LaunchTemplate", "burst-h100"), _set(("tagSpecifications",), []), "no-tag-specs"),
    Break("dedicated-pool-tainted", "aws-train", _type("nodeGroup:NodeGroup", "agents-l40s"), _set(("labels", "node-restriction.kubernetes.io/tenant"), "research"), "wrong-tenant"),
]  # fmt: skip


@pytest.mark.parametrize("brk", BREAKS, ids=[f"{b.rule}-{b.id}" for b in BREAKS])
def test_rule_catches_a_broken_component_resource(brk: Break, example_plans: dict[str, Plan]) -> None:
    plan = Plan.from_dict(example_plans[brk.stack].to_dict())
    targets = [r for r in plan.resources if brk.select(r)]
    assert len(targets) == 1, f"expected one resource to break, found {[r.key for r in targets]}"
    brk.change(targets[0])
    plan = Plan.from_dict(plan.to_dict())
    spec = check.load_spec(ROOT, brk.stack)
    violated = {f.rule for f in check.evaluate(plan, spec).mandatory}
    assert violated == {brk.rule}


def test_fsx_outside_the_efa_subnet_is_advised_against(example_plans: dict[str, Plan]) -> None:
    plan = Plan.from_dict(example_plans["aws-train"].to_dict())
    (fsx,) = plan.find("aws:fsx/lustreFileSystem:LustreFileSystem")
    fsx.inputs["subnetIds"] = ["use1-net-private-us-east-1b-id"]
    found = [f for f in check.evaluate(plan, check.load_spec(ROOT, "aws-train")) if f.rule == "fsx-colocated"]
    assert [f.enforcement for f in found] == ["advisory"]
    assert any(FABRIC_LABEL in r.inputs.get("labels", {}) for r in plan.find("aws:eks/nodeGroup:NodeGroup"))


def test_training_pool_on_efa_type_without_efa_interfaces_is_advised_against(example_plans: dict[str, Plan]) -> None:
    plan = Plan.from_dict(example_plans["aws-train"].to_dict())
    assert not [
        f for f in check.evaluate(plan, check.load_spec(ROOT, "aws-train")) if f.rule == "efa-training-pool-fabric"
    ]
    (lt,) = [r for r in plan.find("aws:ec2/launchTemplate:LaunchTemplate") if "h100" in r.name]
    lt.inputs.pop("networkInterfaces")  # what a pool without a fabric gets: the primary ENA interface only
    found = [
        f for f in check.evaluate(plan, check.load_spec(ROOT, "aws-train")) if f.rule == "efa-training-pool-fabric"
    ]
    assert [f.enforcement for f in found] == ["advisory"] and "h100" in found[0].message


def test_time_slicing_pool_passes_only_while_tainted_for_its_tenant(synth_config: Callable[..., Plan]) -> None:
    config = example_config("aws-train")
    estate = config[ESTATE_KEY]
    pool = next(p for p in estate["sites"][0]["node_pools"] if p["name"] == "l40s")
    pool["dedicated_to"] = "product"
    pool["sharing"] = {"mode": "time-slicing", "replicas": 4}
    estate["tenants"][0]["gpu_quota"].pop("l40s")
    plan = synth_config(config)
    spec = parse_estate(estate, "time-slicing")
    assert check.evaluate(plan, spec).mandatory == []
    (ng,) = [r for r in plan.find("aws:eks/nodeGroup:NodeGroup") if r.name == "use1-l40s-ng"]
    ng.inputs["taints"] = [t for t in ng.inputs["taints"] if t["key"] != "tenant"]
    violated = {f.rule for f in check.evaluate(Plan.from_dict(plan.to_dict()), spec).mandatory}
    assert violated == {"time-slicing-single-tenant", "dedicated-pool-tainted"}
