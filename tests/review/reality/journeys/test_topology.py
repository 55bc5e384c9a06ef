"""Topology-aware scheduling. On bare metal every flavor of a site with a fabric Topology is topology-aware, so a
job asks for no topology and Kueue implies one; on EKS only the EFA flavor is, behind a ProvisioningRequest check (kubernetes-sigs/kueue at versions.KUEUE,
pkg/scheduler/flavorassigner/tas_flavorassigner.go isTASImplied; pkg/cache/scheduler/tas_flavor_snapshot.go
levelKeyWithImpliedFallback: unconstrained at the lowest level)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from gpufleet.review.reality.journeys import topology
from gpufleet.review.reality.journeys.canonical import canonical
from gpufleet.review.reality.journeys.core import Journey, Stage
from gpufleet.review.reality.journeys.workloads import workload
from model.rdma import fabric_requests
from tests.review.reality.journeys.conftest import Estate
from tests.review.reality.journeys.test_walk import job


def test_an_rdma_gang_without_a_topology_annotation_runs_on_the_fabric_pool(estate: Callable[[str], Estate]) -> None:
    onprem = estate("onprem")
    limits = fabric_requests(onprem.spec, onprem.spec.site_of_pool("train"), onprem.spec.pool("train"))
    doc = job("research", "research", 2, limits)
    doc["spec"]["template"]["spec"]["nodeSelector"] = {"gpufleet.io/pool": "train"}
    (j,) = onprem.walk(doc)
    assert j.verdict == "runs", j.to_dict()
    assert j.placement is not None and j.placement.flavor == "train" and j.placement.nodes == 2


def test_a_job_off_the_fabric_runs_on_the_hosts_topology_flavor(estate: Callable[[str], Estate]) -> None:
    onprem = estate("onprem")
    doc = job("research", "research", 1, {"nvidia.com/mig-1g.10gb": 1})
    (j,) = onprem.walk(doc)
    assert j.verdict == "runs", j.to_dict()
    flavor = onprem.clusters["dc1"].get("ResourceFlavor", "dev")
    assert flavor is not None and flavor["spec"]["topologyName"] == "gpufleet-hosts"


LAYER_3 = "topology.k8s.aws/network-node-layer-3"
PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
REQUIRED = "kueue.x-k8s.io/podset-required-topology"


def _stage(j: Journey, name: str) -> Stage:
    return next(s for s in j.stages if s.name == name)


def test_the_aws_train_gang_asks_for_ekss_lowest_layer_and_is_admitted_through_the_provisioning_check(
    estate: Callable[[str], Estate],
) -> None:
    # kueue v0.19.2: the annotation (topology_aware_scheduling.md "User-facing APIs"); the check on h100 only
    # (admission_check/_index.md onFlavors); the topology after provisioning (tas_flavorassigner.go
    # podSetTopologyRequest, "ClusterAutoscaler support").
    e = estate("aws-train")
    (gang,) = [c for c in canonical(e.spec) if "gang on h100" in c.title]
    assert gang.manifest["spec"]["template"]["metadata"]["annotations"] == {PREFERRED: LAYER_3}
    (j,) = e.walk(gang.manifest)
    assert j.verdict == "runs", j.to_dict()
    queueing = _stage(j, "queueing")
    assert "flavor h100" in queueing.detail and "admission check gpufleet-topology-capacity" in queueing.detail
    assert "ProvisioningRequest (best-effort-atomic-scale-up.autoscaling.x-k8s.io)" in queueing.detail
    assert any("provisioning_request.md" in c.where for c in queueing.cites)
    stage = _stage(j, "topology")
    assert "on Topology train-efa" in stage.detail and f"request preferred at {LAYER_3}" in stage.detail
    assert "topology assigned after provisioning" in stage.detail
    assert any("tas_flavorassigner.go" in c.where for c in stage.cites)
    # a one-GPU job (no annotation) runs too: every flavor is TAS, so Kueue implies its request, and on the
    # autoscaled l40s pool it goes through the same check
    (small,) = e.walk(job("product", "product", 1, {"nvidia.com/gpu": 1}))
    assert small.verdict == "runs", small.to_dict()


def _without_check(e: Estate) -> Estate:
    """aws-train as a cluster whose research ClusterQueue lost its ProvisioningRequest check."""
    name = next(n for n, c in e.clusters.items() if c.get("ResourceFlavor", "h100"))
    view = e.clusters[name]
    objects = []
    for o in copy.deepcopy(list(view.objects)):
        if o.get("kind") == "ClusterQueue" and o["metadata"]["name"] == "research":
            o["spec"].pop("admissionChecksStrategy")
        objects.append(o)
    return Estate({**e.clusters, name: replace(view, objects=tuple(objects))}, e.spec)


def test_a_gang_on_a_min_0_pool_of_a_tas_flavor_is_blocked_without_a_provisioning_check(
    estate: Callable[[str], Estate],
) -> None:
    # h100 scales from 0; Kueue assigns topology against Ready nodes before any pod exists ("Capacity calculation").
    e = estate("aws-train")
    (gang,) = [c for c in canonical(e.spec) if "gang on h100" in c.title]
    (j,) = _without_check(e).walk(gang.manifest)
    assert j.verdict == "blocked" and j.blocked_at is not None and j.blocked_at.name == "topology", j.to_dict()
    assert "0 minimum nodes" in j.blocked_at.detail and "ProvisioningRequest" in j.blocked_at.unblock


def test_the_onprem_canonical_gang_asks_for_its_leaf(estate: Callable[[str], Estate]) -> None:
    (gang,) = [c for c in canonical(estate("onprem").spec) if "gang on train" in c.title]
    assert gang.manifest["spec"]["template"]["metadata"]["annotations"] == {PREFERRED: "topology.gpufleet.io/leaf"}


def test_a_gang_without_an_annotation_gets_the_implied_request_on_a_tas_only_queue(
    estate: Callable[[str], Estate],
) -> None:
    onprem = estate("onprem")
    limits = fabric_requests(onprem.spec, onprem.spec.site_of_pool("train"), onprem.spec.pool("train"))
    doc = job("research", "research", 2, limits)
    doc["spec"]["template"]["spec"]["nodeSelector"] = {"gpufleet.io/pool": "train"}
    (j,) = onprem.walk(doc)
    assert j.verdict == "runs", j.to_dict()
    topology = _stage(j, "topology")
    assert "request none, so Kueue implies unconstrained at kubernetes.io/hostname" in topology.detail
    assert any("tas_flavor_snapshot.go" in c.where for c in topology.cites)


def _job(pods: int, annotations: dict[str, str]) -> dict[str, Any]:
    doc = job("research", "research", pods, {"nvidia.com/gpu": 8})
    doc["spec"]["template"]["spec"]["nodeSelector"] = {"gpufleet.io/pool": "train"}
    doc["spec"]["template"]["metadata"] = {"annotations": annotations}
    return doc


def test_a_jobset_and_a_pytorchjob_carry_their_topology_request_per_pod_set() -> None:
    """The annotation sits on each replicated job's (JobSet) or replica's (PyTorchJob) pod template."""
    pod = job("research", "research", 2, {"nvidia.com/gpu": 8})["spec"]["template"]
    pod["metadata"] = {"annotations": {REQUIRED: LAYER_3}}
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "gang", "namespace": "research"},
        "spec": {"replicatedJobs": [{"name": "workers", "replicas": 1, "template": {
            "spec": {"parallelism": 2, "completions": 2, "template": pod}}}]},
    }  # fmt: skip
    pytorch = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "ddp", "namespace": "research"},
        "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 2, "template": pod}}},
    }
    levels = [*(f"topology.k8s.aws/network-node-layer-{n}" for n in (1, 2, 3)), "kubernetes.io/hostname"]
    for doc in (jobset, pytorch):
        (ps,) = workload(doc, "test").pod_sets
        assert topology.request(ps, levels) == ("required", LAYER_3), doc["kind"]
    del pod["metadata"]
    (ps,) = workload(jobset, "test").pod_sets
    assert topology.request(ps, levels) == ("implied", "kubernetes.io/hostname")


def test_a_required_rack_the_inventory_cannot_hold_is_refused_at_the_topology_stage(
    estate: Callable[[str], Estate],
) -> None:
    # onprem's pool train: 4 servers in rack r1, 2 in r2; one 8-GPU pod per server.
    onprem = estate("onprem")
    (fits,) = onprem.walk(_job(4, {REQUIRED: "topology.gpufleet.io/rack"}))
    assert fits.verdict == "runs", fits.to_dict()
    assert "the largest topology.gpufleet.io/rack domain has 4 nodes" in _stage(fits, "topology").detail
    (too_big,) = onprem.walk(_job(6, {REQUIRED: "topology.gpufleet.io/rack"}))
    assert too_big.verdict == "blocked" and too_big.blocked_at is not None
    assert too_big.blocked_at.name == "topology" and "it never fits" in too_big.blocked_at.detail
    assert PREFERRED in too_big.blocked_at.unblock
    (preferred,) = onprem.walk(_job(6, {PREFERRED: "topology.gpufleet.io/rack"}))
    assert preferred.verdict == "runs", preferred.to_dict()


def test_a_required_eks_layer_is_judged_on_the_nodes_the_autoscaler_adds(estate: Callable[[str], Estate]) -> None:
    doc = job("research", "research", 2, {"nvidia.com/gpu": 8})
    doc["spec"]["template"]["metadata"] = {"annotations": {REQUIRED: LAYER_3}}
    (j,) = estate("aws-train").walk(doc)
    assert j.verdict == "runs", j.to_dict()
    stage = _stage(j, "topology")
    assert f"request required at {LAYER_3}" in stage.detail and "Ready nodes' labels" in stage.detail


def test_a_cpu_only_tenant_job_on_aws_train_is_admitted_and_asks_the_autoscaler_for_its_node(
    estate: Callable[[str], Estate],
) -> None:
    # research's ClusterQueue lists h100 (min 0, behind gpufleet-topology-capacity) first, so a job asking for no
    # GPU takes it. kueue v0.19.2 controller.go reqIsNeeded: a config with managedResources makes no request for a
    # pod set using none of them (NoRequestNeeded), and TAS then waits for Ready nodes h100 does not have. With no
    # managedResources every pod set gets one.
    e = estate("aws-train")
    (j,) = e.walk(job("research", "research", 1, {"cpu": "4", "memory": "8Gi"}))
    assert j.verdict == "runs", j.to_dict()
    assert "flavor h100" in _stage(j, "queueing").detail
    assert "topology assigned after provisioning" in _stage(j, "topology").detail
    assert j.placement is not None and j.placement.flavor == "h100"


def test_a_cpu_only_job_behind_a_check_managing_gpus_only_is_blocked_on_a_min_0_pool(
    estate: Callable[[str], Estate],
) -> None:
    e = estate("aws-train")
    name = next(n for n, c in e.clusters.items() if c.get("ResourceFlavor", "h100"))
    view = e.clusters[name]
    objects = []
    for o in copy.deepcopy(list(view.objects)):
        if o.get("kind") == "ProvisioningRequestConfig":
            o["spec"]["managedResources"] = ["nvidia.com/gpu"]
        objects.append(o)
    gpus_only = Estate({**e.clusters, name: replace(view, objects=tuple(objects))}, e.spec)
    (j,) = gpus_only.walk(job("research", "research", 1, {"cpu": "4", "memory": "8Gi"}))
    assert j.verdict == "blocked" and j.blocked_at is not None and j.blocked_at.name == "topology", j.to_dict()
    assert "NoRequestNeeded" in j.blocked_at.detail and "managedResources" in j.blocked_at.unblock
    assert any("admissionchecks/provisioning/controller.go" in c.where for c in j.blocked_at.cites)
    # a GPU job on the same flavor still gets its request
    (gpu,) = gpus_only.walk(job("research", "research", 1, {"nvidia.com/gpu": 8}))
    assert gpu.verdict == "runs", gpu.to_dict()
