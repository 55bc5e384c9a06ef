"""On a hybrid estate the tenants' probes go where tenants submit: their namespace and LocalQueue on the MultiKueue
manager, which dispatches the Workload to a worker. Status is read from the manager, logs from the worker's pods.

Kueue at versions.KUEUE, site/content/en/docs/concepts/multikueue.md ("Workload Dispatching": the Workload's
`status.clusterName` names the worker that admitted it) and tasks/run/multikueue/job.md (the manager's Job status
follows the worker's).
"""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.verify import suite as suites
from gpufleet.verify.kube import Context
from gpufleet.verify.manifests import Run
from gpufleet.verify.results import Status
from gpufleet.verify.runner import run_site
from model.load import read_stack
from tests.conftest import ROOT
from tests.verify.fake_kube import FakeCluster, apis
from tests.verify.test_runner import Clock

NCCL = (suites.Kind.nccl_multi, suites.Kind.nccl_single)


def _suite(stack: str) -> suites.Suite:
    spec = read_stack(ROOT, stack).estate()
    return suites.derive(spec, stack, suites.Options(categories=[suites.Category.fabric]))


def test_every_hybrid_nccl_probe_is_planned_through_the_managers_local_queue() -> None:
    probes = [c for c in _suite("hybrid").checks if c.kind in NCCL]
    assert {c.site for c in probes} == {"onprem", "cloud"}
    assert all(c.manager == "kueue-manager" and c.queue == c.namespace == "research" for c in probes)
    assert all(c.manager is None for c in _suite("onprem").checks)  # no manager: the site's own queue


def test_verify_plan_shows_the_manager_and_the_worker_it_dispatches_to() -> None:
    runner = CliRunner()
    args = ["verify", "-C", str(ROOT), "-s", "hybrid", "--plan", "--only", "fabric"]
    text = runner.invoke(app, args)
    assert text.exit_code == 0, text.output
    assert (
        "runs in: namespace research, LocalQueue research on the MultiKueue manager kueue-manager, "
        "dispatched to worker onprem"
    ) in text.output
    by_id = {c["id"]: c for c in json.loads(runner.invoke(app, [*args, "-f", "json"]).output)["checks"]}
    assert by_id["fabric/onprem/base/multi-node"]["manager"] == "kueue-manager"


def _run(worker: FakeCluster, manager: FakeCluster | None) -> tuple[Context, list[Any]]:
    suite = _suite("hybrid")
    spec = suite.spec
    clock = Clock()
    ctx = Context(suite, spec.site("onprem"), apis(worker), Run("r1"), clock=clock, sleep=clock.sleep,
                  poll_seconds=10, manager=apis(manager) if manager else None)  # fmt: skip
    results, _ = run_site(ctx)
    return ctx, results


def test_nccl_probes_are_submitted_to_the_manager_and_measured_from_the_workers_pods() -> None:
    worker = FakeCluster(pool_nodes={"base": ["g1", "g2"]}, pods_end=True)
    manager = FakeCluster(dispatch_to=("onprem", worker))
    _, results = _run(worker, manager)
    assert [r.status for r in results] == [Status.passed, Status.info], [r.detail for r in results]
    # The Jobs were created on the manager, held by its Kueue, and copied to the worker by MultiKueue.
    assert set(manager.jobs) == {("research", "nccl-1"), ("research", "nvlink-2")}
    assert not [c for c in worker.calls if c[0] == "create_namespaced_job"]
    assert set(worker.jobs) == set(manager.jobs)
    assert any(c[0] == "read_namespaced_pod_log" and c[1][1] == "research" for c in worker.calls)
    # The ssh Secret and headless Service the pods use live on the worker, where the pods run.
    assert ("Secret", "research", "nccl-1") in worker.deleted
    # Deleting the manager's Jobs makes MultiKueue remove the worker's copies.
    assert sorted(manager.deleted_jobs) == [("research", "nccl-1"), ("research", "nvlink-2")]


def test_a_probe_dispatched_to_another_worker_is_an_error_naming_it() -> None:
    worker = FakeCluster(pool_nodes={"base": ["g1", "g2"]}, pods_end=True)
    manager = FakeCluster(dispatch_to=("cloud", FakeCluster()))
    _, results = _run(worker, manager)
    multi = next(r for r in results if r.check.kind is suites.Kind.nccl_multi)
    assert multi.status is Status.error
    assert "MultiKueue dispatched Job research/nccl-1 to worker cloud, not to onprem" in multi.detail


def test_a_probe_the_manager_never_dispatches_says_why() -> None:
    worker = FakeCluster(pool_nodes={"base": ["g1", "g2"]})
    manager = FakeCluster(dispatch_to=("onprem", worker), admits=lambda job: False)
    _, results = _run(worker, manager)
    multi = next(r for r in results if r.check.kind is suites.Kind.nccl_multi)
    assert multi.status is Status.error and multi.detail.startswith("not dispatched by MultiKueue within 600s")
    assert "QuotaReserved=False" in multi.detail and ("research", "nccl-1") in manager.deleted_jobs


def test_without_the_managers_api_a_hybrid_probe_is_an_error_not_a_direct_submission() -> None:
    worker = FakeCluster(pool_nodes={"base": ["g1", "g2"]})
    _, results = _run(worker, None)
    multi = next(r for r in results if r.check.kind is suites.Kind.nccl_multi)
    assert multi.status is Status.error and "MultiKueue manager kueue-manager was not reached" in multi.detail
    assert not [c for c in worker.calls if c[0] == "create_namespaced_job"]


def test_a_dispatched_probe_that_fails_on_the_worker_is_an_error_with_its_workloads_reason() -> None:
    worker = FakeCluster(pool_nodes={"base": ["g1", "g2"]}, job_outcome=lambda job: "Failed")
    manager = FakeCluster(dispatch_to=("onprem", worker), job_outcome=lambda job: "Failed")
    _, results = _run(worker, manager)
    multi = next(r for r in results if r.check.kind is suites.Kind.nccl_multi)
    assert (
        multi.status is Status.error and multi.detail == "Workload of Job research/nccl-1 finished: Failed Job failed"
    )
