"""The orchestration against a fake of the Kubernetes API (tests/verify/fake_kube.py): create, wait, collect,
judge, and clean up on every exit, Ctrl-C included."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from kubernetes import client

from gpufleet.verify import quarantine
from gpufleet.verify import suite as suites
from gpufleet.verify.kube import ClusterApi, Context
from gpufleet.verify.manifests import Run
from gpufleet.verify.results import Status
from gpufleet.verify.runner import agent_pools, run_site
from model.load import parse_estate, read_stack
from tests.conftest import ROOT, example_estate
from tests.verify.fake_kube import FakeBatch, FakeCluster, FakeCore, FakeCustom, apis, dcgm_document


def test_fake_methods_exist_on_the_real_client() -> None:
    for fake, real in (
        (FakeCore, client.CoreV1Api),
        (FakeBatch, client.BatchV1Api),
        (FakeCustom, client.CustomObjectsApi),
    ):
        for name, fn in inspect.getmembers(fake, inspect.isfunction):
            if name.startswith("_"):
                continue
            assert hasattr(real, name), f"{real.__name__} has no {name}"
            fake_params = [p for p in inspect.signature(fn).parameters if p not in ("self", "kw")]
            real_params = list(inspect.signature(getattr(real, name)).parameters)
            assert fake_params == real_params[1 : 1 + len(fake_params)], name


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def run(stack: str, cluster: FakeCluster, site: str | None = None, **options: Any) -> tuple[Context, list[Any]]:
    spec = read_stack(ROOT, stack).estate()
    s = suites.derive(spec, stack, suites.Options(**options))
    clock = Clock()
    ctx = Context(s, spec.site(site or spec.sites[0].name), apis(cluster), Run("r1"), clock=clock, sleep=clock.sleep,
                  poll_seconds=10)  # fmt: skip
    results, _ = run_site(ctx)
    return ctx, results


def result(results: list[Any], check_id: str) -> Any:
    return next(r for r in results if r.check.id == check_id)


def test_fabric_run_creates_secret_service_indexed_job_and_judges_the_busbw() -> None:
    cluster = FakeCluster(pool_nodes={"h100": ["n1", "n2"]})
    _, results = run("aws-train", cluster, categories=[suites.Category.fabric])
    multi = result(results, "fabric/use1/h100/multi-node")
    assert multi.status is Status.passed and multi.measured == "487.1 GB/s"  # AWS's 2 x p5 reference run >= 389.7
    assert result(results, "fabric/use1/h100/single-node").status is Status.info
    created = [c[0] for c in cluster.calls if c[0].startswith("create_")]
    assert created[:4] == ["create_namespace", "create_namespaced_secret", "create_namespaced_service",
                           "create_namespaced_job"]  # fmt: skip
    assert cluster.deleted_namespaces == ["gpufleet-verify-r1"]


def test_fabric_fails_below_the_mark() -> None:
    low = FakeCluster(pool_nodes={"h100": ["n1", "n2"]})
    low.logs = lambda job, ns: (
        FakeCluster().logs(job, ns).replace("487.09", "120.00")
        if job.startswith("nccl")
        else FakeCluster().logs(job, ns)
    )
    _, results = run("aws-train", low, categories=[suites.Category.fabric])
    assert result(results, "fabric/use1/h100/multi-node").status is Status.failed


def test_fabric_with_one_node_is_skipped_not_passed() -> None:
    _, results = run("aws-train", FakeCluster(pool_nodes={"h100": ["n1"]}), categories=[suites.Category.fabric])
    r = result(results, "fabric/use1/h100/multi-node")
    assert r.status is Status.skipped and "needs 2" in r.detail and not r.blocks_acceptance


def test_job_that_never_finishes_is_an_error_that_blocks_acceptance() -> None:
    cluster = FakeCluster(pool_nodes={"h100": ["n1", "n2"]}, job_outcome=lambda job: "running")
    _, results = run("aws-train", cluster, categories=[suites.Category.fabric])
    r = result(results, "fabric/use1/h100/multi-node")
    assert r.status is Status.error and "did not finish within 2400s" in r.detail and r.blocks_acceptance
    assert cluster.deleted_namespaces == ["gpufleet-verify-r1"]


def test_dcgm_runs_one_job_per_node_and_fails_the_node_with_an_xid() -> None:
    cluster = FakeCluster(pool_nodes={"h100": ["n1", "n2"]})
    cluster.logs = lambda job, ns: dcgm_document("Fail", "XID 79 on GPU 3") if job == "dcgm-2" else dcgm_document()
    _, results = run("aws-train", cluster, categories=[suites.Category.gpus], pools=["h100"])
    r = result(results, "gpus/use1/h100")
    assert r.status is Status.failed and r.measured == "1/2 nodes pass" and "n2" in r.detail
    assert r.evidence["nodes"]["n2"]["findings"] == ["diagnostic GPU 3: XID 79 on GPU 3"]


def test_fio_on_fsx_uses_the_tenant_claim_and_deletes_only_its_own_job() -> None:
    cluster = FakeCluster(pool_nodes={"h100": ["n1"]}, bound_claims={("research", "lustre")})
    ctx, results = run("aws-train", cluster, categories=[suites.Category.storage])
    r = result(results, "storage/use1/lustre/h100")
    assert r.status is Status.failed and r.measured == "0.0 GB/s"  # the Ceph fixture: 0.77 GB/s read, no writes
    assert ("research", "fio-1") in cluster.deleted_jobs and ctx.tenant_jobs == [("research", "fio-1")]
    home = result(results, "storage/use1/home/h100")  # EFS: a claim of the run's own, shown not judged
    assert home.status is Status.info
    assert ("create_namespaced_persistent_volume_claim", ("gpufleet-verify-r1", "data-2")) in cluster.calls


def test_fio_on_fsx_without_a_bound_tenant_claim_is_skipped() -> None:
    _, results = run("aws-train", FakeCluster(pool_nodes={"h100": ["n1"]}), categories=[suites.Category.storage])
    assert result(results, "storage/use1/lustre/h100").status is Status.skipped


def test_tenancy_probes_pass_when_refused_with_a_working_control() -> None:
    cluster = FakeCluster(node_labels={"a1": {"gpufleet.io/tenant": "agents"}}, tenant_nodes={"agents": "a1"})
    _, results = run("aws-train", cluster, categories=[suites.Category.tenancy])
    statuses = {r.check.id: r.status for r in results}
    assert set(statuses.values()) == {Status.passed}, statuses
    dry = [c for c in cluster.calls if c[0] in ("create_namespaced_pod", "create_namespaced_job") and "All" in c[1]]
    assert len(dry) == 6  # a quota and a queue probe per tenant, server-side dry runs


def test_quota_probe_fails_when_the_api_server_accepts_the_pod() -> None:
    cluster = FakeCluster(quota_refuses=False, kueue_suspends=False)
    _, results = run("aws-train", cluster, categories=[suites.Category.tenancy])
    assert result(results, "tenancy/use1/research/gpu-quota").status is Status.failed
    assert result(results, "tenancy/use1/research/queue").status is Status.failed


def test_tenant_reaching_another_tenant_fails_and_a_dead_control_is_inconclusive() -> None:
    open_net = FakeCluster()
    open_net.probe_logs = lambda job, ns: "GPUFLEET-REACHED"  # type: ignore[method-assign]
    _, results = run("aws-train", open_net, categories=[suites.Category.tenancy])
    assert result(results, "tenancy/use1/cross-tenant").status is Status.failed
    assert result(results, "tenancy/use1/research/egress").status is Status.failed
    dead = FakeCluster()
    dead.probe_logs = lambda job, ns: "GPUFLEET-BLOCKED"  # type: ignore[method-assign]
    _, results = run("aws-train", dead, categories=[suites.Category.tenancy])
    assert result(results, "tenancy/use1/cross-tenant").status is Status.error  # control blocked: inconclusive
    assert result(results, "tenancy/use1/research/egress").status is Status.error


def test_exporter_counts_gpus_per_node() -> None:
    one_gpu = FakeCluster(pool_nodes={"agents-l40s": ["a1"]})  # g6e.xlarge: 1 GPU, as in the README scrape
    _, results = run("aws-train", one_gpu, categories=[suites.Category.telemetry])
    assert result(results, "telemetry/use1").status is Status.passed
    eight = FakeCluster(pool_nodes={"h100": ["n1"]})
    _, results = run("aws-train", eight, categories=[suites.Category.telemetry])
    r = result(results, "telemetry/use1")
    assert r.status is Status.failed and "series for 1 of 8 GPUs" in r.detail


def test_drain_drill_quarantines_evicts_and_returns_the_node() -> None:
    cluster = FakeCluster(pool_nodes={"train": ["g1", "g2", "g3"]})
    ctx, results = run("onprem", cluster, categories=[], degraded=True)
    r = result(results, "degraded/dc1/train")
    assert r.status is Status.passed and "g1 returned" in r.detail, r.detail
    taints = [c[1][1]["spec"]["taints"] for c in cluster.calls if c[0] == "patch_node" and c[1][0] == "g1"]
    assert taints == [[{"key": "gpufleet.io/quarantine", "value": "drill", "effect": "NoSchedule"}], []]
    # while quarantined the gang's pods were placed elsewhere: the fake's scheduler honours the taint
    assert cluster.taints == {"g1": []} and ctx.drilled == []


def test_the_drill_leaves_a_quarantine_it_did_not_set() -> None:
    theirs = {"key": "gpufleet.io/quarantine", "value": "verify", "effect": "NoSchedule"}
    cluster = FakeCluster(pool_nodes={"train": ["g1", "g2", "g3"]}, racing_taints={"g1": theirs})
    ctx, results = run("onprem", cluster, categories=[], degraded=True)
    r = result(results, "degraded/dc1/train")
    assert r.status is Status.error and "quarantined by another" in r.detail, r.detail
    assert cluster.taints["g1"] == [theirs] and ctx.drilled == []


def test_a_node_that_failed_dcgm_is_quarantined_and_kept_out_of_placement() -> None:
    cluster = FakeCluster(pool_nodes={"h100": ["n1", "n2"]})
    cluster.logs = lambda job, ns: dcgm_document("Fail", "XID 79 on GPU 3") if job == "dcgm-2" else dcgm_document()
    ctx, _ = run("aws-train", cluster, categories=[suites.Category.gpus], pools=["h100"])
    assert ctx.quarantined == ["n2 (verify)"]
    assert cluster.taints["n2"] == [{"key": "gpufleet.io/quarantine", "value": "verify", "effect": "NoSchedule"}]
    assert "n1" not in cluster.taints
    cluster.jobs[("research", "next")] = {
        "spec": {"template": {"spec": {"nodeSelector": {"gpufleet.io/pool": "h100"}}}}
    }
    assert {cluster.node_of("next", i) for i in range(4)} == {"n1"}


def test_a_node_whose_dcgm_job_printed_nothing_is_not_probed_and_stays_in_service() -> None:
    # The diag Job asks for every GPU of the node; on a node whose GPUs tenants hold it stays Pending until the
    # timeout and prints nothing. That is no evidence of a fault: report it, do not quarantine it.
    cluster = FakeCluster(pool_nodes={"h100": ["n1", "n2"]})
    cluster.logs = lambda job, ns: "" if job == "dcgm-2" else dcgm_document()
    ctx, results = run("aws-train", cluster, categories=[suites.Category.gpus], pools=["h100"])
    r = result(results, "gpus/use1/h100")
    assert ctx.quarantined == [] and cluster.taints == {}
    assert r.status is Status.error and r.measured == "1/2 nodes pass" and "n2: not probed" in r.detail


def test_a_node_with_a_failed_health_condition_is_quarantined() -> None:
    cluster = FakeCluster(pool_nodes={"h100": ["n1", "n2"]}, conditions={"n1": {"AcceleratedHardwareReady": "False"}})
    ctx, _ = run("aws-train", cluster, categories=[])
    assert ctx.quarantined == ["n1 (health)"]


def test_an_unknown_health_condition_quarantines_nothing() -> None:
    # Unknown: the agent has not reported, which says nothing about the node.
    cluster = FakeCluster(pool_nodes={"h100": ["n1", "n2"]}, conditions={"n1": {"KernelReady": "Unknown"}})
    ctx, _ = run("aws-train", cluster, categories=[])
    assert ctx.quarantined == [] and cluster.taints == {}


def test_the_health_sweep_reads_only_pools_in_scope_whose_detectors_include_the_agent() -> None:
    estate = example_estate("aws-train")
    estate["sites"][0]["node_pools"][0]["health"] = {"detectors": ["dcgm"], "remediator": "none"}  # h100
    spec = parse_estate(estate, "stacks/Pulumi.aws-train.yaml")
    site = spec.sites[0]
    s = suites.derive(spec, "aws-train", suites.Options(categories=[]))
    ctx = Context(s, site, apis(FakeCluster()), Run("r1"))
    assert "h100" not in agent_pools(ctx) and "l40s" in agent_pools(ctx)
    s = suites.derive(spec, "aws-train", suites.Options(categories=[], pools=["l40s"]))
    assert agent_pools(Context(s, site, apis(FakeCluster()), Run("r1"))) == ["l40s"]


def test_the_health_sweep_stays_in_the_pools_of_the_run() -> None:
    cluster = FakeCluster(pool_nodes={"h100": ["n1"]}, conditions={"n1": {"AcceleratedHardwareReady": "False"}})
    ctx, _ = run("aws-train", cluster, categories=[], pools=["l40s"])
    assert ctx.quarantined == [] and cluster.taints == {}


def test_quarantine_and_return_keep_a_taint_added_concurrently() -> None:
    # spec.taints is an atomic list: a whole-list write without a resourceVersion drops a taint added in between.
    tenant = {"key": "gpufleet.io/tenant", "value": "research", "effect": "NoSchedule"}
    cluster = FakeCluster(pool_nodes={"h100": ["n1"]}, racing_taints={"n1": tenant})
    api = apis(cluster)
    assert quarantine.quarantine(api, "n1", "verify")
    assert cluster.taints["n1"] == [
        tenant,
        {"key": "gpufleet.io/quarantine", "value": "verify", "effect": "NoSchedule"},
    ]
    cluster.racing_taints["n1"] = {"key": "other", "effect": "NoSchedule"}
    assert quarantine.release(api, "n1") == "verify"
    assert cluster.taints["n1"] == [tenant, {"key": "other", "effect": "NoSchedule"}]


def test_no_quarantine_leaves_every_node_alone() -> None:
    cluster = FakeCluster(pool_nodes={"h100": ["n1"]}, conditions={"n1": {"AcceleratedHardwareReady": "False"}})
    ctx, _ = run("aws-train", cluster, categories=[], quarantine=False)
    assert ctx.quarantined == [] and cluster.taints == {}


def test_ctrl_c_deletes_the_namespace_returns_the_drilled_node_and_reraises() -> None:
    cluster = FakeCluster(pool_nodes={"train": ["g1", "g2"]}, interrupt_on="create_namespaced_pod_eviction")
    spec = read_stack(ROOT, "onprem").estate()
    s = suites.derive(spec, "onprem", suites.Options(categories=[], degraded=True))
    clock = Clock()
    ctx = Context(s, spec.sites[0], ClusterApi(FakeCore(cluster), FakeBatch(cluster)), Run("r2"), clock=clock,
                  sleep=clock.sleep)  # fmt: skip
    with pytest.raises(KeyboardInterrupt):
        run_site(ctx)
    assert cluster.deleted_namespaces == ["gpufleet-verify-r2"]
    assert cluster.taints == {"g1": []}  # quarantined before the interrupt, returned in cleanup
    assert ctx.cleanup_problems == []


def test_cleanup_tries_every_step_even_when_one_fails() -> None:
    cluster = FakeCluster()
    core = FakeCore(cluster)

    def refuse(name: str, **kw: Any) -> None:
        from tests.verify.fake_kube import api_exception

        raise api_exception(500, "Internal Server Error")

    core.delete_namespace = refuse  # type: ignore[method-assign]
    spec = read_stack(ROOT, "onprem").estate()
    s = suites.derive(spec, "onprem", suites.Options(categories=[]))
    ctx = Context(s, spec.sites[0], ClusterApi(core, FakeBatch(cluster)), Run("r3"))
    ctx.tenant_jobs.append(("research", "probe-9"))
    _, problems = run_site(ctx)
    assert cluster.deleted_jobs == [("research", "probe-9")]
    assert problems == ["delete namespace gpufleet-verify-r3: 500 Internal Server Error"]


def test_untrusted_pod_on_a_shared_node_fails() -> None:
    cluster = FakeCluster(node_labels={"s1": {"gpufleet.io/tenant": "shared"}}, tenant_nodes={"agents": "s1"})
    _, results = run("aws-train", cluster, categories=[suites.Category.tenancy])
    assert result(results, "tenancy/use1/agents/dedicated-nodes").status is Status.failed
