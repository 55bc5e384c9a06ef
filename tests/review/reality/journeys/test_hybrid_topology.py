"""A hybrid estate whose EKS worker also schedules by topology: a p5 pool (not burst, for a tenant of its own) on an EFA fabric beside the
bare-metal worker's InfiniBand fabric. The manager's dispatch Topology must hold both workers' levels, or Kueue
refuses there a gang asking for EKS's layer ("does not contain the requested level", kubernetes-sigs/kueue v0.19.2
pkg/scheduler/flavorassigner/tas_flavorassigner.go checkPodSetAndFlavorMatchForTAS) and never dispatches it. Its
levels are fixed, every one a worker can have, so adding the pool leaves it as it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpufleet.charts.cache import ChartCache
from gpufleet.engine.synth import synth
from gpufleet.review.reality.checks import render
from gpufleet.review.reality.journeys.canonical import canonical
from gpufleet.review.reality.journeys.estate import clusters
from gpufleet.review.reality.journeys.walk import walk
from gpufleet.review.reality.journeys.workloads import workload
from model import conventions, dispatch, queues
from model.load import ESTATE_KEY, parse_estate
from tests.conftest import example_config, write_project

EKS_LAYERS = tuple(f"topology.k8s.aws/network-node-layer-{n}" for n in (1, 2, 3))


def _with_eks_training_pool() -> dict[str, Any]:
    config = example_config("hybrid")
    cloud = next(s for s in config[ESTATE_KEY]["sites"] if s["name"] == "cloud")
    cloud["fabrics"].append(
        {"kind": "efa", "name": "train-efa", "availability_zone": "us-east-1a", "subnet_cidr": "10.50.144.0/20"}
    )
    cloud["node_pools"].append(
        {
            "name": "h100",
            "role": "training",
            "instance_type": "p5.48xlarge",
            "fabric": "train-efa",
            "scaling": {"min": 0, "max": 2},
        }
    )
    # a bursting tenant's queue on the burst site is its burst queue: a tenant of its own runs there
    config[ESTATE_KEY]["tenants"].append(
        {"name": "vision", "gpu_quota": {"h100": 16}, "members": ["oidc:vision-ml"], "rdma": True}
    )
    return config


@pytest.fixture(scope="module")
def hybrid_eks(tmp_path_factory: pytest.TempPathFactory, chart_cache: ChartCache) -> tuple[Any, Any]:
    config = _with_eks_training_pool()
    plan = synth(write_project(tmp_path_factory.mktemp("hybrid-eks"), config), "test")
    return parse_estate(config[ESTATE_KEY], "hybrid-eks"), clusters(plan, render(plan, chart_cache))


def test_the_managers_dispatch_topology_holds_every_workers_levels() -> None:
    spec = parse_estate(_with_eks_training_pool()[ESTATE_KEY], "hybrid-eks")
    cloud = spec.site("cloud")
    assert queues.topology_request(cloud, spec.pool("h100")) == {queues.PREFERRED_TOPOLOGY_ANNOTATION: EKS_LAYERS[-1]}
    # every level a worker can have: bare metal's rack, NVLink clique and leaf, then EKS's four layers, widest first
    levels = dispatch.manager_topology_levels(spec)
    assert levels == (
        conventions.RACK_LABEL,
        conventions.GPU_CLIQUE_LABEL,
        conventions.LEAF_LABEL,
        *conventions.EKS_NETWORK_LAYER_LABELS,
    )
    worker_levels = {
        lv["nodeLabel"]
        for site in dispatch.workers(spec)
        for topology in queues.site_topologies(site).values()
        for lv in topology["levels"]
    }
    assert worker_levels - {conventions.HOSTNAME_LABEL} <= set(levels)
    # Kueue: at most 16 levels, unique, the hostname only last (apis/kueue/v1beta2/topology_types.go at v0.19.2)
    labels = [lv["nodeLabel"] for lv in queues.topology_spec(levels)["levels"]]
    assert len(labels) <= 16 and len(set(labels)) == len(labels) and labels[-1] == conventions.HOSTNAME_LABEL


def test_adding_a_worker_efa_pool_leaves_the_managers_topology_as_it_was(tmp_path: Path) -> None:
    def dispatch_topology(name: str, config: dict[str, Any]) -> Any:
        (tmp_path / name).mkdir()
        plan = synth(write_project(tmp_path / name, config), "test")
        (topology,) = [
            r
            for r in plan.kubernetes_objects()
            if r.inputs["kind"] == "Topology" and r.inputs["metadata"].get("name") == "dispatch"
        ]
        return topology.key, topology.inputs["spec"]

    before = dispatch_topology("before", example_config("hybrid"))
    after = dispatch_topology("after", _with_eks_training_pool())
    assert after == before


def test_the_eks_gang_gpufleet_promises_is_dispatched_to_the_cloud_worker(hybrid_eks: tuple[Any, Any]) -> None:
    spec, views = hybrid_eks
    pinned = {conventions.POOL_LABEL: "h100"}
    (gang,) = [
        c
        for c in canonical(spec)
        if c.manifest["metadata"]["name"].startswith("gang-") and c.manifest["spec"]["template"]["spec"].get(
            "nodeSelector") == pinned
    ]  # fmt: skip
    annotations = gang.manifest["spec"]["template"]["metadata"]["annotations"]
    assert annotations[queues.PREFERRED_TOPOLOGY_ANNOTATION] == EKS_LAYERS[-1]
    j = walk(workload(gang.manifest, "canonical"), views, spec)
    assert j.verdict == "runs", j.to_dict()
    assert j.placement is not None and (j.placement.site, j.placement.pool) == ("cloud", "h100")
    topology = views["manager"].get("Topology", "dispatch")
    assert topology is not None
    assert set(EKS_LAYERS) <= {lv["nodeLabel"] for lv in topology["spec"]["levels"]}


def test_the_dispatch_topology_and_its_flavor_and_queues_are_replaced_when_its_levels_change(
    tmp_path: Path,
) -> None:
    plan = synth(write_project(tmp_path, _with_eks_training_pool()), "test")
    objects = {r.key: r for r in plan.kubernetes_objects() if r.inputs["metadata"].get("name") == "dispatch"}
    (topology,) = [r for r in objects.values() if r.inputs["kind"] == "Topology"]
    (flavor,) = [r for r in objects.values() if r.inputs["kind"] == "ResourceFlavor"]
    assert topology.replace_on_changes == ["spec.levels"] and topology.delete_before_replace
    assert flavor.replace_with == [topology.key] and flavor.delete_before_replace
    assert flavor.replace_on_changes == ["spec.topologyName", "spec.nodeLabels", "spec.tolerations"]
    manager_queues = [
        r for r in plan.kubernetes_objects() if r.inputs["kind"] == "ClusterQueue" and "KueueManager" in r.key
    ]
    assert manager_queues and all(q.replace_with == [flavor.key] and q.delete_before_replace for q in manager_queues)
