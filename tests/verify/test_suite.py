"""The suite is derived from the estate: which checks exist where, and marks worked by hand from the catalog."""

from __future__ import annotations

from typing import Any

from components.aws.storage import training_need_gbps
from gpufleet.verify import suite as suites
from gpufleet.verify import thresholds
from model.load import parse_estate
from model.spec import AwsSite, FsxLustreTier
from tests.conftest import example_estate


def derive(estate: dict[str, Any], **options: Any) -> suites.Suite:
    return suites.derive(parse_estate(estate, "test"), "test", suites.Options(**options))


def by_id(s: suites.Suite) -> dict[str, suites.Check]:
    return {c.id: c for c in s.checks}


def test_aws_train_fabric_mark_is_the_published_p5_busbw_times_efficiency() -> None:
    checks = by_id(derive(example_estate("aws-train")))
    multi = checks["fabric/use1/h100/multi-node"]
    # model/catalog/nccl_busbw.yaml: AWS's 2 x p5.48xlarge run, 487.09 GB/s x 0.8 = 389.67 -> 389.7 (was 320, the
    # 3,200 Gbit/s line rate / 8 x 0.8, below what a healthy fabric reaches)
    assert multi.threshold is not None and multi.threshold.value == 389.7
    assert "published busbw" in multi.threshold.source and "awsome-distributed-training" in multi.threshold.source
    assert "PERFORMANCE.md" in multi.threshold.source
    assert checks["fabric/use1/h100/single-node"].threshold is None  # NVLink: shown, not judged
    assert not any(c.startswith("fabric/use1/l40s") for c in checks)  # a pool without a fabric has no NCCL test


def test_storage_mark_is_the_same_figure_the_throughput_warning_uses() -> None:
    estate = example_estate("aws-train")
    estate["sites"][0]["storage"][0]["min_gbps_per_training_node"] = 7.5
    spec = parse_estate(estate, "test")
    site = spec.sites[0]
    assert isinstance(site, AwsSite)
    tier = site.storage[0]
    assert isinstance(tier, FsxLustreTier)
    check = by_id(suites.derive(spec, "test", suites.Options()))["storage/use1/lustre/h100"]
    nodes, need = training_need_gbps(site, tier)
    assert check.threshold is not None and check.threshold.value == 7.5 == need / nodes
    assert by_id(suites.derive(spec, "t", suites.Options()))["storage/use1/home/h100"].threshold is None  # EFS: warm


def test_parallel_fs_uses_the_fsx_default_not_a_retyped_number() -> None:
    assert thresholds.training_node_gbps_default() == FsxLustreTier.model_fields["min_gbps_per_training_node"].default


def test_onprem_fabric_without_declared_link_rate_is_shown_not_judged() -> None:
    estate = example_estate("onprem")
    for server in estate["sites"][0]["inventory"]:
        del server["ib_rate_gbps"]
    check = by_id(derive(estate))["fabric/dc1/train/multi-node"]
    assert check.threshold is None and "ib_rate_gbps" in check.no_threshold_reason


def test_onprem_fabric_mark_from_declared_ports_and_rate() -> None:
    # The example declares NDR (400 Gbit/s) on each of its servers' four ports.
    check = by_id(derive(example_estate("onprem")))["fabric/dc1/train/multi-node"]
    # 4 ports x 400 Gbit/s / 8 = 200 GB/s line rate, scaled by p5.48xlarge's published 487.09 GB/s over its 400 GB/s
    # line rate (the same H100 NVLink node): 243.545 GB/s x 0.8 = 194.8 (was 160, the line rate: sizing review item 6)
    assert check.threshold is not None and check.threshold.value == 194.8


def test_mig_pool_gets_no_dcgm_diag_and_says_why() -> None:
    checks = by_id(derive(example_estate("onprem")))
    assert "MIG" in checks["gpus/dc1/dev"].skip_reason
    assert checks["gpus/dc1/train"].skip_reason == ""


def test_untrusted_tenant_gets_the_dedicated_node_probe_only_once() -> None:
    ids = list(by_id(derive(example_estate("aws-train"))))
    assert [i for i in ids if i.endswith("dedicated-nodes")] == ["tenancy/use1/agents/dedicated-nodes"]
    assert "tenancy/use1/cross-tenant" in ids


def test_only_and_pool_select_checks() -> None:
    s = derive(example_estate("aws-train"), categories=[suites.Category.fabric], pools=["h100"])
    assert {c.category for c in s.checks} == {suites.Category.fabric}
    assert {c.pool for c in s.checks} == {"h100"}


def test_degraded_is_opt_in_and_optional() -> None:
    assert not any(c.category is suites.Category.degraded for c in derive(example_estate("onprem")).checks)
    drills = [c for c in derive(example_estate("onprem"), degraded=True).checks if c.kind is suites.Kind.drain]
    assert [c.pool for c in drills] == ["train"] and not drills[0].mandatory


def test_largest_all_reduce_fits_a_quarter_of_gpu_memory() -> None:
    from model import catalog

    assert thresholds.nccl_max_bytes(catalog.gpu_model("H100-80GB")) == 16 * 1024**3
    assert thresholds.nccl_max_bytes(catalog.instance_type("g6e.12xlarge").gpu) == 8 * 1024**3


def test_verify_marks_and_sizing_all_reduce_read_the_same_catalog_busbw() -> None:
    # The pass mark is NCCL_EFFICIENCY of the busbw `gpufleet size` times the pool's all-reduce with, for a pool
    # with a published figure (p5, aws-train `h100`) and for one at its scaled line rate (bare metal `train`).
    from fractions import Fraction

    from gpufleet.sizing.interconnect import ring
    from gpufleet.sizing.placement import stack_placements
    from gpufleet.verify import thresholds
    from tests.sizing.helpers import wclass

    run = wclass(kind="fine-tuning", parameters_billion=13, gpus_per_run=16, gang=True)
    for stack, pool, bw in (
        ("aws-train", "h100", Fraction("487.09")),
        ("onprem", "train", Fraction(200) * Fraction("487.09") / 400),
    ):
        spec = parse_estate(example_estate(stack), stack)
        placement = next(p for p in stack_placements(spec)[0] if p.name == pool)
        r = ring(run, placement)
        assert r is not None and r.gb_per_s == bw
        mark, _ = thresholds.nccl_busbw_threshold(spec, spec.pool(pool))
        assert mark is not None and mark.value == round(float(r.gb_per_s) * thresholds.NCCL_EFFICIENCY, 1)
