"""Workloads as users write them, walked through the example estates: api, admission and queueing.

The placement, storage and network stages are pass-throughs in this branch (J2's stages replace them), so a
workload that passes queueing `runs` here.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

import yaml

from gpufleet.review.reality.journeys.core import STAGES, ClusterView, Journey, Stage
from gpufleet.review.reality.journeys.walk import walk
from gpufleet.review.reality.journeys.workloads import read
from model.rdma import fabric_requests
from tests.review.reality.journeys.conftest import MANIFESTS, Estate

RESTRICTED_POD_SPEC: dict[str, Any] = {
    "securityContext": {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
    "restartPolicy": "Never",
    "containers": [
        {
            "name": "main",
            "image": "busybox",
            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
            "resources": {"limits": {"nvidia.com/gpu": 1}},
        }
    ],
}


def job(
    namespace: str, queue: str, pods: int, limits: dict[str, Any], spec: dict[str, Any] | None = None
) -> dict[str, Any]:
    pod = copy.deepcopy(spec or RESTRICTED_POD_SPEC)
    pod["containers"][0]["resources"] = {"limits": limits}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": queue}},
        "spec": {"parallelism": pods, "completions": pods, "template": {"spec": pod}},
    }


def test_an_efa_gang_through_its_tenants_queue_passes_api_admission_and_queueing(
    estate: Callable[[str], Estate],
) -> None:
    (j,) = estate("aws-train").walk("efa-gang.yaml")
    assert j.verdict == "runs", j.to_dict()
    queued = j.stages[2]
    assert queued.name == "queueing" and "flavor h100" in queued.detail


def test_kueue_injects_the_flavor_into_the_pods(estate: Callable[[str], Estate]) -> None:
    e = estate("aws-train")
    (w,) = read([MANIFESTS / "efa-gang.yaml"])
    from gpufleet.review.reality.journeys import admission, queueing
    from gpufleet.review.reality.journeys.core import Walk

    state = Walk(w, e.clusters["use1"], e.clusters, e.spec)
    assert admission.check(state).ok and queueing.check(state).ok
    (ps,) = state.pod_sets
    assert ps.spec["nodeSelector"] == {"gpufleet.io/pool": "h100"}
    assert {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"} in ps.spec[
        "tolerations"
    ]
    assert state.flavors == {"main": "h100"} and state.pools == {"main": ["h100"]}
    assert "tolerations" not in w.pod_sets[0].spec  # the manifest itself is never rewritten


def _without_excluded_prefixes(view: ClusterView) -> ClusterView:
    values = copy.deepcopy(view.releases["kueue"])
    config = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    del config["resources"]
    values["managerConfig"]["controllerManagerConfigYaml"] = yaml.safe_dump(config)
    return dataclasses.replace(view, releases={**view.releases, "kueue": values})


def test_without_excluded_prefixes_kueue_blocks_the_efa_gang_issue_4_1(estate: Callable[[str], Estate]) -> None:
    e = estate("aws-train")
    views = {**e.clusters, "use1": _without_excluded_prefixes(e.clusters["use1"])}
    (w,) = read([MANIFESTS / "efa-gang.yaml"])
    j = walk(w, views, e.spec)
    stop = j.blocked_at
    assert stop is not None and stop.name == "queueing"
    assert "vpc.amazonaws.com/efa unavailable in ClusterQueue research" in stop.detail
    assert stop.blocker == "ClusterQueue/research"


def test_a_resource_neither_covered_nor_excluded_is_blocked_at_queueing_naming_the_cluster_queue(
    estate: Callable[[str], Estate],
) -> None:
    (j,) = estate("aws-train").walk(job("research", "research", 1, {"nvidia.com/gpu": 1, "example.com/fpga": 1}))
    stop = j.blocked_at
    assert stop is not None and stop.name == "queueing" and stop.blocker == "ClusterQueue/research"
    assert "example.com/fpga unavailable in ClusterQueue research" in stop.detail
    assert "excludeResourcePrefixes" in stop.unblock


def test_a_privileged_pod_is_blocked_at_admission_in_a_restricted_namespace(estate: Callable[[str], Estate]) -> None:
    spec = copy.deepcopy(RESTRICTED_POD_SPEC)
    spec["containers"][0]["securityContext"]["privileged"] = True
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "debug", "namespace": "product"}, "spec": spec}
    (j,) = estate("aws-train").walk(pod)
    stop = j.blocked_at
    assert stop is not None and stop.name == "admission" and stop.blocker == "Namespace/product"
    assert "Pod Security restricted" in stop.detail and "privileged" in stop.detail


def test_kueues_own_sample_job_is_refused_by_a_restricted_namespace(estate: Callable[[str], Estate]) -> None:
    (j,) = estate("aws-train").walk("kueue-sample-job.yaml", tenant="product")
    assert j.workload.id == "Job/product/sample-job-"
    stop = j.blocked_at
    assert stop is not None and stop.name == "admission" and "runAsNonRoot" in stop.detail


def test_kueues_sample_pod_with_a_restricted_security_context_is_queued(estate: Callable[[str], Estate]) -> None:
    (j,) = estate("aws-train").walk("kueue-pod.yaml")
    assert j.verdict == "runs", j.to_dict()
    assert "ClusterQueue product admits it" in j.stages[2].detail


def test_a_jobset_is_blocked_at_api_where_the_site_does_not_enable_it(estate: Callable[[str], Estate]) -> None:
    (j,) = estate("aws-train").walk("kueue-sample-jobset.yaml")
    stop = j.blocked_at
    assert stop is not None and stop.name == "api"
    assert "job_frameworks" in stop.unblock and "jobset.x-k8s.io/jobset" in stop.unblock


def test_an_mpijob_is_blocked_at_api_saying_gpufleet_installs_no_mpi_operator(estate: Callable[[str], Estate]) -> None:
    (j,) = estate("aws-train").walk("nccl-tests-mpijob.yaml")
    stop = j.blocked_at
    assert stop is not None and stop.name == "api"
    assert stop.blocker == "CustomResourceDefinition/mpijobs.kubeflow.org"
    assert "no MPI Operator" in stop.unblock and "batch/job" in stop.unblock
    assert [p.count for p in j.workload.pod_sets] == [1, 2]


def test_a_workload_above_the_namespace_quota_is_blocked_naming_the_quota(estate: Callable[[str], Estate]) -> None:
    # research: requests.nvidia.com/gpu 48 in its ResourceQuota; 7 pods x 8 GPUs = 56 at once
    (j,) = estate("aws-train").walk(job("research", "research", 7, {"nvidia.com/gpu": 8}))
    stop = j.blocked_at
    assert stop is not None and stop.name == "admission" and stop.blocker == "ResourceQuota/research/tenant-quota"
    assert "requests.nvidia.com/gpu 56" in stop.detail


def _on_efa(doc: dict[str, Any]) -> dict[str, Any]:
    """An aws-train job that asks for a topology, as Kueue needs on the topology-aware h100 flavor."""
    doc["spec"]["template"]["metadata"] = {"annotations": {"kueue.x-k8s.io/podset-preferred-topology": EKS_LAYER_3}}
    return doc


EKS_LAYER_3 = "topology.k8s.aws/network-node-layer-3"


def test_a_gang_above_nominal_plus_borrowing_is_blocked_by_kueue(estate: Callable[[str], Estate]) -> None:
    # research: 24 nominal + 8 borrowable H100s; 5 pods x 8 = 40 fit the namespace quota (48) but not Kueue
    (j,) = estate("aws-train").walk(_on_efa(job("research", "research", 5, {"nvidia.com/gpu": 8})))
    stop = j.blocked_at
    assert stop is not None and stop.name == "queueing" and stop.blocker == "ClusterQueue/research"
    assert "insufficient quota for nvidia.com/gpu in flavor h100" in stop.detail


def test_a_gang_that_borrows_from_the_cohort_is_admitted_saying_so(estate: Callable[[str], Estate]) -> None:
    (j,) = estate("aws-train").walk(_on_efa(job("research", "research", 4, {"nvidia.com/gpu": 8})))
    assert j.stages[2].ok and "borrows 8 nvidia.com/gpu from the cohort" in j.stages[2].detail
    # The pool's desired nodes run and cluster-autoscaler adds the rest up to max (issue 28, 4.5).
    assert j.verdict == "runs", j.to_dict()


def test_an_unknown_local_queue_is_blocked_naming_it(estate: Callable[[str], Estate]) -> None:
    (j,) = estate("aws-train").walk(job("research", "user-queue", 1, {"nvidia.com/gpu": 1}))
    stop = j.blocked_at
    assert stop is not None and stop.name == "queueing" and stop.blocker == "LocalQueue/research/user-queue"


def test_without_a_queue_name_a_tenant_job_goes_to_the_default_local_queue(estate: Callable[[str], Estate]) -> None:
    doc = job("research", "x", 1, {"nvidia.com/gpu": 1})
    del doc["metadata"]["labels"]
    (j,) = estate("aws-train").walk(doc)
    assert j.verdict == "runs" and "ClusterQueue research" in j.stages[2].detail


def test_the_untrusted_tenants_job_lands_on_its_dedicated_flavor(estate: Callable[[str], Estate]) -> None:
    (j,) = estate("aws-train").walk(job("agents", "agents", 1, {"nvidia.com/gpu": 1}))
    assert j.verdict == "runs", j.to_dict()
    assert "flavor agents-l40s" in j.stages[2].detail


def test_hybrid_an_rdma_gang_is_dispatched_to_onprem_first(estate: Callable[[str], Estate]) -> None:
    hybrid = estate("hybrid")
    limits = fabric_requests(hybrid.spec, hybrid.spec.site_of_pool("base"), hybrid.spec.pool("base"))
    (j,) = hybrid.walk(job("research", "research", 2, limits))
    assert j.verdict == "runs", j.to_dict()
    assert "dispatches it to onprem (first in order: its admission and quota fit)" in j.stages[2].detail


def test_hybrid_a_gang_no_worker_admits_names_every_worker_tried(estate: Callable[[str], Estate]) -> None:
    # research may hold 32 GPUs at once on each worker (its namespace quota there); 5 pods x 8 = 40
    (j,) = estate("hybrid").walk(job("research", "research", 5, {"nvidia.com/gpu": 8}))
    stop = j.blocked_at
    assert stop is not None and stop.name == "queueing" and stop.blocker == "MultiKueueConfig/hyb-onprem-cloud"
    assert "flavor dispatch on the manager" in stop.detail
    assert "onprem: admission refuses it" in stop.detail and "cloud: admission refuses it" in stop.detail


def test_hybrid_the_cloud_burst_queue_admits_nothing_without_a_window(estate: Callable[[str], Estate]) -> None:
    from gpufleet.review.reality.journeys import queueing
    from gpufleet.review.reality.journeys.core import Walk
    from gpufleet.review.reality.journeys.workloads import workload

    e = estate("hybrid")
    w = workload(job("research", "research", 1, {"nvidia.com/gpu": 8}), "test")
    result = queueing.judge(Walk(w, e.clusters["cloud"], e.clusters, e.spec), e.clusters["cloud"], list(w.pod_sets))
    assert isinstance(result, Stage) and not result.ok
    assert "stopPolicy HoldAndDrain" in result.detail and result.blocker == "ClusterQueue/research"


def test_an_admission_policy_refuses_a_pod_tolerating_another_tenants_nodes(estate: Callable[[str], Estate]) -> None:
    spec = copy.deepcopy(RESTRICTED_POD_SPEC)
    spec["tolerations"] = [{"key": "tenant", "operator": "Equal", "value": "agents", "effect": "NoSchedule"}]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sneak", "namespace": "product"}, "spec": spec}
    (j,) = estate("aws-train").walk(pod)
    stop = j.blocked_at
    assert stop is not None and stop.name == "admission"
    assert stop.blocker == "ValidatingAdmissionPolicy/gpufleet-tenant-tolerations"


def test_limit_range_defaults_reach_kueue(estate: Callable[[str], Estate]) -> None:
    from gpufleet.review.reality.journeys import admission
    from gpufleet.review.reality.journeys.core import Walk
    from gpufleet.review.reality.journeys.workloads import workload

    e = estate("aws-train")
    state = Walk(
        workload(job("product", "product", 1, {"nvidia.com/gpu": 1}), "t"), e.clusters["use1"], e.clusters, e.spec
    )
    assert admission.check(state).ok
    resources = state.pod_sets[0].spec["containers"][0]["resources"]
    assert resources["requests"] == {"nvidia.com/gpu": 1, "cpu": "1", "memory": "4Gi"}  # tenant-limits defaults
    assert resources["limits"] == {"nvidia.com/gpu": 1, "cpu": "4", "memory": "16Gi"}


def test_outside_kueues_namespaces_a_job_without_a_queue_is_not_queued(estate: Callable[[str], Estate]) -> None:
    doc = job("default", "x", 1, {"cpu": 1})
    del doc["metadata"]["labels"]
    (j,) = estate("aws-train").walk(doc)
    assert j.verdict == "runs" and "not queued" in j.stages[2].detail and "bypasses quota" in j.stages[2].detail


def _with(view: ClusterView, *objects: dict[str, Any]) -> ClusterView:
    return dataclasses.replace(view, objects=(*view.objects, *objects))


def test_an_admission_policy_on_jobs_refuses_the_job_object(estate: Callable[[str], Estate]) -> None:
    # https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/ (the replicas example)
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "max-parallelism"},
        "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": ["batch"], "apiVersions": ["v1"],
                                                    "operations": ["CREATE"], "resources": ["jobs"]}]},
            "validations": [{"expression": "object.spec.parallelism <= 2", "message": "at most 2 pods"}],
        },
    }  # fmt: skip
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "max-parallelism"},
        "spec": {"policyName": "max-parallelism", "validationActions": ["Deny"]},
    }
    e = estate("aws-train")
    views = {**e.clusters, "use1": _with(e.clusters["use1"], policy, binding)}
    blocked = walk(read([MANIFESTS / "efa-gang.yaml"])[0], views, e.spec)
    assert blocked.verdict == "runs"  # parallelism 2
    from gpufleet.review.reality.journeys.workloads import workload

    j = walk(workload(job("research", "research", 3, {"nvidia.com/gpu": 1}), "t"), views, e.spec)
    stop = j.blocked_at
    assert stop is not None and stop.name == "admission" and stop.blocker == "ValidatingAdmissionPolicy/max-parallelism"
    assert "at most 2 pods" in stop.detail


def _topology_job(level: str) -> dict[str, Any]:
    doc = job("research", "research", 2, {"nvidia.com/gpu": 8})
    doc["spec"]["template"]["metadata"] = {"annotations": {"kueue.x-k8s.io/podset-required-topology": level}}
    return doc


def test_a_topology_request_needs_a_flavor_with_that_topology_level(estate: Callable[[str], Estate]) -> None:
    # onprem's pool `base` is on an InfiniBand fabric with a Topology (rack, leaf, hostname)
    from gpufleet.review.reality.journeys import queueing
    from gpufleet.review.reality.journeys.core import Walk
    from gpufleet.review.reality.journeys.workloads import workload

    e = estate("hybrid")
    onprem = e.clusters["onprem"]

    def on_onprem(level: str) -> object:
        w = workload(_topology_job(level), "t")
        return queueing.judge(Walk(w, onprem, e.clusters, e.spec), onprem, [p.copy() for p in w.pod_sets])

    assert isinstance(on_onprem("topology.gpufleet.io/rack"), queueing.Admitted)
    zone = on_onprem("example.com/zone")
    assert isinstance(zone, Stage) and 'Flavor "base" does not contain the requested level' in zone.detail
    # aws-train: h100's Topology has EKS's layers, no rack; l40s and agents-l40s single hosts (gpufleet-hosts).
    (rack,) = estate("aws-train").walk(_topology_job("topology.gpufleet.io/rack"))
    assert rack.blocked_at is not None and rack.blocked_at.name == "queueing", rack.to_dict()
    assert 'Flavor "h100" does not contain the requested level' in rack.blocked_at.detail
    assert 'Flavor "l40s" does not contain the requested level' in rack.blocked_at.detail
    (layer,) = estate("aws-train").walk(_topology_job("topology.k8s.aws/network-node-layer-3"))
    assert layer.verdict == "runs", layer.to_dict()
    # a required layer on a pool whose Topology lacks it: refused as Kueue would (checkPodSetAndFlavorMatchForTAS)
    doc = _topology_job("topology.k8s.aws/network-node-layer-3")
    doc["spec"]["template"]["spec"]["nodeSelector"] = {"gpufleet.io/pool": "l40s"}
    doc["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 1}}
    (l40s,) = estate("aws-train").walk(doc)
    assert l40s.blocked_at is not None and l40s.blocked_at.name == "queueing", l40s.to_dict()
    assert 'Flavor "l40s" does not contain the requested level' in l40s.blocked_at.detail


def test_an_eks_gang_for_the_efa_pool_written_without_a_topology_request_runs(
    estate: Callable[[str], Estate],
) -> None:
    # Every flavor of aws-train's ClusterQueues is TAS, so Kueue implies a request for a pod set that makes none
    # (kueue v0.19.2 tas_flavorassigner.go isTASImplied; a queue mixing TAS and other flavors would refuse it with
    # "supports only TopologyAwareScheduling"): the job as a user writes it, pinned to the pool, runs.
    doc = job("research", "research", 2, {"nvidia.com/gpu": 8})
    doc["spec"]["template"]["spec"]["nodeSelector"] = {"gpufleet.io/pool": "h100"}
    (j,) = estate("aws-train").walk(doc)
    assert j.verdict == "runs", j.to_dict()
    assert j.placement is not None and j.placement.pool == "h100"


def test_hybrid_a_topology_request_passes_the_manager_and_is_placed_by_the_on_prem_worker(
    estate: Callable[[str], Estate],
) -> None:
    # Kueue checks TAS on the manager's ClusterQueue too (checkPodSetAndFlavorMatchForTAS) before MultiKueue
    # delays the topology assignment to the worker, so the manager's dispatch flavor is a TAS flavor
    # (components/hybrid/manager.py); without that the manager refused every topology request.
    (j,) = estate("hybrid").walk(_topology_job("topology.gpufleet.io/rack"))
    assert j.verdict == "runs", j.to_dict()
    assert j.placement is not None and j.placement.site == "onprem"
    manager = estate("hybrid").clusters["manager"]
    flavor = manager.get("ResourceFlavor", "dispatch")
    assert flavor is not None and flavor["spec"]["topologyName"] == "dispatch"
    assert manager.get("Topology", "dispatch") is not None


def test_without_a_default_local_queue_kueue_keeps_a_queueless_job_suspended(estate: Callable[[str], Estate]) -> None:
    # pkg/controller/jobframework/utils.go WorkloadShouldBeSuspended: managed namespace, no queue name -> suspended;
    # defaults.go: the queue name defaults only when a LocalQueue `default` exists
    e = estate("aws-train")
    use1 = e.clusters["use1"]
    kept = tuple(o for o in use1.objects if not (o.get("kind") == "LocalQueue" and o["metadata"]["name"] == "default"))
    views = {**e.clusters, "use1": dataclasses.replace(use1, objects=kept)}
    doc = job("research", "x", 1, {"nvidia.com/gpu": 1})
    del doc["metadata"]["labels"]
    from gpufleet.review.reality.journeys.workloads import workload

    j = walk(workload(doc, "t"), views, e.spec)
    stop = j.blocked_at
    assert stop is not None and stop.name == "queueing" and stop.blocker == "LocalQueue/research/default"
    assert "stays suspended" in stop.detail and "kueue.x-k8s.io/queue-name" in stop.unblock


def test_an_untrusted_tenants_bare_pod_is_refused_on_eks_but_its_jobs_pods_are_not(
    estate: Callable[[str], Estate],
) -> None:
    """The Job controller owns the pods it creates, so the untrusted tenant's owner rule admits them; a bare Pod
    has no owner, and the VPC CNI would apply no NetworkPolicy to it (EKS user guide, cni-network-policy)."""
    restricted = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    container = {"name": "c", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": 1}},
                 "securityContext": restricted}  # fmt: skip
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "bare", "namespace": "agents", "labels": {"kueue.x-k8s.io/queue-name": "agents"}},
        "spec": {
            "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [container],
        },
    }
    (j,) = estate("aws-train").walk(pod)
    stop = j.blocked_at
    assert stop is not None and stop.blocker == "ValidatingAdmissionPolicy/gpufleet-untrusted-agents"
    assert "created by a controller" in stop.detail
    (owned,) = estate("aws-train").walk(job("agents", "agents", 1, {"nvidia.com/gpu": 1}))
    assert owned.verdict == "runs", owned.to_dict()


def test_a_request_above_the_limit_range_default_limit_is_refused_at_admission(
    estate: Callable[[str], Estate],
) -> None:
    """A container asking for 32 CPUs without a limit gets the namespace's default limit (4), and the API server
    refuses a request above its limit (https://kubernetes.io/docs/concepts/policy/limit-range/)."""
    doc = job("research", "research", 1, {"nvidia.com/gpu": 1})
    doc["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "32", "memory": "64Gi"}
    (j,) = estate("aws-train").walk(doc)
    stop = j.blocked_at
    assert stop is not None and stop.name == "admission", j.to_dict()
    assert "above its limit" in stop.detail and "resources.limits.cpu" in stop.detail


def test_a_job_asking_for_ephemeral_storage_is_admitted_by_kueue(estate: Callable[[str], Estate]) -> None:
    """Kueue's default quota check blocks a resource the ClusterQueue does not cover unless the Configuration
    excludes it (pkg/scheduler/flavorassigner/flavorassigner.go at versions.KUEUE); scratch space is per node."""
    (j,) = estate("aws-train").walk(job("research", "research", 1, {"nvidia.com/gpu": 1, "ephemeral-storage": "50Gi"}))
    queueing = next(s for s in j.stages if s.name == "queueing")
    assert queueing.ok, j.to_dict()


def test_a_pod_naming_a_service_account_the_namespace_lacks_is_refused(estate: Callable[[str], Estate]) -> None:
    doc = job("research", "research", 1, {"nvidia.com/gpu": 1})
    doc["spec"]["template"]["spec"]["serviceAccountName"] = "trainer"
    (j,) = estate("aws-train").walk(doc)
    stop = j.blocked_at
    assert stop is not None and stop.name == "admission" and stop.blocker == "ServiceAccount/research/trainer"


def test_a_refusal_promised_at_one_stage_does_not_answer_as_promised_at_another() -> None:
    stages = tuple(Stage(name, name != "queueing", "") for name in STAGES)
    (w,) = read([MANIFESTS / "efa-gang.yaml"])
    blocked = Journey(w, stages, expected="blocked", expected_stage="network")
    assert blocked.verdict == "blocked" and not blocked.as_expected
    assert dataclasses.replace(blocked, expected_stage="queueing").as_expected
    assert dataclasses.replace(blocked, expected_stage=None).as_expected
    assert blocked.promise == "blocked at network" and blocked.to_dict()["expected_stage"] == "network"


def _affinity(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]}}}  # fmt: skip


