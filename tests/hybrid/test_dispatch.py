"""The hybrid example's dispatch: a manager of its own, both sites as workers in order, the incremental dispatcher,
the same queue names everywhere, and workers that serve every framework the manager enables.

Kueue facts checked here are Kueue's at the pinned tag (versions.KUEUE): the concepts page
site/content/en/docs/concepts/multikueue.md ("Incremental", "prioritizing clusters for cost-optimized spillover",
"Limitations"), the RBAC of site/static/examples/multikueue/create-multikueue-kubeconfig.sh, and the CRDs of the
Kueue chart, which every Kueue object of the plan is validated against.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from components.hybrid.access import server_of, worker_kubeconfig
from gpufleet.engine.plan import Plan, PlanResource
from model import versions
from model.frameworks import DISPATCHED, FRAMEWORKS
from model.load import ESTATE_KEY, SpecError, parse_estate
from tests.burst.helpers import hybrid_config
from tests.conftest import example_estate
from tests.hybrid.plan_helpers import KUEUE, cluster, depends_on, kueue_config, kueue_objects, named, quota, releases
from tests.hybrid.upstream import kueue_problems

INCREMENTAL = "kueue.x-k8s.io/multikueue-dispatcher-incremental"  # apis/config/v1beta2/configuration_types.go


@pytest.fixture(scope="module")
def hybrid(example_plans: dict[str, Plan]) -> Plan:
    return example_plans["hybrid"]


def test_manager_is_a_cluster_of_its_own_and_dispatches_to_both_sites(hybrid: Plan) -> None:
    # Kueue does not support a manager that is one of its own workers (multikueue.md, "Limitations").
    mk = {r.inputs["metadata"]["name"]: r for r in kueue_objects(hybrid, "MultiKueueCluster")}
    assert set(mk) == {"onprem", "cloud"}
    assert {cluster(r) for r in mk.values()} == {"manager"}
    assert {cluster(r) for r in kueue_objects(hybrid, "MultiKueueConfig")} == {"manager"}
    checks = kueue_objects(hybrid, "AdmissionCheck")
    assert {cluster(r) for r in checks if r.inputs["spec"]["controllerName"] == "kueue.x-k8s.io/multikueue"} == {
        "manager"
    }
    assert kueue_config(releases(hybrid, "kueue")["manager"])  # Kueue is installed on the manager


def test_research_runs_on_prem_first_and_spills_to_the_cloud(hybrid: Plan) -> None:
    cq = named(hybrid, "ClusterQueue", "research", "manager")
    (check,) = cq.inputs["spec"]["admissionChecksStrategy"]["admissionChecks"]
    ac = named(hybrid, "AdmissionCheck", check["name"], "manager")
    assert ac.inputs["spec"]["controllerName"] == "kueue.x-k8s.io/multikueue"
    config = named(hybrid, "MultiKueueConfig", ac.inputs["spec"]["parameters"]["name"], "manager")
    assert config.inputs["spec"]["clusters"] == ["onprem", "cloud"]  # nominated in this order
    product = named(hybrid, "ClusterQueue", "product", "manager")
    (pcheck,) = product.inputs["spec"]["admissionChecksStrategy"]["admissionChecks"]
    assert named(hybrid, "MultiKueueConfig", pcheck["name"], "manager").inputs["spec"]["clusters"] == ["onprem"]


def test_manager_runs_the_incremental_dispatcher_one_site_per_round(hybrid: Plan) -> None:
    configs = {c: kueue_config(r) for c, r in releases(hybrid, "kueue").items()}
    assert configs["manager"]["multiKueue"] == {
        "dispatcherName": INCREMENTAL,
        "incrementalDispatcherConfig": {"stepSize": 1},
    }
    # both feature gates are beta and on at the pinned tag: none is set, none is turned off
    assert "featureGates" not in str(releases(hybrid, "kueue")["manager"].inputs["values"])
    assert "multiKueue" not in configs["onprem"] and "multiKueue" not in configs["cloud"]


def test_every_worker_has_the_tenants_queues_under_the_names_the_manager_uses(hybrid: Plan) -> None:
    # MultiKueue creates the remote copy in the same namespace with the same LocalQueue label.
    expected = {"research": {"manager", "onprem", "cloud"}, "product": {"manager", "onprem"}}
    for tenant, clusters in expected.items():
        for queue in (tenant, "default"):
            found = {cluster(r) for r in kueue_objects(hybrid, "LocalQueue")
                     if r.inputs["metadata"] == r.inputs["metadata"] | {"name": queue, "namespace": tenant}}  # fmt: skip
            assert found == clusters, (tenant, queue)
    onprem_cq = named(hybrid, "ClusterQueue", "research", "onprem")
    assert "admissionChecksStrategy" not in onprem_cq.inputs["spec"]  # a plain Kueue cluster


def test_manager_quota_is_what_the_workers_together_can_admit(hybrid: Plan) -> None:
    spec = named(hybrid, "ClusterQueue", "research", "manager").inputs["spec"]
    # on-prem: 24 nominal + 8 borrowing on base; cloud: the burst pool at its max, 4 x 8 H100
    assert quota(spec["resourceGroups"], "nvidia.com/gpu") == 24 + 8 + 32
    # CPU and memory likewise: research's own on each worker, and on the cloud the burst pool at its max, 4 x p5
    assert quota(spec["resourceGroups"], "cpu") == 2 * 256 + 4 * 192
    product = named(hybrid, "ClusterQueue", "product", "manager").inputs["spec"]
    assert quota(product["resourceGroups"], "nvidia.com/gpu") == 8


def test_a_burst_gang_fits_the_tenants_namespace_quota_on_the_cloud_worker(hybrid: Plan) -> None:
    """A gang of 4 pods, each a whole p5.48xlarge (8 GPUs, 150 of its 192 vCPUs, 1,536 GiB of its 2,048), asks more
    CPU and memory than research's own quota (256 vCPUs, 2,048 GiB). The namespace ResourceQuota refuses a pod past
    `hard` (https://kubernetes.io/docs/concepts/policy/resource-quotas/), after the autoscaler started its node; so
    on the burst site it also holds the burst pool at its max, as Kueue's burst quota does."""
    (rq,) = [r for r in hybrid.find("kubernetes:core/v1:ResourceQuota")
             if cluster(r) == "cloud" and r.inputs["metadata"]["namespace"] == "research"]  # fmt: skip
    hard = rq.inputs["spec"]["hard"]
    assert int(hard["requests.cpu"]) >= 4 * 150 and int(hard["requests.cpu"]) == 256 + 4 * 192
    assert int(hard["requests.memory"].removesuffix("Gi")) >= 4 * 1536
    assert int(hard["requests.nvidia.com/gpu"]) >= 4 * 8


def _rules(role: PlanResource) -> dict[tuple[str, str], set[str]]:
    return {(g, res): set(rule["verbs"]) for rule in role.inputs["rules"] for g in rule["apiGroups"]
            for res in rule["resources"]}  # fmt: skip


def _enabled_on_manager(plan: Plan) -> list[str]:
    frameworks: list[str] = kueue_config(releases(plan, "kueue")["manager"])["integrations"]["frameworks"]
    return frameworks


def _assert_workers_serve_the_manager(plan: Plan) -> None:
    enabled = _enabled_on_manager(plan)
    configs = {c: kueue_config(r) for c, r in releases(plan, "kueue").items()}
    for worker in ("onprem", "cloud"):
        assert configs[worker]["integrations"]["frameworks"] == enabled  # Kueue on the worker runs them too
        (role,) = [r for r in plan.find("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")
                   if cluster(r) == worker and "multikueue" in r.inputs["metadata"]["name"]]  # fmt: skip
        rules = _rules(role)
        for name in enabled:
            f = FRAMEWORKS[name]  # type: ignore[index]
            if name in DISPATCHED:
                assert rules[(f.group, f.resource)] >= {"create", "delete", "get", "list", "watch"}, name
                assert not f.status or rules[(f.group, f.resource + "/status")] == {"get"}, name
            if f.operator is not None:  # the worker has the operator, and so the CRD, before its Kueue starts
                operator = releases(plan, f.operator)[worker]
                assert depends_on(plan, releases(plan, "kueue")[worker], operator)
        assert rules[("kueue.x-k8s.io", "workloads")] >= {"create", "delete", "get", "list", "watch", "update"}
        assert rules[("kueue.x-k8s.io", "workloads/status")] == {"get", "patch", "update"}


def test_workers_serve_exactly_the_frameworks_the_manager_enables(hybrid: Plan) -> None:
    assert _enabled_on_manager(hybrid) == ["batch/job", "pod", "deployment", "statefulset"]
    _assert_workers_serve_the_manager(hybrid)


def test_jobset_is_installed_on_every_worker_and_the_manager_when_enabled(
    synth_config: Callable[[dict[str, Any]], Plan],
) -> None:
    config = hybrid_config()
    for site in config[ESTATE_KEY]["sites"]:
        site.setdefault("kubernetes", {})["job_frameworks"] = ["batch/job", "jobset.x-k8s.io/jobset"]
    plan = synth_config(config)
    assert _enabled_on_manager(plan) == ["batch/job", "jobset.x-k8s.io/jobset"]
    _assert_workers_serve_the_manager(plan)
    jobset = releases(plan, "jobset")
    assert set(jobset) == {"manager", "onprem", "cloud"}  # tenants create JobSets on the manager: its CRD
    assert {r.inputs["version"] for r in jobset.values()} == {versions.JOBSET.version}


def test_workers_that_serve_different_frameworks_are_refused() -> None:
    estate = copy.deepcopy(example_estate("hybrid"))
    estate["sites"][1].setdefault("kubernetes", {})["job_frameworks"] = ["batch/job"]
    with pytest.raises(SpecError, match=r"sites\[1\]\.kubernetes\.job_frameworks: site cloud serves batch/job"):
        parse_estate(estate, "hybrid.yaml")


def test_a_framework_gpufleet_cannot_install_is_refused() -> None:
    estate = copy.deepcopy(example_estate("hybrid"))
    estate["sites"][0]["kubernetes"]["job_frameworks"] = ["batch/job", "kubeflow.org/pytorchjob"]
    with pytest.raises(SpecError, match=r"sites\[0\]\.kubernetes\.job_frameworks\[1\]: .*jobset\.x-k8s\.io/jobset"):
        parse_estate(estate, "hybrid.yaml")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("name", "cloud", r"burst\.manager\.name: cloud is a site of the estate"),
        ("network", "dc9", r"burst\.manager\.network: dc9 is not a site of the estate"),
    ],
)
def test_manager_that_is_a_site_or_sits_nowhere_is_refused(field: str, value: str, message: str) -> None:
    estate = copy.deepcopy(example_estate("hybrid"))
    estate["burst"]["manager"][field] = value
    with pytest.raises(SpecError, match=message):
        parse_estate(estate, "hybrid.yaml")


