"""Rule tenant-networkpolicy-enforced over the example plans: their tenant NetworkPolicies land on clusters whose
CNI enforces them, and the rule notices when that stops being true.

EKS: "Enable the network policy parameter for the add-on" ({"enableNetworkPolicy": "true"},
https://docs.aws.amazon.com/eks/latest/userguide/cni-network-policy-configure.html); elsewhere the CNI the stack
file declares (https://kubernetes.io/docs/tasks/administer-cluster/network-policy-provider/).
"""

from __future__ import annotations

import copy

from gpufleet.engine.plan import Plan
from gpufleet.review import check
from model.load import read_stack
from tests.conftest import ROOT

RULE = "tenant-networkpolicy-enforced"


def _findings(plan: Plan, config: dict[str, object]) -> list[str]:
    return [f.message for f in check.run(plan, {"segmentation": {RULE: config}}, only={RULE})]


def _config(stack: str) -> dict[str, object]:
    spec = read_stack(ROOT, stack).estate()
    pack = next(p for p in check.packs() if p.name == "segmentation")
    return dict(check.pack_config(spec, pack)[RULE])


def test_examples_pass_with_the_config_their_stack_files_write(example_plans: dict[str, Plan]) -> None:
    for stack in ("aws-train", "onprem", "hybrid"):
        assert _findings(example_plans[stack], _config(stack)) == [], stack
    assert _config("hybrid")["networkPolicyCni"] == {"onprem-k8s": "calico", "cloud-k8s": "vpc-cni"}


def test_eks_vpc_cni_without_enable_network_policy_is_flagged(example_plans: dict[str, Plan]) -> None:
    plan = copy.deepcopy(example_plans["aws-train"])
    addon = plan.one("aws:eks/addon:Addon", "use1-cluster-vpc-cni")
    addon.inputs["configurationValues"] = '{"enableNetworkPolicy": "false"}'
    assert _findings(plan, _config("aws-train")) == [
        'the vpc-cni add-on of EKS cluster train-prod-use1 does not set enableNetworkPolicy "true"'
    ]


def test_eks_cluster_without_a_managed_vpc_cni_is_flagged(example_plans: dict[str, Plan]) -> None:
    plan = copy.deepcopy(example_plans["aws-train"])
    plan.resources = [r for r in plan.resources if r.name != "use1-cluster-vpc-cni"]
    (message,) = _findings(Plan(plan.project, plan.stack, plan.resources), _config("aws-train"))
    assert "EKS cluster train-prod-use1 has no vpc-cni add-on" in message and "agents" in message


def test_bare_metal_cluster_with_an_undeclared_or_non_enforcing_cni_is_flagged(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["onprem"]
    (undeclared,) = _findings(plan, {"networkPolicyCni": {}})
    assert "tenant namespaces product, research (Kubernetes provider dc1-k8s)" in undeclared
    (flannel,) = _findings(plan, {"networkPolicyCni": {"dc1-k8s": "none"}})
    assert "the cluster's CNI (none) enforces no NetworkPolicy" in flannel