def test_kueue_matches_required_node_affinity_against_the_flavors(estate: Callable[[str], Estate]) -> None:
    """Kueue's flavor assigner matches nodeSelector and required node affinity against each flavor's nodeLabels
    (pkg/scheduler/flavorassigner/flavorassigner.go at versions.KUEUE, flavorSelector): a one-GPU job that may only
    run off the H100s is admitted on the next flavor, l40s, not on h100 where its pods would never schedule."""
    pool = "gpufleet.io/pool"
    cases = [
        ([{"key": pool, "operator": "NotIn", "values": ["h100"]}],),  # NotIn: skip h100
        ([{"key": pool, "operator": "In", "values": ["l40s"]}],),  # In
        ([{"key": pool, "operator": "DoesNotExist"}], [{"key": pool, "operator": "In", "values": ["l40s"]}]),  # OR
    ]
    for terms in cases:
        doc = job("research", "research", 1, {"nvidia.com/gpu": 1})
        doc["spec"]["template"]["spec"]["affinity"] = _affinity(*terms)
        (j,) = estate("aws-train").walk(doc)
        assert j.verdict == "runs", j.to_dict()
        assert "flavor l40s" in j.stages[2].detail and j.placement is not None and j.placement.pool == "l40s"
    doc["spec"]["template"]["spec"]["affinity"] = _affinity([{"key": pool, "operator": "In", "values": ["a100"]}])
    (none,) = estate("aws-train").walk(doc)
    stop = none.blocked_at
    assert stop is not None and stop.name == "queueing" and "doesn't match node affinity" in stop.detail