def test_manager_reaches_each_worker_through_a_secret_kubeconfig_of_its_own(hybrid: Plan) -> None:
    for mk in kueue_objects(hybrid, "MultiKueueCluster"):
        location = mk.inputs["spec"]["clusterSource"]["kubeConfig"]
        (secret,) = [r for r in hybrid.find("kubernetes:core/v1:Secret")
                     if cluster(r) == "manager" and r.inputs["metadata"]["name"] == location["location"]]  # fmt: skip
        assert location["locationType"] == "Secret" and secret.inputs["metadata"]["namespace"] == "kueue-system"
        assert secret.inputs["stringData"] == "[secret]"  # never plaintext in the plan
        assert depends_on(hybrid, mk, secret)
    tokens = [r for r in hybrid.find("kubernetes:core/v1:Secret") if r.inputs.get("type", "").endswith("token")]
    assert {cluster(r) for r in tokens} == {"onprem", "cloud"}


def test_manager_kubeconfig_uses_the_worker_server_and_a_bearer_token() -> None:
    eks = '{"apiVersion":"v1","clusters":[{"name":"c","cluster":{"server":"https://ABC.eks.amazonaws.com"}}],' \
          '"contexts":[{"name":"c","context":{"cluster":"c","user":"c"}}],"current-context":"c"}'  # fmt: skip
    text = worker_kubeconfig("cloud", server_of(eks), "Q0E=", "tok")
    assert "https://ABC.eks.amazonaws.com" in text and "token: tok" in text and "exec" not in text


