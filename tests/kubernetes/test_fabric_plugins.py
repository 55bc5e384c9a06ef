"""EFA device plugin only where an EFA fabric exists; Network Operator and NicClusterPolicy only with IB/RoCE."""

from __future__ import annotations

import json
from typing import Any

from components.kubernetes.efa import efa_plugin_values
from components.kubernetes.network_operator import (
    network_operator_values,
    nic_cluster_policy_spec,
)
from gpufleet.engine.plan import Plan
from model import versions
from model.conventions import FABRIC_LABEL
from model.rdma import rdma_shared_resource_name
from model.spec import AwsSite, EfaFabric, InfinibandFabric
from tests.kubernetes.helpers import estate, release, releases

NCP_TYPE = "kubernetes:mellanox.com/v1alpha1:NicClusterPolicy"


# -- EFA ------------------------------------------------------------------------------------------------


def test_efa_plugin_installed_for_the_efa_fabric_on_its_nodes(example_plans: dict[str, Plan]) -> None:
    r = release(example_plans["aws-train"], "efa-train-efa")
    assert r.inputs["chart"] == versions.AWS_EFA_DEVICE_PLUGIN.name
    assert r.inputs["version"] == versions.AWS_EFA_DEVICE_PLUGIN.version
    assert r.inputs["repositoryOpts"] == {"repo": versions.AWS_EFA_DEVICE_PLUGIN.repository}
    assert r.inputs["namespace"] == "kube-system"
    assert r.inputs["values"]["nodeSelector"] == {FABRIC_LABEL: "train-efa"}
    # the h100 pool on the fabric is shared, so only the GPU taint (and a quarantine) needs tolerating
    assert r.inputs["values"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
        {"key": "gpufleet.io/quarantine", "operator": "Exists", "effect": "NoSchedule"},
    ]


def test_no_efa_plugin_without_an_efa_fabric(example_plans: dict[str, Plan]) -> None:
    assert releases(example_plans["onprem"], versions.AWS_EFA_DEVICE_PLUGIN.name) == []


def test_efa_plugin_tolerates_the_tenant_taint_of_a_dedicated_efa_pool() -> None:
    def dedicate(raw: dict[str, Any]) -> None:
        raw["sites"][0]["node_pools"][0]["dedicated_to"] = "research"
        for tenant in raw["tenants"]:
            if tenant["name"] != "research":
                tenant["gpu_quota"].pop("h100", None)

    spec = estate("aws-train", dedicate)
    site = spec.sites[0]
    assert isinstance(site, AwsSite)
    fabric = site.fabrics[0]
    assert isinstance(fabric, EfaFabric)
    tolerations = efa_plugin_values(site, fabric)["tolerations"]
    assert {"key": "tenant", "operator": "Equal", "value": "research", "effect": "NoSchedule"} in tolerations
    # agents-l40s is not on the fabric: its tenant taint is not tolerated
    assert all(t.get("value") != "agents" for t in tolerations)


# -- Network Operator -----------------------------------------------------------------------------------


