"""A gang that asks for its fabric's devices is admissible to every ClusterQueue that may take it.

Kueue v0.19.2 checks each resource a workload requests against its ClusterQueue: one the queue does not cover
blocks admission ("resource %s unavailable in ClusterQueue", pkg/scheduler/flavorassigner/flavorassigner.go at
the pinned tag), unless the Configuration's `resources.excludeResourcePrefixes` drops it from the workload first
(pkg/workload/workload.go, dropExcludedResources: `strings.HasPrefix(name, prefix)`). The pod's requests are the
ones `gpufleet verify` submits for a pool's NCCL test (model.rdma.fabric_requests): its GPUs and
its fabric's devices, plus CPU and memory.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.engine.plan import Plan, PlanResource
from model.load import parse_estate
from model.rdma import SRIOV_RESOURCE_PREFIX, fabric_requests, sriov_resource_name, uses_sriov
from model.spec import EstateSpec
from tests.conftest import example_config, write_project
from tests.hybrid.plan_helpers import kueue_config

CLUSTER_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"
RELEASE = "kubernetes:helm.sh/v3:Release"


def admissible(requests: dict[str, str], covered: set[str], excluded: list[str]) -> list[str]:
    """The requested resources Kueue would block: not dropped by a prefix, not covered by the queue."""
    kept = [r for r in requests if not any(r.startswith(p) for p in excluded)]
    return [r for r in kept if r not in covered]


def _gangs(spec: EstateSpec) -> list[tuple[str, str, dict[str, str]]]:
    """(site, pool, one pod's requests) for every pool on a fabric. A pod on SR-IOV virtual functions asks for one
    (`nvidia.com/<resource>: 1`, by hand or through the network's resourceName annotation)."""
    out = []
    for site in spec.sites:
        fabrics = {f.name: f for f in site.fabrics}
        for pool in site.node_pools:
            if not pool.fabric:
                continue
            requests = {**fabric_requests(spec, site, pool), "cpu": "8", "memory": "64Gi"}
            fabric = fabrics[pool.fabric]
            if uses_sriov(fabric):
                requests[f"{SRIOV_RESOURCE_PREFIX}/{sriov_resource_name(fabric)}"] = "1"
            out.append((site.name, pool.name, requests))
    return out


def _queues(plan: Plan) -> list[tuple[PlanResource, dict[str, Any]]]:
    """Each ClusterQueue with the Kueue Configuration of its cluster (the release on the same provider)."""
    configs = {r.provider: kueue_config(r) for r in plan.find(RELEASE) if r.inputs.get("name") == "kueue"}
    return [(q, configs[q.provider]) for q in plan.find(CLUSTER_QUEUE)]


def _sriov() -> dict[str, Any]:
    config = example_config("onprem")
    config["gpufleet:estate"]["sites"][0]["fabrics"] = [
        {"kind": "infiniband", "name": "ib", "device_plugin": "sriov", "ipoib_interface": "ibp24s0"}
    ]
    return config


@pytest.mark.parametrize("stack", ["aws-train", "onprem", "hybrid", "onprem-sriov"])
def test_a_gang_asking_for_its_fabric_is_admissible_to_every_cluster_queue(
    stack: str, example_plans: dict[str, Plan], tmp_path: Any
) -> None:
    from gpufleet.engine.synth import synth

    config = _sriov() if stack == "onprem-sriov" else example_config(stack)
    plan = synth(write_project(tmp_path, config), "test") if stack == "onprem-sriov" else example_plans[stack]
    spec = parse_estate(config["gpufleet:estate"], stack)
    gangs = _gangs(spec)
    assert gangs and any(len(r) > 3 for _, _, r in gangs)  # some pool asks for fabric devices
    blocked = []
    for queue, kueue in _queues(plan):
        covered = {r for g in queue.inputs["spec"]["resourceGroups"] for r in g["coveredResources"]}
        excluded = kueue.get("resources", {}).get("excludeResourcePrefixes", [])
        for site, pool, requests in gangs:
            if any(r.startswith(p) for p in excluded for r in requests if r.startswith("nvidia.com/gpu")):
                blocked.append(f"{queue.name}: GPUs excluded from quota")
            blocked += [f"{queue.name}: {site}/{pool} asks {r}" for r in admissible(requests, covered, excluded)]
    assert blocked == []


def test_the_exclusions_leave_gpus_cpu_and_memory_to_quota() -> None:
    # dropExcludedResources matches by prefix: no exclusion may be a prefix of a quota-managed resource.
    from model.conventions import GPU_RESOURCE, MIG_RESOURCE_PREFIX
    from model.rdma import node_device_prefixes

    spec = parse_estate(_sriov()["gpufleet:estate"], "onprem-sriov")
    prefixes = node_device_prefixes(spec)
    assert "nvidia.com/ib_ib" in prefixes  # the SR-IOV VFs of the fabric, by exact name
    for managed in (GPU_RESOURCE, f"{MIG_RESOURCE_PREFIX}1g.10gb", "cpu", "memory"):
        assert not any(managed.startswith(p) for p in prefixes), managed


def test_admissible_follows_kueues_prefix_semantics() -> None:
    requests = {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32", "cpu": "8"}
    assert admissible(requests, {"cpu", "memory", "nvidia.com/gpu"}, []) == ["vpc.amazonaws.com/efa"]
    assert admissible(requests, {"cpu", "memory", "nvidia.com/gpu"}, ["vpc.amazonaws.com/efa"]) == []
