"""A first `up` of the fabric objects: each custom resource after whatever creates its CRD, each namespaced object
after its namespace (pulumi-kubernetes fails "no matches for kind" otherwise: pulumi/pulumi-kubernetes#1446,
#1735). The CRD owners are read from the Network Operator chart at the pinned tag (Mellanox/network-operator
v26.4.1, deployment/network-operator/crds and charts/sriov-network-operator/crds) and from the CRDs the operator
applies itself when it reconciles spec.nvIpam (manifests/state-nv-ipam-cni at the same tag). The order is judged
by the first-up simulation (gpufleet.review.reality.first_up), and a plan that drops one wait is caught."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest

from components.kubernetes.network_operator import NV_IPAM_READY, NV_IPAM_STATE
from gpufleet.charts.cache import ENV_VAR, ChartCache
from gpufleet.charts.render import render_plan
from gpufleet.engine.plan import Plan, PlanResource
from gpufleet.review.reality.first_up import Problem, simulate
from model import versions
from model.load import read_stack
from model.spec import EstateSpec
from tests.baremetal.test_site import _variant
from tests.charts import chart_dir, crd, crd_kinds, operator_crd_kinds
from tests.conftest import ROOT, write_project

FABRIC = "gpufleet:baremetal:Fabric"
NIC_POLICY = "kubernetes:mellanox.com/v1alpha1:NicClusterPolicy"
NAMESPACE = "kubernetes:core/v1:Namespace"


def _fabric_objects(plan: Plan) -> list[PlanResource]:
    return [r for r in plan.kubernetes_objects() if f"{FABRIC}$" in r.key]


def _group_kind(r: PlanResource) -> tuple[str, str]:
    return r.inputs["apiVersion"].rpartition("/")[0], r.inputs["kind"]


def _network_operator_release(plan: Plan, site: str) -> PlanResource:
    return plan.one("kubernetes:helm.sh/v3:Release", f"{site}-k8s-gpu-network-operator-release")


def _simulated(plan: Plan, spec: EstateSpec) -> list[Problem]:
    """The first-up simulation's crd and namespace problems (gpufleet.review.reality.first_up), on the objects
    the fabrics create."""
    result = simulate(plan, spec, render_plan(plan, ChartCache(Path(os.environ[ENV_VAR]))))
    fabric = {r.key for r in _fabric_objects(plan)}
    return [p for p in result.problems if p.check in ("crd", "namespace") and p.resource in fabric]


def _without_dependency_on(plan: Plan, key: str, dropped: str) -> Plan:
    """`plan` with `key` no longer waiting for `dropped`: what a component that forgot its depends_on registers."""
    changed = [
        dataclasses.replace(r, dependencies=[d for d in r.dependencies if d != dropped]) if r.key == key else r
        for r in plan.resources
    ]
    return Plan(plan.project, plan.stack, changed, plan.outputs, plan.warnings)


@pytest.mark.parametrize(("stack", "site"), [("onprem", "dc1"), ("hybrid", "onprem")])
def test_fabric_objects_wait_for_their_crds_and_namespaces(
    example_plans: dict[str, Plan], stack: str, site: str
) -> None:
    plan = example_plans[stack]
    assert _fabric_objects(plan)
    assert _simulated(plan, read_stack(ROOT, stack).estate()) == []


def test_a_fabric_object_created_before_the_chart_that_brings_its_crd_is_caught(
    example_plans: dict[str, Plan],
) -> None:
    """The order is judged by the simulation against the chart's own CRDs, so an object that stops waiting for the
    Network Operator release is reported (pulumi-kubernetes fails "no matches for kind" otherwise)."""
    plan = example_plans["onprem"]
    release = _network_operator_release(plan, "dc1")
    chart_kinds = crd_kinds(chart_dir(versions.NETWORK_OPERATOR))
    victim = next(r for r in _fabric_objects(plan) if _group_kind(r) in chart_kinds and release.key in r.dependencies)
    broken = _without_dependency_on(plan, victim.key, release.key)
    problems = _simulated(broken, read_stack(ROOT, "onprem").estate())
    assert [(p.resource, p.check) for p in problems] == [(victim.key, "crd")], problems


@pytest.fixture(scope="module")
def variant_plan(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    """The onprem example with a partitioned SR-IOV InfiniBand fabric and a RoCE fabric (test_site._variant)."""
    from gpufleet.engine.synth import synth

    return synth(write_project(tmp_path_factory.mktemp("variant"), _variant()), "test")


def test_sriov_and_partitioned_fabrics_wait_for_their_crds_and_namespaces(variant_plan: Plan) -> None:
    assert _fabric_objects(variant_plan)
    assert _simulated(variant_plan, EstateSpec.model_validate(_variant()["gpufleet:estate"])) == []


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
