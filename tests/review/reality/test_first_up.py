"""The first `up`, simulated: one fixture per class of defect, each producing exactly the expected problem."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpufleet.charts.cache import ChartCache
from gpufleet.charts.operator_crds import CONFIG_FILE
from gpufleet.charts.render import render_plan
from gpufleet.engine.plan import Plan
from gpufleet.review.reality.first_up import FirstUp, Problem, simulate
from model import versions
from model.spec import EstateSpec
from tests.conftest import example_estate
from tests.review.reality.plans import PlanBuilder

NETOP_VALUES = {"nfd": {"enabled": False, "deployNodeFeatureRules": False}, "sriovNetworkOperator": {"enabled": False}}


def spec_of(stack: str, change: Any = None) -> EstateSpec:
    estate = example_estate(stack)
    if change:
        change(estate)
    return EstateSpec.model_validate(estate)


def run(plan: Plan, spec: EstateSpec, cache: ChartCache) -> FirstUp:
    return simulate(plan, spec, render_plan(plan, cache))


def only(result: FirstUp) -> Problem:
    assert len(result.problems) == 1, [p.message for p in result.problems]
    return result.problems[0]


IPOIB = {
    "apiVersion": "mellanox.com/v1alpha1",
    "kind": "IPoIBNetwork",
    "metadata": {"name": "ib-ipoib-research"},
    "spec": {"networkNamespace": "default", "master": "ib0", "ipam": "{}"},
}


def test_custom_resource_without_a_path_to_its_crd(chart_cache: ChartCache) -> None:
    b = PlanBuilder("dc1")
    release = b.release(versions.NETWORK_OPERATOR, "network-operator", NETOP_VALUES)
    b.obj(IPOIB)
    p = only(run(b.plan(), spec_of("onprem"), chart_cache))
    assert (p.check, p.name, p.missing) == ("crd", "IPoIBNetwork ib-ipoib-research", "CRD ipoibnetworks.mellanox.com")
    assert "IPoIBNetwork ib-ipoib-research is created before its CRD ipoibnetworks.mellanox.com" in p.message
    assert "release network-operator" in p.message

    fixed = PlanBuilder("dc1")
    release = fixed.release(versions.NETWORK_OPERATOR, "network-operator", NETOP_VALUES)
    fixed.obj(IPOIB, deps=[release])
    assert run(fixed.plan(), spec_of("onprem"), chart_cache).problems == []


def test_operator_applied_crd_needs_the_triggering_object(chart_cache: ChartCache) -> None:
    def plan(wait: bool) -> Plan:
        b = PlanBuilder("dc1")
        ns = b.namespace("network-operator")
        release = b.release(
            versions.NETWORK_OPERATOR, "network-operator", NETOP_VALUES, deps=[ns], create_namespace=False
        )
        policy = b.obj(
            {
                "apiVersion": "mellanox.com/v1alpha1",
                "kind": "NicClusterPolicy",
                "metadata": {"name": "nic-cluster-policy"},
                "spec": {
                    "nvIpam": {
                        "image": "nvidia-k8s-ipam",
                        "repository": "nvcr.io/nvidia/mellanox",
                        "version": "network-operator-v26.4.1",
                        "enableWebhook": False,
                    }
                },
            },
            deps=[release],
        )
        b.obj(
            {
                "apiVersion": "nv-ipam.nvidia.com/v1alpha1",
                "kind": "IPPool",
                "metadata": {"name": "ib", "namespace": "network-operator"},
                "spec": {"subnet": "192.168.64.0/18", "perNodeBlockSize": 256},
            },
            deps=[policy, ns] if wait else [ns],
        )
        return b.plan()

    p = only(run(plan(False), spec_of("onprem"), chart_cache))
    assert (p.check, p.name, p.missing) == ("crd", "IPPool network-operator/ib", "CRD ippools.nv-ipam.nvidia.com")
    assert "when it reconciles NicClusterPolicy nic-cluster-policy" in p.message
    assert run(plan(True), spec_of("onprem"), chart_cache).problems == []


def test_chart_value_that_renders_an_uninstalled_kind(chart_cache: ChartCache) -> None:
    def problems(prometheus: bool) -> list[Problem]:
        b = PlanBuilder("dc1")
        b.release(versions.KUEUE, "kueue-system", {"enablePrometheus": prometheus})
        return run(b.plan(), spec_of("onprem"), chart_cache).problems

    (p,) = problems(True)
    assert (p.check, p.missing) == ("crd", "CRD for ServiceMonitor.monitoring.coreos.com")
    assert p.name == (
        "ServiceMonitor kueue-system/kueue-controller-manager-metrics-monitor (kueue/templates/prometheus/monitor.yaml)"
    )
    assert "no release or operator in this cluster installs" in p.message
    assert problems(False) == []


def test_object_in_a_namespace_nothing_creates(chart_cache: ChartCache) -> None:
    b = PlanBuilder("dc1")
    b.obj({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "ghost"}, "data": {}})
    p = only(run(b.plan(), spec_of("onprem"), chart_cache))
    assert (p.check, p.name, p.missing) == ("namespace", "ConfigMap ghost/settings", "namespace ghost")
    assert p.message == "ConfigMap ghost/settings is in namespace ghost, which nothing in the stack creates"


def test_object_that_does_not_wait_for_its_namespace(chart_cache: ChartCache) -> None:
    b = PlanBuilder("dc1")
    b.namespace("team")
    b.obj({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "team"}})
    p = only(run(b.plan(), spec_of("onprem"), chart_cache))
    assert p.check == "namespace" and "created by Namespace team, which it does not wait for" in p.message


def test_unknown_field_in_a_crd_object(chart_cache: ChartCache) -> None:
    b = PlanBuilder("dc1")
    kueue = b.release(versions.KUEUE, "kueue-system", {})
    b.obj(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "h100"},
            "spec": {"nodeLabelz": {"pool": "h100"}},
        },
        deps=[kueue],
    )
    p = only(run(b.plan(), spec_of("onprem"), chart_cache))
    assert (p.check, p.name, p.missing) == ("schema", "ResourceFlavor h100", "a valid spec")
    assert "unknown field" in p.message and "nodeLabelz" in p.message and "against its CRD" in p.message


def test_core_object_with_a_wrong_type(chart_cache: ChartCache) -> None:
    b = PlanBuilder("dc1")
    b.obj(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "training"},
            "value": "1000",
        }
    )
    p = only(run(b.plan(), spec_of("onprem"), chart_cache))
    assert (p.check, p.name, p.missing) == ("schema", "PriorityClass training", "a valid value")
    assert "'1000' is not of type 'integer'" in p.message and "Kubernetes 1.34 OpenAPI" in p.message


# The schema refuses an estate whose APIs someone cannot reach (model/reach.py); these fixtures break an
# already-validated spec so the first-up check, which asks the same judgement, is seen to find it too.


def _with_site(spec: EstateSpec, i: int, **update: Any) -> EstateSpec:
    sites = list(spec.sites)
    sites[i] = sites[i].model_copy(update=update)  # model_copy does not validate: the schema would refuse it
    return spec.model_copy(update={"sites": sites})


def private_api(stack: str, site: int) -> EstateSpec:
    spec = spec_of(stack)
    cluster = spec.sites[site].cluster  # type: ignore[union-attr]
    return _with_site(spec, site, cluster=cluster.model_copy(update={"endpoint_public_cidrs": []}))


def unconnected(stack: str, site: int) -> EstateSpec:
    return _with_site(spec_of(stack), site, interconnect=None)


def test_private_endpoint_with_no_path_to_the_deployer(chart_cache: ChartCache) -> None:
    b = PlanBuilder("use1", kind="aws")
    p = only(run(b.plan(), private_api("aws-train", 0), chart_cache))
    assert (p.check, p.resource, p.name) == ("reach", b.provider, "Kubernetes provider use1-k8s")
    assert p.missing.startswith("a path from the deployer") and p.missing.endswith("to the API of site use1")
    assert "the API of site use1 is private (cluster.endpoint_public_cidrs is empty)" in p.message
    assert run(b.plan(), spec_of("aws-train"), chart_cache).problems == []


def test_multikueue_worker_the_manager_cannot_reach(chart_cache: ChartCache, checked_examples: dict) -> None:
    cluster = checked_examples["hybrid"].plan.find("kubernetes:kueue.x-k8s.io/v1beta2:MultiKueueCluster")[0]
    b = PlanBuilder("onprem")
    kueue = b.release(versions.KUEUE, "kueue-system", {})
    key = b.obj(cluster.inputs, deps=[kueue])
    p = only(run(b.plan(), unconnected("hybrid", 1), chart_cache))
    assert (p.check, p.resource, p.name) == ("reach", key, "MultiKueueCluster cloud")
    assert p.missing.startswith("a path from the MultiKueue manager") and p.missing.endswith("to the API of site cloud")
    assert "which the VPC of site cloud is not connected to" in p.message
    assert run(b.plan(), spec_of("hybrid"), chart_cache).problems == []


def test_release_workload_without_a_node_by_then(chart_cache: ChartCache) -> None:
    def problems(wait_for_nodes: bool) -> list[Problem]:
        b = PlanBuilder("use1", kind="aws")
        system = b.node_group("use1-cluster-system")
        b.node_group("use1-h100-ng", taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}])
        b.release(versions.KUEUE, "kueue-system", {}, deps=[system] if wait_for_nodes else [])
        return run(b.plan(), spec_of("aws-train"), chart_cache).problems

    (p,) = problems(False)
    assert (p.check, p.missing) == ("node", "a node for Deployment kueue-controller-manager")
    assert "Release kueue waits for Deployment kueue-controller-manager to become ready" in p.message
    assert problems(True) == []


def test_a_tainted_node_group_alone_cannot_run_an_untolerating_workload(chart_cache: ChartCache) -> None:
    b = PlanBuilder("use1", kind="aws")
    gpu = b.node_group("use1-h100-ng", taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}])
    b.release(versions.KUEUE, "kueue-system", {}, deps=[gpu])
    p = only(run(b.plan(), spec_of("aws-train"), chart_cache))
    assert p.check == "node" and "node group use1-h100-ng" in p.message


def test_unrendered_chart_is_a_problem_not_a_silent_pass(tmp_path: Any) -> None:
    b = PlanBuilder("dc1")
    b.release(versions.KUEUE, "kueue-system", {})
    p = only(run(b.plan(), spec_of("onprem"), ChartCache(tmp_path)))
    assert p.check == "chart" and "not in the chart cache" in p.message


@pytest.mark.parametrize("stack", ["aws-train", "onprem", "hybrid"])
def test_every_example_release_renders(stack: str, checked_examples: dict) -> None:
    checked = checked_examples[stack]
    assert all(r.rendered for r in checked.releases.values())
    assert len(checked.first_up.rendered) == sum(1 for r in checked.releases.values() if r.rendered)


def test_without_the_render_extra_the_result_says_so(monkeypatch: pytest.MonkeyPatch, chart_cache: ChartCache) -> None:
    from gpufleet.review.reality import checks as reality

    def missing(*_: Any) -> FirstUp:
        raise ImportError("No module named 'jsonschema'")

    monkeypatch.setattr(reality, "simulate", missing)
    p = only(reality.first_up(PlanBuilder("dc1").plan(), spec_of("onprem"), chart_cache))
    assert p.check == "chart" and "pip install 'gpufleet[render]'" in p.message and "jsonschema" in p.message


PROVISIONING_REQUEST = {
    "apiVersion": "autoscaling.x-k8s.io/v1",
    "kind": "ProvisioningRequest",
    "metadata": {"name": "gang", "namespace": "default"},
    "spec": {
        "provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
        "podSets": [{"count": 2, "podTemplateRef": {"name": "gang"}}],
    },
}


def test_a_crd_a_config_file_applies_counts_only_for_what_waits_for_it(chart_cache: ChartCache) -> None:
    """The ProvisioningRequest CRD arrives through a ConfigFile (components/aws/autoscaler.py); its objects are
    known offline (operator_crds), so a custom resource of it needs the ConfigFile before it like any CRD source."""
    b = PlanBuilder("use1", kind="aws")
    crd = b.add(CONFIG_FILE, "provisioning-request-crd", {"file": versions.PROVISIONING_REQUEST_CRD_URL})
    b.obj(PROVISIONING_REQUEST)
    p = only(run(b.plan(), spec_of("aws-train"), chart_cache))
    assert (p.check, p.missing) == ("crd", "CRD provisioningrequests.autoscaling.x-k8s.io")
    assert f"ConfigFile provisioning-request-crd ({versions.PROVISIONING_REQUEST_CRD_URL})" in p.message

    fixed = PlanBuilder("use1", kind="aws")
    crd = fixed.add(CONFIG_FILE, "provisioning-request-crd", {"file": versions.PROVISIONING_REQUEST_CRD_URL})
    fixed.obj(PROVISIONING_REQUEST, deps=[crd])
    result = run(fixed.plan(), spec_of("aws-train"), chart_cache)
    assert result.problems == [] and result.checked == 2  # the CRD itself is validated too


def test_a_config_file_without_an_offline_copy_is_a_problem(chart_cache: ChartCache) -> None:
    b = PlanBuilder("use1", kind="aws")
    key = b.add(CONFIG_FILE, "other", {"file": "https://raw.githubusercontent.com/o/r/v1/crd.yaml"})
    p = only(run(b.plan(), spec_of("aws-train"), chart_cache))
    assert (p.check, p.resource, p.name) == ("chart", key, "ConfigFile other")
    assert "no offline copy of https://raw.githubusercontent.com/o/r/v1/crd.yaml" in p.message


# Chart facts at the pins, read from the cache below: kubernetes-sigs/kueue v0.19.2 charts/kueue/values.yaml
# `controllerManager.tolerations: []` (templates/manager/manager.yaml renders only those); NVIDIA/gpu-operator
# v26.7.0 deployments/gpu-operator/charts/node-feature-discovery/values.yaml `gc.tolerations: []` and `master`
# tolerating only the control-plane taint, which deployments/gpu-operator/values.yaml leaves as they are.
CONTROL_PLANE = {
    "name": "control-plane",
    "labels": {"node-role.kubernetes.io/control-plane": ""},
    "taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}],
}


def _onprem_stating(system_nodes: list[dict[str, Any]]) -> EstateSpec:
    return spec_of("onprem", lambda e: e["sites"][0].__setitem__("system_nodes", system_nodes))


def test_controllers_that_tolerate_no_taint_need_an_untainted_node_the_stack_states(chart_cache: ChartCache) -> None:
    """An existing cluster whose stated nodes are its tainted control plane: the GPU Operator and NFD's master
    tolerate that taint, Kueue's controller-manager and NFD's garbage collector do not, and are named."""
    kueue = yaml.safe_load((chart_cache.locate(versions.KUEUE).path / "values.yaml").read_text())
    assert kueue["controllerManager"]["tolerations"] == []
    operator = chart_cache.locate(versions.GPU_OPERATOR).path
    nfd = yaml.safe_load((operator / "charts" / "node-feature-discovery" / "values.yaml").read_text())
    assert nfd["gc"]["tolerations"] == []
    assert [t["key"] for t in nfd["master"]["tolerations"]] == ["node-role.kubernetes.io/control-plane"]
    ours = yaml.safe_load((operator / "values.yaml").read_text())["node-feature-discovery"]
    assert "tolerations" not in ours["gc"] and "tolerations" not in ours["master"]
    b = PlanBuilder("dc1")
    b.release(versions.GPU_OPERATOR, "gpu-operator", {})
    b.release(versions.KUEUE, "kueue-system", {})
    problems = run(b.plan(), _onprem_stating([CONTROL_PLANE]), chart_cache).problems
    assert sorted((p.check, p.missing) for p in problems) == [
        ("node", "a node for Deployment gpu-operator-node-feature-discovery-gc"),
        ("node", "a node for Deployment kueue-controller-manager"),
    ]
    for p in problems:
        assert "tolerates no taints; nodes the release waits for: site dc1 control-plane (stated))" in p.message
        assert "the nodes of site dc1 besides its GPU servers are those sites[0].system_nodes states" in p.message
    assert run(b.plan(), _onprem_stating([CONTROL_PLANE, {"name": "cpu-workers"}]), chart_cache).problems == []


def test_an_existing_cluster_that_states_no_nodes_is_not_assumed_to_have_one(chart_cache: ChartCache) -> None:
    b = PlanBuilder("dc1")
    b.release(versions.KUEUE, "kueue-system", {})
    p = only(run(b.plan(), _onprem_stating([]), chart_cache))
    assert (p.check, p.missing) == ("node", "a node for Deployment kueue-controller-manager")
    assert "nodes the release waits for: none" in p.message
    assert "site dc1 is an existing cluster whose nodes besides its GPU servers the stack does not state" in p.message
    assert "set sites[0].system_nodes" in p.message


def test_the_multikueue_manager_runs_kueue_only_on_nodes_its_stack_states(
    chart_cache: ChartCache, example_plans: dict[str, Plan]
) -> None:
    """The manager is an existing cluster too: gpufleet creates no node there, so its Kueue needs a stated one."""
    plan = example_plans["hybrid"]
    releases = render_plan(plan, chart_cache)

    def without_manager_nodes(estate: dict[str, Any]) -> None:
        estate["burst"]["manager"]["system_nodes"] = []

    (p,) = simulate(plan, spec_of("hybrid", without_manager_nodes), releases).problems
    assert (p.check, p.missing) == ("node", "a node for Deployment kueue-controller-manager")
    assert "set burst.manager.system_nodes" in p.message
    assert simulate(plan, spec_of("hybrid"), releases).problems == []
