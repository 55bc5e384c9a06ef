"""Placement: every pod of a gang on the nodes the estate really has, with what each node offers."""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest

from gpufleet.charts.cache import ChartCache
from gpufleet.charts.render import render_plan
from gpufleet.engine.plan import Plan
from gpufleet.engine.synth import synth_stack
from gpufleet.review.reality.journeys import admission, placement
from gpufleet.review.reality.journeys.canonical import canonical
from gpufleet.review.reality.journeys.core import Walk
from gpufleet.review.reality.journeys.estate import clusters
from gpufleet.review.reality.scheduling import pod_spec
from model import catalog, kinds
from model.burst_state import BurstState
from model.load import ESTATE_KEY, parse_estate, parse_window, read_stack
from model.rdma import EFA_RESOURCE, RDMA_RESOURCE_PREFIX, fabric_requests
from tests.burst.helpers import window as burst_window
from tests.conftest import example_config, write_project
from tests.review.reality.journeys.walks import Estate, container, walk

P5 = "h100"  # aws-train's training pool (p5.48xlarge on the train-efa fabric)


def _fabric_gang(estate: Estate, pool: str, cluster: str, pods: int) -> Walk:
    """A gang asking for every GPU of a node and the pool's fabric devices (model.rdma.fabric_requests)."""
    site = estate.spec.site_of_pool(pool)
    requests = fabric_requests(estate.spec, site, estate.spec.pool(pool))
    return walk(estate, cluster, "research", pods, {"containers": [container(requests)]}, flavor=pool)


def _efa_gang(estates: dict[str, Estate], pods: int) -> Walk:
    return _fabric_gang(estates["aws-train"], P5, "use1", pods)


def test_an_efa_gang_on_the_nodes_the_fabric_runs_places_on_the_p5_pool(estates: dict[str, Estate]) -> None:
    running = estates["aws-train"].spec.pool(P5).scaling.desired_nodes  # type: ignore[union-attr]
    w = _efa_gang(estates, running)
    stage = placement.check(w)
    assert stage.ok, stage.detail
    assert w.placement is not None
    assert (w.placement.site, w.placement.pool, w.placement.nodes, w.placement.flavor) == ("use1", P5, running, P5)


def test_nine_gpus_per_pod_are_blocked_naming_the_pool_and_the_per_node_limit(estates: dict[str, Estate]) -> None:
    w = walk(estates["aws-train"], "use1", "research", 1, {"containers": [container({"nvidia.com/gpu": 9})]}, P5)
    stage = placement.check(w)
    assert not stage.ok and w.placement is None
    assert stage.blocker == "NodeGroup/use1-h100-ng"
    assert stage.unblock == "request at most 8 nvidia.com/gpu per pod: p5.48xlarge has 8"


def test_a_gang_beyond_the_pools_max_is_blocked_with_the_nodes_it_needs(estates: dict[str, Estate]) -> None:
    most = estates["aws-train"].spec.pool(P5).scaling.max  # type: ignore[union-attr]
    stage = placement.check(_efa_gang(estates, most + 1))
    assert not stage.ok
    assert stage.blocker == "NodeGroup/use1-h100-ng"
    assert f"needs {most + 1} nodes of pool {P5}" in stage.detail
    assert stage.unblock == f"raise max of pool {P5} to {most + 1}"  # the autoscaler grows it up to max


def test_a_gang_at_the_pools_max_places_on_nodes_the_autoscaler_adds(estates: dict[str, Estate]) -> None:
    # Issue 28, 4.5: Kueue's quota counts the pool at max, and cluster-autoscaler grows it there (min < max).
    most = estates["aws-train"].spec.pool(P5).scaling.max  # type: ignore[union-attr]
    stage = placement.check(_efa_gang(estates, most))
    assert stage.ok, stage
    assert "the cluster-autoscaler must add them" in stage.detail


