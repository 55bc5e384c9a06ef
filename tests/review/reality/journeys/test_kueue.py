"""Kueue's Configuration as a journey reads it: excluded prefixes, then resource transformations
(kubernetes-sigs/kueue@v0.19.2 pkg/workload/workload.go, dropExcludedResources and applyResourceTransformations)."""

from __future__ import annotations

from decimal import Decimal

from gpufleet.review.reality.journeys.kueue import Config


def config(**kw: object) -> Config:
    base: dict[str, object] = dict(
        manage_without_queue_name=True, namespace_selector=None, frameworks=("batch/job",),
        exclude_prefixes=(), transformations=(), multikueue=False,
    )  # fmt: skip
    base.update(kw)
    return Config(**base)  # type: ignore[arg-type]


def test_excluded_prefixes_drop_fabric_devices() -> None:
    cfg = config(exclude_prefixes=("vpc.amazonaws.com/efa", "rdma/"))
    got = cfg.effective({"nvidia.com/gpu": Decimal(8), "vpc.amazonaws.com/efa": Decimal(32), "rdma/ib": Decimal(1)})
    assert got == {"nvidia.com/gpu": Decimal(8)}


def test_the_docs_transformations_turn_gpus_into_memory_and_credits() -> None:
    # kubernetes-sigs/kueue@v0.19.2 site/content/en/docs/tasks/manage/administer_cluster_quotas.md, its example
    rules = (
        {"input": "example.com/gpu-type1", "strategy": "Replace",
         "outputs": {"example.com/gpu-memory": "5Gi", "example.com/credits": 10}},
        {"input": "cpu", "strategy": "Retain", "outputs": {"example.com/credits": 1}},
    )  # fmt: skip
    got = config(transformations=rules).effective({"example.com/gpu-type1": Decimal(2), "cpu": Decimal(1)})
    assert got == {"cpu": Decimal(1), "example.com/gpu-memory": Decimal(10 * 2**30), "example.com/credits": Decimal(21)}
