"""The hybrid example synthesized: MultiKueue objects on the right cluster, burst queues sized by the window."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any

import pytest

from components.hybrid.multikueue import WORKER_RULES, server_of, worker_kubeconfig
from components.model.load import WINDOW_KEY
from gpufleet.engine.plan import Plan, PlanResource
from tests.burst.helpers import hybrid_config, window

MK = "gpufleet:hybrid:MultiKueue"
KUEUE = "kubernetes:kueue.x-k8s.io/v1beta2"
MANAGER_PROVIDER = "pulumi:providers:kubernetes::onprem-k8s"
WORKER_PROVIDER = "pulumi:providers:kubernetes::cloud-k8s"


def wiring(plan: Plan) -> list[PlanResource]:
    (mk,) = plan.find(MK)
    return list(plan.descendants(mk.key))


def objects(plan: Plan, kind: str) -> list[PlanResource]:
    return [r for r in wiring(plan) if r.type == f"{KUEUE}:{kind}"]


def on(r: PlanResource) -> str:
    assert r.provider is not None
    return (
        "manager"
        if r.provider.endswith(MANAGER_PROVIDER)
        else "worker"
        if r.provider.endswith(WORKER_PROVIDER)
        else "?"
    )


def quota(groups: list[dict[str, Any]], resource: str) -> Any:
    (group,) = groups
    (flavor,) = group["flavors"]
    return next(r["nominalQuota"] for r in flavor["resources"] if r["name"] == resource)


def test_manager_reaches_worker_through_a_secret_kubeconfig(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["hybrid"]
    (cluster,) = objects(plan, "MultiKueueCluster")
    (config,) = objects(plan, "MultiKueueConfig")
    (check,) = objects(plan, "AdmissionCheck")
    secret = next(r for r in wiring(plan) if r.type == "kubernetes:core/v1:Secret" and on(r) == "manager")
    location = cluster.inputs["spec"]["clusterSource"]["kubeConfig"]
    assert location == {"locationType": "Secret", "location": secret.inputs["metadata"]["name"]}
    assert secret.inputs["metadata"]["namespace"] == "kueue-system"
    assert secret.inputs["stringData"] == "[secret]"  # the kubeconfig never appears in plaintext
    assert config.inputs["spec"] == {"clusters": [cluster.inputs["metadata"]["name"]]}
    assert check.inputs["spec"] == {
        "controllerName": "kueue.x-k8s.io/multikueue",
        "parameters": {
            "apiGroup": "kueue.x-k8s.io",
            "kind": "MultiKueueConfig",
            "name": config.inputs["metadata"]["name"],
        },
    }
    assert {on(r) for r in (cluster, config, check, secret)} == {"manager"}


def test_worker_has_a_service_account_token_and_the_multikueue_rbac(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["hybrid"]
    res = {r.type.split(":")[-1]: r for r in wiring(plan) if r.type.startswith("kubernetes:") and on(r) == "worker"}
    token = next(r for r in wiring(plan) if r.type == "kubernetes:core/v1:Secret" and on(r) == "worker")
    sa = res["ServiceAccount"].inputs["metadata"]
    assert token.inputs["type"] == "kubernetes.io/service-account-token"
    assert token.inputs["metadata"]["annotations"] == {"kubernetes.io/service-account.name": sa["name"]}
    binding = res["ClusterRoleBinding"].inputs
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": sa["name"], "namespace": sa["namespace"]}]
    assert binding["roleRef"]["name"] == res["ClusterRole"].inputs["metadata"]["name"]
    rules = {(g, r): set(rule["verbs"]) for rule in res["ClusterRole"].inputs["rules"] for g in rule["apiGroups"]
             for r in rule["resources"]}  # fmt: skip
    assert rules[("kueue.x-k8s.io", "workloads")] >= {"create", "delete", "get", "list", "watch", "update", "patch"}
    assert rules[("kueue.x-k8s.io", "workloads/status")] == {"get", "patch", "update"}
    assert rules[("batch", "jobs")] == {"create", "delete", "get", "list", "watch"}
    assert rules[("jobset.x-k8s.io", "jobsets/status")] == {"get"}
    assert len(res["ClusterRole"].inputs["rules"]) == len(WORKER_RULES)


def test_burst_tenant_gets_burst_queues_on_both_clusters_and_only_the_manager_carries_the_check(
    example_plans: dict[str, Plan],
) -> None:
    plan = example_plans["hybrid"]
    (check,) = objects(plan, "AdmissionCheck")
    cqs = {on(r): r.inputs for r in objects(plan, "ClusterQueue")}
    lqs = {on(r): r.inputs for r in objects(plan, "LocalQueue")}
    assert set(cqs) == set(lqs) == {"manager", "worker"}  # research only: product has burst: false
    for side in ("manager", "worker"):
        assert cqs[side]["metadata"]["name"] == "research-burst"
        assert cqs[side]["spec"]["cohortName"] == "hyb-burst"
        assert cqs[side]["spec"]["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "research"}}
        assert lqs[side]["metadata"] | {"labels": None} == {
            "name": "research-burst",
            "namespace": "research",
            "labels": None,
        }
        assert lqs[side]["spec"] == {"clusterQueue": "research-burst"}
    assert cqs["manager"]["spec"]["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": check.inputs["metadata"]["name"]}]
    }
    assert "admissionChecksStrategy" not in cqs["worker"]["spec"]
    # the tenant's own on-prem queue (tenancy layer) stays free of the check: work runs on-prem by default
    onprem_cq = plan.one(f"{KUEUE}:ClusterQueue", "onprem-k8s-kueue-cq-research")
    assert "admissionChecksStrategy" not in onprem_cq.inputs["spec"]


def test_worker_flavor_lands_jobs_on_the_burst_pool_nodes(example_plans: dict[str, Plan]) -> None:
    flavors = {on(r): r.inputs for r in objects(example_plans["hybrid"], "ResourceFlavor")}
    assert flavors["worker"]["metadata"]["name"] == flavors["manager"]["metadata"]["name"] == "burst-h100"
    assert flavors["worker"]["spec"]["nodeLabels"] == {"gpufleet.io/pool": "burst-h100"}
    assert {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"} in flavors[
        "worker"
    ]["spec"]["tolerations"]


def test_burst_tenant_namespace_exists_on_the_worker(example_plans: dict[str, Plan]) -> None:
    namespaces = [
        r.inputs["metadata"]["name"]
        for r in wiring(example_plans["hybrid"])
        if r.type == "kubernetes:core/v1:Namespace" and on(r) == "worker"
    ]
    assert sorted(namespaces) == ["gpufleet-multikueue", "research"]


def test_without_a_window_burst_quotas_and_the_cloud_pool_are_zero(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["hybrid"]
    for cohort in objects(plan, "Cohort"):
        groups = cohort.inputs["spec"]["resourceGroups"]
        assert (quota(groups, "nvidia.com/gpu"), quota(groups, "cpu")) == (0, 0)
    assert burst_node_group(plan)["desiredSize"] == 0


def burst_node_group(plan: Plan) -> dict[str, Any]:
    (ng,) = [r for r in plan.find("aws:eks/nodeGroup:NodeGroup") if "burst-h100" in r.name]
    scaling: dict[str, Any] = ng.inputs["scalingConfig"]
    return scaling


def synth_window(synth_config: Callable[[dict[str, Any]], Plan], start: dt.datetime, hours: float) -> Plan:
    config = hybrid_config()
    # as `gpufleet burst open` stores it: JSON text through `pulumi config set`
    config[WINDOW_KEY] = json.dumps(window(start, hours, nodes=2))
    return synth_config(config)


def test_open_window_sizes_the_cloud_pool_and_the_burst_quotas(synth_config: Callable[[dict[str, Any]], Plan]) -> None:
    now = dt.datetime.now(dt.UTC)
    plan = synth_window(synth_config, now - dt.timedelta(hours=1), 8)
    cohorts = objects(plan, "Cohort")
    assert {on(c) for c in cohorts} == {"manager", "worker"}
    for cohort in cohorts:
        groups = cohort.inputs["spec"]["resourceGroups"]
        assert (quota(groups, "nvidia.com/gpu"), quota(groups, "cpu"), quota(groups, "memory")) == (16, 384, "4096Gi")
    for cq in objects(plan, "ClusterQueue"):  # tenants borrow the window from the cohort
        assert quota(cq.inputs["spec"]["resourceGroups"], "nvidia.com/gpu") == 0
    scaling = burst_node_group(plan)
    assert (scaling["desiredSize"], scaling["maxSize"]) == (2, 2)


def test_expired_window_shrinks_pool_and_quotas_to_zero(synth_config: Callable[[dict[str, Any]], Plan]) -> None:
    now = dt.datetime.now(dt.UTC)
    plan = synth_window(synth_config, now - dt.timedelta(hours=10), 8)
    for cohort in objects(plan, "Cohort"):
        assert quota(cohort.inputs["spec"]["resourceGroups"], "nvidia.com/gpu") == 0
    assert burst_node_group(plan)["desiredSize"] == 0


def test_window_that_does_not_fit_the_estate_stops_the_program(
    synth_config: Callable[[dict[str, Any]], Plan],
) -> None:
    bad = window(dt.datetime.now(dt.UTC), 8, instance_type="p5en.48xlarge")
    with pytest.raises(
        Exception, match=r"config\.gpufleet:burstWindow\.instance_type: pool burst-h100 runs p5\.48xlarge"
    ):
        synth_config(hybrid_config(bad))


def test_manager_kubeconfig_uses_the_worker_server_and_a_bearer_token() -> None:
    eks = '{"apiVersion":"v1","clusters":[{"name":"c","cluster":{"server":"https://ABC.eks.amazonaws.com"}}],' \
          '"contexts":[{"name":"c","context":{"cluster":"c","user":"c"}}],"current-context":"c"}'  # fmt: skip
    text = worker_kubeconfig("cloud", server_of(eks), "Q0E=", "tok")
    assert "https://ABC.eks.amazonaws.com" in text and "token: tok" in text and "exec" not in text