def test_a_pod_asking_for_efa_off_the_fabric_is_blocked(estates: dict[str, Estate]) -> None:
    spec = {"containers": [container({"nvidia.com/gpu": 1, EFA_RESOURCE: 1})]}
    stage = placement.check(walk(estates["aws-train"], "use1", "research", 1, spec, flavor="l40s"))
    assert not stage.ok and stage.blocker == "NodeGroup/use1-l40s-ng" and EFA_RESOURCE in stage.unblock


def _ib_resource(estates: dict[str, Estate]) -> str:
    estate = estates["onprem"]
    requests = fabric_requests(estate.spec, estate.spec.site_of_pool("train"), estate.spec.pool("train"))
    return next(r for r in requests if r.startswith(RDMA_RESOURCE_PREFIX))


def test_an_rdma_gang_places_on_the_ib_pool_with_its_devices_counted(estates: dict[str, Estate]) -> None:
    estate = estates["onprem"]
    servers = len(kinds.of(estate.spec.site_of_pool("train")).selected_servers("train"))
    w = _fabric_gang(estate, "train", "dc1", servers)
    stage = placement.check(w)
    assert stage.ok, stage.detail
    assert w.placement is not None and (w.placement.pool, w.placement.nodes) == ("train", servers)
    # The RDMA devices are counted: more than the shared device plugin's rdmaHcaMax per node does not fit.
    greedy = {"containers": [container({"nvidia.com/gpu": 8, _ib_resource(estates): 1000})]}
    stage = placement.check(walk(estate, "dc1", "research", 1, greedy, flavor="train"))
    assert not stage.ok and f"request at most 63 {_ib_resource(estates)}" in stage.unblock


def test_a_mig_notebook_places_on_the_dev_pool_and_a_whole_gpu_does_not(estates: dict[str, Estate]) -> None:
    estate = estates["onprem"]
    profile = estate.spec.pool("dev").sharing.mig_profile  # mig_strategy mixed: one resource per profile
    notebook = {"containers": [container({f"nvidia.com/mig-{profile}": 1, "cpu": "4", "memory": "16Gi"})]}
    w = walk(estate, "dc1", "research", 1, notebook, flavor="dev")
    stage = placement.check(w)
    assert stage.ok, stage.detail
    assert w.placement is not None and (w.placement.pool, w.placement.nodes) == ("dev", 1)
    whole = {"containers": [container({"nvidia.com/gpu": 1})]}
    stage = placement.check(walk(estate, "dc1", "research", 1, whole, flavor="dev"))
    assert not stage.ok and "offers none" in stage.unblock


def test_a_gpu_pod_that_bypasses_kueue_is_kept_off_the_gpu_nodes_by_their_taint(estates: dict[str, Estate]) -> None:
    w = walk(estates["aws-train"], "use1", "product", 1, {"containers": [container({"nvidia.com/gpu": 1})]})
    stage = placement.check(w)
    assert not stage.ok
    assert "nvidia.com/gpu=present:NoSchedule" in stage.detail and "LocalQueue" in stage.unblock


def test_a_burst_pool_outside_a_window_has_no_nodes_for_a_gang(estates: dict[str, Estate]) -> None:
    """Idle, the burst group keeps EKS's least max of 1, but it carries the stopped taint the AWS stop sets (the
    program declares it too: model.burst.group_stopped) and the burst Cohort holds no quota: no node may start.
    The journey says so, and does not advise tolerating the taint."""
    estate = estates["hybrid"]
    w = walk(estate, "cloud", "research", 1, {"containers": [container({"nvidia.com/gpu": 8})]}, "burst-h100")
    stage = placement.check(w)
    assert not stage.ok and "pool burst-h100 is stopped" in stage.detail
    assert "gpufleet.io/burst-stopped=backstop:NoSchedule" in stage.detail
    assert stage.unblock == "open a burst window for pool burst-h100"
    assert any("aws_manager.go" in c.where for c in stage.cites)


