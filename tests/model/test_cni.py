"""A site hosting tenants runs a CNI that enforces their NetworkPolicies (model/cni.py).

"Network policies are implemented by the network plugin ... Creating a NetworkPolicy resource without a controller
that implements it will have no effect." (https://kubernetes.io/docs/concepts/services-networking/network-policies/)
EKS enforces them only with the vpc-cni add-on's `enableNetworkPolicy: "true"`
(https://docs.aws.amazon.com/eks/latest/userguide/cni-network-policy-configure.html).
"""

from __future__ import annotations

from typing import Any

import pytest

from model.cni import ENFORCING, enforces_network_policy, hosts_tenants, site_cni
from model.load import SpecError, parse_estate
from tests.conftest import example_estate

SRC = "stacks/Pulumi.test.yaml"
CNI = "config.gpufleet:estate.sites[0].kubernetes.network_policy_cni"


def _problems(estate: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as err:
        parse_estate(estate, SRC)
    return err.value.problems


def test_examples_run_an_enforcing_cni_wherever_tenants_live() -> None:
    for stack in ("aws-train", "onprem", "hybrid"):
        spec = parse_estate(example_estate(stack), SRC)
        for site in spec.sites:
            if hosts_tenants(spec, site):
                assert enforces_network_policy(site), (stack, site.name)
    hybrid = parse_estate(example_estate("hybrid"), SRC)
    assert site_cni(hybrid.site("cloud")) == "vpc-cni"  # the cluster gpufleet creates: it manages the add-on
    assert site_cni(hybrid.site("onprem")) == "calico"


def test_bare_metal_site_with_tenants_must_declare_its_cni() -> None:
    estate = example_estate("onprem")
    del estate["sites"][0]["kubernetes"]["network_policy_cni"]
    (problem,) = _problems(estate)
    assert problem.startswith(f"{SRC}: {CNI}: site dc1 hosts tenants")
    assert "calico, cilium, antrea, kube-router, or none" in problem and "vpc-cni" not in problem


def test_a_cni_that_enforces_no_network_policy_cannot_host_tenants() -> None:
    estate = example_estate("onprem")
    estate["sites"][0]["kubernetes"]["network_policy_cni"] = "none"  # e.g. flannel
    (problem,) = _problems(estate)
    assert problem.startswith(f"{SRC}: {CNI}: site dc1's CNI enforces no NetworkPolicy")
    estate["tenants"] = []  # no tenants there: nothing relies on NetworkPolicies
    parse_estate(estate, SRC)


def test_vpc_cni_is_not_a_bare_metal_cni() -> None:
    estate = example_estate("onprem")
    estate["sites"][0]["kubernetes"]["network_policy_cni"] = "vpc-cni"
    (problem,) = _problems(estate)
    assert problem.startswith(f"{SRC}: {CNI}: the Amazon VPC CNI runs only on EC2 nodes")


def test_a_created_eks_cluster_leaves_the_cni_to_gpufleet() -> None:
    estate = example_estate("aws-train")
    estate["sites"][0]["kubernetes"]["network_policy_cni"] = "calico"
    (problem,) = _problems(estate)
    assert problem.startswith(f"{SRC}: {CNI}: site use1 creates its EKS cluster")


def test_an_adopted_eks_cluster_declares_its_cni() -> None:
    estate = example_estate("aws-train")
    estate["sites"][0]["cluster"]["adopt_name"] = "shared-prod"
    (problem,) = _problems(estate)
    assert problem.startswith(f"{SRC}: {CNI}: site use1 hosts tenants") and "vpc-cni" in problem
    estate["sites"][0]["kubernetes"]["network_policy_cni"] = "vpc-cni"
    assert enforces_network_policy(parse_estate(estate, SRC).sites[0])


def test_every_enforcing_cni_names_where_it_says_so() -> None:
    assert set(ENFORCING) == {"calico", "cilium", "antrea", "kube-router", "vpc-cni"}
    assert all(url.startswith("https://") for url in ENFORCING.values())
