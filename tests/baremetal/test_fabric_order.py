"""A first `up` of the fabric objects: each custom resource after whatever creates its CRD, each namespaced object
after its namespace (pulumi-kubernetes fails "no matches for kind" otherwise: pulumi/pulumi-kubernetes#1446,
#1735). The CRD owners are read from the Network Operator chart at the pinned tag (Mellanox/network-operator
v26.4.1, deployment/network-operator/crds and charts/sriov-network-operator/crds) and from the CRDs the operator
applies itself when it reconciles spec.nvIpam (manifests/state-nv-ipam-cni at the same tag)."""

from __future__ import annotations

from typing import Any

import pytest

from components.kubernetes.network_operator import NV_IPAM_READY, NV_IPAM_STATE
from gpufleet.engine.plan import Plan, PlanResource
from model import versions
from tests.baremetal.test_site import _variant
from tests.charts import chart_dir, crd, crd_kinds, operator_crd_kinds
from tests.conftest import write_project

FABRIC = "gpufleet:baremetal:Fabric"
NIC_POLICY = "kubernetes:mellanox.com/v1alpha1:NicClusterPolicy"
NAMESPACE = "kubernetes:core/v1:Namespace"


def _fabric_objects(plan: Plan) -> list[PlanResource]:
    return [r for r in plan.kubernetes_objects() if f"{FABRIC}$" in r.key]


def _group_kind(r: PlanResource) -> tuple[str, str]:
    return r.inputs["apiVersion"].rpartition("/")[0], r.inputs["kind"]


def _network_operator_release(plan: Plan, site: str) -> PlanResource:
    return plan.one("kubernetes:helm.sh/v3:Release", f"{site}-k8s-gpu-network-operator-release")


def _after(plan: Plan, r: PlanResource) -> set[str]:
    """Everything `r` waits for: its dependencies, theirs, and so on."""
    seen: set[str] = set()
    todo = list(r.dependencies)
    while todo:
        key = todo.pop()
        if key not in seen:
            seen.add(key)
            todo.extend(plan.get(key).dependencies)
    return seen


def _check(plan: Plan, site: str) -> None:
    chart_kinds = crd_kinds(chart_dir(versions.NETWORK_OPERATOR))
    runtime_kinds = operator_crd_kinds()
    release = _network_operator_release(plan, site)
    policy = plan.one(NIC_POLICY, f"{site}-k8s-gpu-network-operator-nic-cluster-policy")
    namespaces = {r.inputs["metadata"]["name"]: r for r in plan.find(NAMESPACE) if r.provider == release.provider}
    objects = _fabric_objects(plan)
    assert objects
    for r in objects:
        kind, after = _group_kind(r), _after(plan, r)
        if kind in runtime_kinds:
            assert policy.key in after, f"{kind} created before the operator applied its CRD: {r.key}"
        elif kind[0] == "":  # a built-in kind (the UFM Secret): it needs only its namespace, which the release needs
            assert release.key in after, f"{kind} created before the operator's namespace: {r.key}"
        else:
            assert kind in chart_kinds, f"{kind} has no CRD in the network-operator chart: {r.key}"
            assert release.key in after, f"{kind} created before the chart's CRDs: {r.key}"
        meta = r.inputs["metadata"]
        tenant_ns = meta.get("namespace") or r.inputs.get("spec", {}).get("networkNamespace")
        if tenant_ns in namespaces:
            assert namespaces[tenant_ns].key in after, f"{r.key} before namespace {tenant_ns}"
        elif meta.get("namespace"):
            assert meta["namespace"] in ("network-operator", "default"), f"{r.key}: no namespace {meta['namespace']}"


@pytest.mark.parametrize(("stack", "site"), [("onprem", "dc1"), ("hybrid", "onprem")])
def test_fabric_objects_wait_for_their_crds_and_namespaces(
    example_plans: dict[str, Plan], stack: str, site: str
) -> None:
    _check(example_plans[stack], site)


@pytest.fixture(scope="module")
def variant_plan(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    """The onprem example with a partitioned SR-IOV InfiniBand fabric and a RoCE fabric (test_site._variant)."""
    from gpufleet.engine.synth import synth

    return synth(write_project(tmp_path_factory.mktemp("variant"), _variant()), "test")


def test_sriov_and_partitioned_fabrics_wait_for_their_crds_and_namespaces(variant_plan: Plan) -> None:
    _check(variant_plan, "dc1")


def test_nic_cluster_policy_completes_only_once_nv_ipam_crds_are_applied(example_plans: dict[str, Plan]) -> None:
    """IPPool's CRD comes from the operator at run time, so depending on the Helm release is not enough: the
    NicClusterPolicy carries pulumi-kubernetes' `pulumi.com/waitFor` on the nv-ipam state, whose name and values
    are those of the policy's status at the pinned tag (crds/mellanox.com_nicclusterpolicies.yaml)."""
    policy = example_plans["onprem"].one(NIC_POLICY, "dc1-k8s-gpu-network-operator-nic-cluster-policy")
    annotations = policy.inputs["metadata"]["annotations"]
    assert annotations["pulumi.com/waitFor"] == NV_IPAM_READY
    assert int(annotations["pulumi.com/timeoutSeconds"]) >= 600
    assert NV_IPAM_READY == "jsonpath={.status.appliedStates[?(@.name=='state-nv-ipam-cni')].state}=ready"
    doc = crd(chart_dir(versions.NETWORK_OPERATOR) / "crds" / "mellanox.com_nicclusterpolicies.yaml")
    status = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
    applied = status["appliedStates"]["items"]["properties"]
    assert {"name", "state"} <= set(applied) and "ready" in applied["state"]["enum"]
    assert NV_IPAM_STATE == "state-nv-ipam-cni"
    assert ("nv-ipam.nvidia.com", "IPPool") in operator_crd_kinds()
    assert ("nv-ipam.nvidia.com", "IPPool") not in crd_kinds(chart_dir(versions.NETWORK_OPERATOR))


def test_fabric_networks_go_only_to_tenants_with_a_namespace_on_the_site(synth_config: Any) -> None:
    """A tenant without quota on the site has no namespace there: no network may be created into it."""
    from tests.conftest import example_config

    config = example_config("onprem")
    estate = config["gpufleet:estate"]
    estate["tenants"].append({"name": "elsewhere", "gpu_quota": {}, "members": ["oidc:x"]})
    plan = synth_config(config)
    spaces = {r.inputs["spec"]["networkNamespace"] for r in plan.find("kubernetes:mellanox.com/v1alpha1:IPoIBNetwork")}
    assert spaces == {"research", "product"}