@pytest.fixture(scope="module")
def windowed(chart_cache: ChartCache, tmp_path_factory: pytest.TempPathFactory) -> Estate:
    """The hybrid example with a window of 2 x p5.48xlarge open (as `preview --burst-window 16:8` has it)."""
    config = example_config("hybrid")
    project = write_project(tmp_path_factory.mktemp("windowed"), config)
    now = dt.datetime(2026, 11, 20, 10, 0, tzinfo=dt.UTC)
    w = parse_window(burst_window(now - dt.timedelta(hours=1), 8, nodes=2), "test")
    state = BurstState(w, (), now).outputs()
    plan = synth_stack(project, "test", read_stack(project, "test"), burst_state=state, now=now)
    return Estate(parse_estate(config[ESTATE_KEY], "test"), clusters(plan, render_plan(plan, chart_cache)))


def _burst_gang(estate: Estate, pods: int) -> Walk:
    return walk(estate, "cloud", "research", pods, {"containers": [container({"nvidia.com/gpu": 8})]}, "burst-h100")


def test_a_gang_on_a_cold_burst_pool_is_placed_by_nodes_the_autoscaler_adds_one_by_one(windowed: Estate) -> None:
    """At 0 nodes, the window lets cluster-autoscaler add the gang's nodes. On AWS that is no atomic scale-up
    (cluster-autoscaler-1.34.2 cloudprovider/aws/aws_cloud_provider.go: AtomicIncreaseSize is not implemented), so
    the journey says the nodes come one by one and that Kueue's waitForPodsReady timeout on the cloud worker (10m +
    burst.node_boot_minutes 15 = 25m, read from its Kueue Configuration) covers their boot."""
    stage = placement.check(_burst_gang(windowed, 2))
    assert stage.ok, stage.detail
    assert "2 pods on 2 nodes of pool burst-h100" in stage.detail
    assert "a burst pool at 0 nodes: the open burst window lets the cluster-autoscaler add up to 2" in stage.detail
    assert "one by one, not all or none" in stage.detail and "Kueue waits 25m" in stage.detail
    assert "15 min of it for the nodes' boot" in stage.detail
    assert any("AtomicIncreaseSize" in c.what for c in stage.cites)


def test_a_burst_gang_at_whole_node_sizes_is_admitted_by_the_namespace_quota_and_placed(windowed: Estate) -> None:
    """2 pods, each 8 GPUs, 150 vCPUs and 1,536 GiB of a p5.48xlarge (192 vCPUs, 2,048 GiB): more than research's
    own CPU and memory quota (256, 2,048 GiB). On the cloud worker its namespace quota holds the burst pool at its
    max too (model.queues.cpu_memory_ceiling), so the pods are admitted and placed, not refused after their nodes
    started."""
    gang = {"containers": [container({"nvidia.com/gpu": 8, "cpu": "150", "memory": "1536Gi"})]}
    w = walk(windowed, "cloud", "research", 2, gang, "burst-h100")
    stage = admission.check(w)
    assert stage.ok, stage.detail
    assert placement.check(w).ok


def test_a_gang_larger_than_the_windows_cap_is_blocked_with_the_window_it_needs(windowed: Estate) -> None:
    stage = placement.check(_burst_gang(windowed, 3))
    assert not stage.ok
    assert (
        "needs 3 nodes of pool burst-h100" in stage.detail and "at most 2 (the open burst window's cap)" in stage.detail
    )
    assert stage.unblock == "open a burst window of 3 nodes on pool burst-h100"
    stage = placement.check(_burst_gang(windowed, 5))  # the pool's own max is 4
    assert stage.unblock == "open a burst window of 5 nodes on pool burst-h100, after raising its max to 5"


