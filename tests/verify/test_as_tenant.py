"""Acceptance probes run as a tenant would: in its namespace, through its LocalQueue, as its ServiceAccount, under
its Pod Security level, asking for the fabric's devices; Kueue's admission is waited for, and cleanup leaves
nothing in the tenant's namespace."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.review.reality.journeys.canonical import canonical
from gpufleet.verify import manifests
from gpufleet.verify import suite as suites
from gpufleet.verify.kube import Context
from gpufleet.verify.manifests import Run
from gpufleet.verify.results import Status
from gpufleet.verify.runner import run_site
from model import queues
from model.load import parse_estate, read_stack
from tests.conftest import ROOT, example_estate
from tests.verify.fake_kube import FakeCluster, apis
from tests.verify.test_runner import Clock

FABRIC = [suites.Category.fabric]
NCCL = (suites.Kind.nccl_multi, suites.Kind.nccl_single)


def _suite(spec: Any, stack: str = "test") -> suites.Suite:
    return suites.derive(spec, stack, suites.Options(categories=FABRIC))


def _checks(spec: Any) -> dict[str, suites.Check]:
    return {c.id: c for c in _suite(spec).checks}


@pytest.mark.parametrize("stack", ["aws-train", "onprem", "hybrid"])
def test_every_nccl_probe_is_planned_in_a_fabric_tenants_namespace_through_its_local_queue(stack: str) -> None:
    spec, window, _ = read_stack(ROOT, stack).contents()
    probes = [c for c in _suite(spec, stack).checks if c.kind in NCCL]
    assert probes and {c.kind for c in probes} == set(NCCL)  # the single-node NVLink probe is planned too
    titles = {j.title for j in canonical(spec, window)}
    for c in probes:
        assert c.skip_reason == "", (c.id, c.skip_reason)
        tenant = spec.tenant(c.namespace)
        assert tenant.rdma and c.queue == tenant.name == c.tenant  # LocalQueue = tenant name (model.queues)
        assert c.pool in tenant.gpu_quota or tenant.burst
        assert c.journey in titles and c.journey.startswith(f"{tenant.name}: a ")


def _roce_onprem() -> dict[str, Any]:
    estate = example_estate("onprem")
    estate["sites"][0]["fabrics"] = [{"kind": "roce", "name": "roce", "interfaces": ["ens1f0np0"]}]
    estate["sites"][0]["node_pools"][0]["fabric"] = "roce"
    return estate


def test_roce_probe_is_planned_in_the_tenant_namespace_on_its_sriov_network() -> None:
    spec = parse_estate(_roce_onprem(), "test")
    checks = _checks(spec)
    multi = checks["fabric/dc1/train/multi-node"]
    assert multi.skip_reason == "" and multi.namespace == "research"
    assert checks["fabric/dc1/train/single-node"].skip_reason == ""
    site = spec.sites[0]
    job = manifests.nccl_multi_node_job(Run("r"), "nccl-1", multi.id, spec, site, spec.pool("train"), 2, "research")
    template = job["spec"]["template"]
    # The SR-IOV operator writes SriovNetwork roce-research's NetworkAttachmentDefinition into research.
    assert template["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == "roce-research"
    container = template["spec"]["containers"][0]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "8", "nvidia.com/roce_roce": "1"}
    assert not any(e["name"] == "NCCL_IB_HCA" for e in container["env"])  # the VF is the pod's only device


def test_a_pool_no_tenant_may_run_fabric_jobs_on_is_not_run_with_the_reason() -> None:
    estate = example_estate("onprem")
    for tenant in estate["tenants"]:
        tenant["rdma"] = False
    checks = _checks(parse_estate(estate, "test"))
    multi = checks["fabric/dc1/train/multi-node"]
    assert multi.skip_reason.startswith("no tenant may run fabric jobs on pool train") and multi.namespace is None
    single = checks["fabric/dc1/train/single-node"]  # no fabric devices: any tenant with a node's quota may
    assert single.skip_reason == "" and single.namespace == "research" and single.journey == ""


def _run(stack: str, cluster: FakeCluster, run_id: str = "r1") -> tuple[Context, list[Any]]:
    spec = read_stack(ROOT, stack).estate()
    clock = Clock()
    ctx = Context(_suite(spec, stack), spec.sites[0], apis(cluster), Run(run_id), clock=clock, sleep=clock.sleep,
                  poll_seconds=10)  # fmt: skip
    results, _ = run_site(ctx)
    return ctx, results


def test_nccl_probes_go_through_kueue_in_the_tenant_namespace_and_leave_nothing_there() -> None:
    cluster = FakeCluster(pool_nodes={"train": ["g1", "g2"]})
    _, results = _run("onprem", cluster)
    assert [r.status for r in results] == [Status.passed, Status.info]
    assert set(cluster.jobs) == {("research", "nccl-1"), ("research", "nvlink-2")}
    assert all(cluster.held(ns, name) for ns, name in cluster.jobs)  # held by Kueue, then admitted
    assert sorted(cluster.deleted_jobs) == [("research", "nccl-1"), ("research", "nvlink-2")]
    assert sorted(cluster.deleted) == [("Secret", "research", "nccl-1"), ("Service", "research", "nccl-1")]


def test_a_probe_whose_workload_is_never_admitted_is_reported_with_the_reason_and_removed() -> None:
    cluster = FakeCluster(pool_nodes={"h100": ["n1", "n2"]}, admits=lambda job: False)
    _, results = _run("aws-train", cluster)
    multi = next(r for r in results if r.check.kind is suites.Kind.nccl_multi)
    assert multi.status is Status.error and multi.blocks_acceptance
    assert multi.detail == (
        "not admitted by Kueue within 600s: Workload research/job-nccl-1-1a2b3 QuotaReserved=False: "
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, "
        "8 more needed"
    )
    # the Job goes (and its Workload with it, so no quota stays reserved), with its Secret and Service
    assert ("research", "nccl-1") in cluster.deleted_jobs
    assert ("Secret", "research", "nccl-1") in cluster.deleted and ("Service", "research", "nccl-1") in cluster.deleted


def test_a_probe_kueue_does_not_hold_proves_nothing() -> None:
    cluster = FakeCluster(pool_nodes={"h100": ["n1", "n2"]}, kueue_suspends=False)
    _, results = _run("aws-train", cluster)
    multi = next(r for r in results if r.check.kind is suites.Kind.nccl_multi)
    assert multi.status is Status.error and "Kueue did not hold Job research/nccl-1" in multi.detail


def test_ctrl_c_while_waiting_for_admission_removes_the_tenant_objects() -> None:
    cluster = FakeCluster(pool_nodes={"h100": ["n1", "n2"]}, interrupt_on="read_namespaced_job_status")
    with pytest.raises(KeyboardInterrupt):
        _run("aws-train", cluster)
    assert cluster.deleted_jobs == [("research", "nccl-1")]
    assert sorted(cluster.deleted) == [("Secret", "research", "nccl-1"), ("Service", "research", "nccl-1")]


def test_plan_shows_each_probes_namespace_queue_and_journey() -> None:
    runner = CliRunner()
    args = ["verify", "-C", str(ROOT), "-s", "onprem", "--plan", "--only", "fabric,tenancy"]
    text = runner.invoke(app, args)
    assert text.exit_code == 0, text.output
    assert "runs in: namespace research, LocalQueue research" in text.output
    assert "journey: research: a 6-node gang on train with its fabric (ib)" in text.output
    doc = json.loads(runner.invoke(app, [*args, "-f", "json"]).output)
    by_id = {c["id"]: c for c in doc["checks"]}
    multi = by_id["fabric/dc1/train/multi-node"]
    assert (multi["namespace"], multi["queue"]) == ("research", "research")
    assert multi["journey"] == "research: a 6-node gang on train with its fabric (ib)"
    assert (by_id["tenancy/dc1/product/queue"]["namespace"], by_id["tenancy/dc1/product/queue"]["queue"]) == (
        "product",
        "default",
    )


# -- Pod Security and Kueue: the probe Jobs walked through the estate's own objects (the journey stages) ---------
@pytest.fixture(scope="module")
def estates() -> Any:
    from gpufleet.charts.cache import ENV_VAR, ChartCache
    from gpufleet.engine.synth import synth
    from gpufleet.review.reality.checks import render
    from gpufleet.review.reality.journeys.estate import clusters

    cache = ChartCache(Path(os.environ[ENV_VAR]))
    built: dict[str, Any] = {}

    def build(stack: str) -> Any:
        if stack not in built:
            plan = synth(ROOT, stack)
            built[stack] = clusters(plan, render(plan, cache))
        return built[stack]

    return build


@pytest.mark.parametrize("stack", ["aws-train", "onprem", "hybrid"])
def test_nccl_probe_jobs_pass_the_tenant_namespaces_admission_and_run(stack: str, estates: Any) -> None:
    from gpufleet.review.reality.journeys.walk import walk
    from gpufleet.review.reality.journeys.workloads import workload

    spec = read_stack(ROOT, stack).estate()
    run = Run("r")
    for c in (c for c in _suite(spec, stack).checks if c.kind in NCCL):
        site, pool = spec.site(c.site), spec.pool(c.pool or "")
        assert c.namespace is not None
        if c.kind is suites.Kind.nccl_multi:
            job = manifests.nccl_multi_node_job(run, "nccl-1", c.id, spec, site, pool, 2, c.namespace)
        else:
            job = manifests.nccl_single_node_job(run, "nvlink-1", c.id, spec, site, pool, c.namespace)
        # verify submits to the site's own cluster, or on a hybrid estate to the MultiKueue manager
        views = estates(stack) if c.manager else {site.name: estates(stack)[site.name]}
        journey = walk(workload(job, c.id), views, spec, site.name)
        admission = next(s for s in journey.stages if s.name == "admission")
        assert admission.ok, (c.id, admission.detail, admission.blocker)
        if queues.is_burst(pool):  # a burst pool's ClusterQueue is stopped until a window opens
            assert journey.blocked_at is not None and "stopped" in journey.blocked_at.detail, c.id
        else:
            assert journey.verdict == "runs", (c.id, journey.blocked_at)
            assert journey.placement is not None and journey.placement.site == site.name, c.id  # the worker