def test_every_kueue_object_of_the_plan_is_valid_for_kueues_crds(hybrid: Plan) -> None:
    objects = [r for r in hybrid.kubernetes_objects() if r.type.startswith(KUEUE)]
    assert {r.inputs["kind"] for r in objects} >= {"MultiKueueCluster", "MultiKueueConfig", "ProvisioningRequestConfig"}
    problems = {f"{r.name}: {p}" for r in objects for p in kueue_problems(r.inputs)}
    assert problems == set()


def test_crd_check_would_catch_a_misspelt_field() -> None:
    bad = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig", "spec": {"cluster": ["a"]}}
    assert kueue_problems(bad)


def test_the_manager_reaches_every_worker_api_over_a_declared_path() -> None:
    from model import dispatch
    from model.reach import api_clients, api_reachable_from

    spec = parse_estate(example_estate("hybrid"), "hybrid.yaml")
    for site in dispatch.workers(spec):
        (manager,) = [c for c in api_clients(spec, site) if c.role == "multikueue-manager"]
        assert manager.network == "onprem"
        assert api_reachable_from(spec, site, manager), site.name  # on-prem: its own network; cloud: the VPN


def test_a_manager_without_a_path_to_the_cloud_api_is_refused() -> None:
    estate = copy.deepcopy(example_estate("hybrid"))
    del estate["sites"][1]["interconnect"]
    with pytest.raises(
        SpecError, match=r"MultiKueue manager kueue-manager .* cannot reach the Kubernetes API of site cloud"
    ):
        parse_estate(estate, "hybrid.yaml")