def test_the_standalone_device_plugin_advertises_gpus_and_the_mig_slices_hosts_carry(
    synth_config: Callable[[dict[str, Any]], Plan], chart_cache: ChartCache
) -> None:
    config = example_config("onprem")
    kubernetes = config[ESTATE_KEY]["sites"][0]["kubernetes"]
    kubernetes.update(gpu_stack="device-plugin", driver_managed_by="host", gpudirect_rdma="dma-buf")
    plan = synth_config(config)
    estate = Estate(parse_estate(config[ESTATE_KEY], "onprem"), clusters(plan, render_plan(plan, chart_cache)))
    assert not estate.clusters["dc1"].of("ClusterPolicy")
    profile = estate.spec.pool("dev").sharing.mig_profile
    notebook = {"containers": [container({f"nvidia.com/mig-{profile}": 1})]}
    assert placement.check(walk(estate, "dc1", "research", 1, notebook, flavor="dev")).ok
    whole = {"containers": [container({"nvidia.com/gpu": 8})]}
    assert placement.check(walk(estate, "dc1", "research", 2, whole, flavor="train")).ok


def test_a_flavor_that_does_not_tolerate_its_pools_taint_is_reported_as_an_estate_defect(
    estates: dict[str, Estate],
) -> None:
    estate = estates["aws-train"]
    view = estate.clusters["use1"]
    objects = [copy.deepcopy(o) for o in view.objects]
    flavor = next(o for o in objects if o.get("kind") == "ResourceFlavor" and o["metadata"]["name"] == "agents-l40s")
    flavor["spec"]["tolerations"] = [t for t in flavor["spec"]["tolerations"] if t["key"] != "tenant"]
    broken = Estate(estate.spec, {"use1": dataclasses.replace(view, objects=tuple(objects))})
    w = walk(broken, "use1", "agents", 1, {"containers": [container({"nvidia.com/gpu": 1})]}, "agents-l40s")
    stage = placement.check(w)
    assert not stage.ok and stage.blocker == "ResourceFlavor/agents-l40s"
    assert stage.unblock.startswith("estate defect") and "tenant=agents:NoSchedule" in stage.unblock


def test_the_public_efa_nccl_tests_worker_places_on_the_p5_pool(estates: dict[str, Estate]) -> None:
    # The MPIJob worker of awslabs/awsome-distributed-training's EFA nccl-tests for P5 (GPU_PER_WORKER=8,
    # EFA_PER_WORKER=32, HUGEPAGES_2MI=5120Mi, MEMORY=32000Mi), adapted only in namespace and image.
    limits = {"nvidia.com/gpu": 8, EFA_RESOURCE: 32, "hugepages-2Mi": "5120Mi", "memory": "32000Mi"}
    worker = {"containers": [container(limits) | {"resources": {"limits": limits, "requests": limits}}]}
    w = walk(estates["aws-train"], "use1", "research", 2, worker, flavor=P5)
    stage = placement.check(w)
    assert stage.ok, stage.detail
    assert w.placement is not None and w.placement.nodes == 2
    # the launch template pre-allocates 5128 2 MiB pages (model.efa), which leave allocatable memory
    assert "10.0Gi hugepages-2Mi" in stage.detail


def test_hugepages_on_nodes_that_pre_allocate_none_are_blocked_naming_the_fix(estates: dict[str, Estate]) -> None:
    # Nothing reserves huge pages on a non-EFA node: the scheduler leaves the pod Pending.
    asks = {"containers": [container({"nvidia.com/gpu": 1, "hugepages-2Mi": "1Gi", "memory": "4Gi"})]}
    stage = placement.check(walk(estates["aws-train"], "use1", "research", 1, asks, flavor="l40s"))
    assert not stage.ok, stage.detail
    assert "hugepages-2Mi" in stage.detail and stage.unblock.startswith("pre-allocate hugepages-2Mi"), stage