def test_network_operator_and_policy_on_the_infiniband_site(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["onprem"]
    r = release(plan, "network-operator")
    assert r.inputs["chart"] == versions.NETWORK_OPERATOR.name
    assert r.inputs["version"] == versions.NETWORK_OPERATOR.version
    assert r.inputs["namespace"] == "network-operator"
    # the GPU Operator already runs NFD on this cluster
    assert r.inputs["values"]["nfd"] == {"enabled": False, "deployNodeFeatureRules": True}
    (policy,) = plan.find(NCP_TYPE)
    assert policy.inputs["apiVersion"] == "mellanox.com/v1alpha1"
    assert policy.inputs["metadata"]["name"] == "nic-cluster-policy"
    assert r.key in policy.dependencies  # the CRD comes with the chart
    # NodeFeatureRules need the NFD CRDs the GPU Operator's chart installs
    assert release(plan, "gpu-operator").key in r.dependencies


def test_no_network_operator_without_infiniband_or_roce(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["aws-train"]
    assert releases(plan, versions.NETWORK_OPERATOR.name) == []
    assert plan.find(NCP_TYPE) == []


def test_nic_cluster_policy_shares_the_fabrics_hcas_over_rdma_and_ipoib(example_plans: dict[str, Plan]) -> None:
    (policy,) = example_plans["onprem"].find(NCP_TYPE)
    spec = policy.inputs["spec"]
    fabric = estate("onprem").sites[0].fabrics[0]
    assert isinstance(fabric, InfinibandFabric)
    config = json.loads(spec["rdmaSharedDevicePlugin"]["config"])
    assert config["configList"] == [
        {
            "resourceName": rdma_shared_resource_name(fabric),
            "rdmaHcaMax": 63,
            "selectors": {"vendors": ["15b3"], "deviceIDs": fabric.hca_device_ids},
        }
    ]
    assert set(spec["secondaryNetwork"]) == {"multus", "cniPlugins", "ipoib"}
    assert spec["nvIpam"]["enableWebhook"] is False
    assert "sriovDevicePlugin" not in spec
    expr = spec["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
    assert expr["matchExpressions"] == [{"key": FABRIC_LABEL, "operator": "In", "values": ["ib"]}]
    driver = spec["ofedDriver"]
    assert driver["version"] == versions.DOCA_DRIVER
    assert driver["upgradePolicy"]["maxParallelUpgrades"] == 1
    assert driver["upgradePolicy"]["drain"]["enable"] is True
    for component in ("multus", "cniPlugins", "ipoib"):
        assert spec["secondaryNetwork"][component]["version"] == versions.NETWORK_OPERATOR_COMPONENTS_TAG


def _roce(raw: dict[str, Any]) -> None:
    raw["sites"][0]["fabrics"] = [{"kind": "roce", "name": "roce", "interfaces": ["ens1f0np0"]}]
    raw["sites"][0]["node_pools"][0]["fabric"] = "roce"


def test_roce_fabric_uses_the_sriov_network_operator_not_the_shared_plugin() -> None:
    spec = estate("onprem", _roce)
    site = spec.sites[0]
    assert network_operator_values(site, nfd_elsewhere=True)["sriovNetworkOperator"] == {"enabled": True}
    policy = nic_cluster_policy_spec(site)
    assert "rdmaSharedDevicePlugin" not in policy
    assert "sriovDevicePlugin" not in policy  # the SR-IOV Network Operator runs its own
    assert "ipoib" not in policy["secondaryNetwork"]


def test_infiniband_without_ipoib_gets_no_ipoib_cni() -> None:
    def no_ipoib(raw: dict[str, Any]) -> None:
        raw["sites"][0]["fabrics"][0]["ipoib"] = False

    spec = estate("onprem", no_ipoib)
    assert "ipoib" not in nic_cluster_policy_spec(spec.sites[0])["secondaryNetwork"]
    onprem = estate("onprem")
    assert network_operator_values(onprem.sites[0], nfd_elsewhere=True)["sriovNetworkOperator"] == {"enabled": False}


def test_hybrid_runs_each_sites_own_stack(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["hybrid"]
    operators = releases(plan, versions.GPU_OPERATOR.name)
    by_driver = sorted(bool(r.inputs["values"]["driver"]["enabled"]) for r in operators)
    assert by_driver == [False, True]  # the cloud site on EKS AMIs, the on-prem site with the pinned driver
    assert len(releases(plan, versions.AWS_EFA_DEVICE_PLUGIN.name)) == 1  # burst-efa on the cloud site
    assert len(releases(plan, versions.NETWORK_OPERATOR.name)) == 1  # ib on the on-prem site
    assert len(plan.find(NCP_TYPE)) == 1
    for r in [*operators, *plan.find(NCP_TYPE)]:
        assert r.provider is not None  # each site's own kubernetes provider
    providers = {r.provider for r in operators}
    assert len(providers) == 2