def test_hugepages_on_a_bare_metal_server_are_not_counted(estates: dict[str, Estate]) -> None:
    # gpufleet does not configure a bare-metal host's kernel (its boot parameters are the operator's), so the
    # inventory says nothing of its huge pages: not counted, as its CPUs and memory are not.
    asks = {"containers": [container({"nvidia.com/gpu": 8, _ib_resource(estates): 1, "hugepages-1Gi": "2Gi"})]}
    w = walk(estates["onprem"], "dc1", "research", 1, asks, flavor="train")
    stage = placement.check(w)
    assert stage.ok, stage.detail
    assert "huge pages" in stage.detail and "not counted" in stage.detail


def test_a_gang_beyond_the_inventory_asks_for_more_servers(estates: dict[str, Estate]) -> None:
    estate = estates["onprem"]
    servers = len(kinds.of(estate.spec.site_of_pool("train")).selected_servers("train"))
    spec = {"containers": [container({"nvidia.com/gpu": 8, _ib_resource(estates): 1})]}
    stage = placement.check(walk(estate, "dc1", "research", servers + 1, spec, flavor="train"))
    assert not stage.ok
    assert f"needs {servers + 1} nodes of pool train; it has {servers}" in stage.detail
    assert stage.unblock.startswith("add 1 servers to pool train")


def test_a_time_sliced_pool_offers_its_replicas_per_gpu(
    synth_config: Callable[[dict[str, Any]], Plan], chart_cache: ChartCache
) -> None:
    config = example_config("aws-train")
    estate_doc = config[ESTATE_KEY]
    pool = next(p for p in estate_doc["sites"][0]["node_pools"] if p["name"] == "l40s")
    pool["sharing"] = {"mode": "time-slicing", "replicas": 4, "shared_by": ["research", "product"],
                       "accept_no_isolation": True}  # fmt: skip
    plan = synth_config(config)
    estate = Estate(parse_estate(estate_doc, "aws-train"), clusters(plan, render_plan(plan, chart_cache)))
    per_node = catalog.instance_type(pool["instance_type"]).gpu_count * 4
    flavor = "l40s"
    fits = {"containers": [container({"nvidia.com/gpu": 1})]}
    w = walk(estate, "use1", "research", per_node, fits, flavor=flavor)
    assert placement.check(w).ok and w.placement is not None and w.placement.nodes == 1
    # failRequestsGreaterThanOne: the device plugin never hands one container two shared GPUs.
    two = {"containers": [container({"nvidia.com/gpu": 2})]}
    stage = placement.check(walk(estate, "use1", "research", 1, two, flavor=flavor))
    assert not stage.ok and stage.unblock == "request at most 1 nvidia.com/gpu per container"
    pair = {"containers": [container({"nvidia.com/gpu": 1}), container({"nvidia.com/gpu": 1}) | {"name": "side"}]}
    assert placement.check(walk(estate, "use1", "research", 1, pair, flavor=flavor)).ok


def _canonical_gang(estate: Estate, cluster: str, pool: str) -> Walk:
    """The estate's own canonical fabric gang on `pool`, as Kueue's flavor for the pool admits it."""
    gang = next(c for c in canonical(estate.spec) if c.manifest["metadata"]["name"] == f"gang-{pool}")
    spec = pod_spec(gang.manifest)
    assert spec is not None
    return walk(
        estate, cluster, gang.manifest["metadata"]["namespace"], gang.manifest["spec"]["parallelism"], spec, pool
    )


def test_the_canonical_rdma_gang_places_on_every_server_of_the_ib_pool(estates: dict[str, Estate]) -> None:
    w = _canonical_gang(estates["onprem"], "dc1", "train")
    stage = placement.check(w)
    assert stage.ok, stage.detail
    assert w.placement is not None and w.placement.nodes == w.workload.pods


def test_the_canonical_p5_gang_places_across_the_pool_at_max(estates: dict[str, Estate]) -> None:
    # Issue 28, 4.5: the pool can grow to its max (cluster-autoscaler), so the canonical gang places.
    stage = placement.check(_canonical_gang(estates["aws-train"], "use1", P5))
    assert stage.ok, stage
