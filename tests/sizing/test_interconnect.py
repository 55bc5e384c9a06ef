"""Interconnect in the ranking: a training run's gradient ring, and the hours a slower ring adds.

Ring all-reduce time = 2(n-1)/n × bytes ÷ bus bandwidth of the slowest link (NVIDIA/nccl-tests
doc/PERFORMANCE.md: busbw = algbw × 2(n-1)/n, "the speed of the hardware bottleneck"). Link figures:
model/catalog/gpus.yaml (NVIDIA product pages), nccl_busbw.yaml (AWS's published nccl-tests runs) and
aws_instances.json (EC2 DescribeInstanceTypes network_performance, the line rate where nothing is published).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from fractions import Fraction

import pytest

from gpufleet.render.sizing import headline, sizing_text
from gpufleet.sizing.interconnect import allreduce_seconds, intra_node_gb_per_s, ring
from gpufleet.sizing.placement import catalog_placements, size_class
from gpufleet.sizing.report import size
from model import catalog
from model.catalog import network_gbit_per_s
from model.load import SpecError, parse_estate
from tests.conftest import example_estate
from tests.sizing.helpers import wclass, wfile
from tests.sizing.test_cases import FT70B, on

FINE_TUNE_13B = {"name": "ft-13b", "kind": "fine-tuning", "parameters_billion": 13, "runs_per_period": 1,
                 "hours_per_run": 4, "deadline_hours": 8}  # fmt: skip


def test_network_rates_parse_as_ec2_reports_them() -> None:
    assert network_gbit_per_s("3200 Gigabit") == 3200
    assert network_gbit_per_s("4x 100 Gigabit") == 400  # p4d / p4de: four 100 Gbit/s cards
    assert network_gbit_per_s("Up to 10 Gigabit") is None  # a burst rate is no line rate
    assert network_gbit_per_s(catalog.instance_type("p4d.24xlarge").network_performance) == 400


def test_nvlink_and_pcie_are_half_the_published_bidirectional_figure() -> None:
    assert intra_node_gb_per_s(catalog.gpu_model("H100-80GB")) == (450, "NVLink")  # 900 GB/s bidirectional
    assert intra_node_gb_per_s(catalog.gpu_model("L40S-48GB")) == (32, "PCIe")  # PCIe Gen4 x16, 64 GB/s


def test_two_p5_all_reduce_time_is_within_20_percent_of_awss_published_run() -> None:
    # aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests/README.md @ 27b7d49e: all_reduce_perf on
    # 2 × p5.48xlarge (16 GPUs), 17,179,869,184 B in 66,132 µs (busbw 487.09 GB/s). A class whose bf16 gradients are
    # that size: 8.589934592B parameters × 2 B. Before, the model took 3,200 Gbit/s ÷ 8 ÷ 8 GPUs = 50 GB/s: 0.644 s,
    # ten times the published time.
    c = wclass(**dict(FINE_TUNE_13B, parameters_billion=8.589934592), gpus_per_run=16, gang=True)
    r = ring(c, {p.name: p for p in catalog_placements("us-east-1")}["p5.48xlarge"])
    assert r is not None and r.nodes == 2 and r.allreduce_s is not None
    published = Fraction(66132, 10**6)
    assert abs(r.allreduce_s - published) / published < Fraction(1, 5)
    assert "published busbw" in r.link


def test_ring_time_is_the_nccl_all_reduce_formula_over_the_slowest_link() -> None:
    c = wclass(**FINE_TUNE_13B, gpus_per_run=12, gang=True)
    at = {p.name: p for p in catalog_placements("us-east-1")}
    # 2 × p5.48xlarge: AWS's published 2-node busbw, 487.09 GB/s (NVLink inside each node included).
    # Gradients: 13e9 × 2 B = 26 GB; 2 × 11/12 × 26 GB = 47.67 GB ÷ 487.09 GB/s = 0.098 s.
    big = ring(c, at["p5.48xlarge"])
    assert big is not None and big.nodes == 2 and big.gb_per_s == Fraction(48709, 100)
    assert big.allreduce_s == allreduce_seconds(12, Fraction(26), Fraction(48709, 100))
    assert big.allreduce_s == Fraction(2 * 11, 12) * 26 / Fraction(48709, 100)
    # 12 × p5.4xlarge: one H100 each, nothing published: the 100 Gbit/s line rate ÷ 8 = 12.5 GB/s: 3.81 s.
    small = ring(c, at["p5.4xlarge"])
    assert small is not None and small.nodes == 12 and small.gb_per_s == Fraction(25, 2)
    assert f"{float(small.allreduce_s or 0):.3f}" == "3.813"
    # 2 × g6e.12xlarge (4 L40S on PCIe, 32 GB/s one way): across nodes the 100 Gbit/s line rate, 12.5 GB/s
    l40s = ring(wclass(**FINE_TUNE_13B, gpus_per_run=8), at["g6e.12xlarge"])
    assert l40s is not None and l40s.gb_per_s == Fraction(25, 2) and "line rate" in l40s.link
    # inference and one-GPU runs all-reduce nothing
    assert ring(wclass(**FINE_TUNE_13B, gpus_per_run=1), at["p5.4xlarge"]) is None


def test_an_nvlink_domain_wider_than_a_node_keeps_the_ring_off_the_network() -> None:
    # A rack-scale domain (NVL72) joins GPUs across its trays: a run inside it never crosses the node network.
    at = {p.name: p for p in catalog_placements("us-east-1")}
    p5 = at["p5.48xlarge"]
    rack = replace(p5, gpu=replace(p5.gpu, nvlink_domain_gpus=72))
    r = ring(wclass(**FINE_TUNE_13B, gpus_per_run=16, gang=True), rack)
    assert r is not None and r.link == "NVLink" and r.gb_per_s == 450
    assert (
        catalog.gpu_model("H100-80GB").nvlink_domain_gpus == 8 and catalog.gpu_model("L4-24GB").nvlink_domain_gpus == 1
    )


def test_a_slower_ring_is_a_time_penalty_not_an_exclusion() -> None:
    # 12-GPU gang measured on H100, 4 h. Fastest H100 ring: 2 × p5.48xlarge, 0.0979 s per all-reduce; 12 ×
    # p5.4xlarge: 3.8133 s. Default steps: 4 h × 3,600 ÷ 10 s = 1,440; 1,440 × (3.8133 - 0.0979) s = 5,350.3 s =
    # 1.4862 h more: 5.4862 h × 12 GPUs × $6.88 = $452.94 a run, against 16 × $55.04 / 8 × 4 h = $440.32.
    # Before, p5.4xlarge was dropped as "weaker interconnect" whatever it cost.
    c = wclass(**FINE_TUNE_13B, gpus_per_run=12, gang=True, measured_on="H100-80GB")
    sized = size_class(c, catalog_placements("us-east-1"))
    assert sized.chosen is not None and sized.chosen.placement.name == "p5.48xlarge"
    assert sized.chosen.nodes_per_run == 2 and float(sized.chosen.cost_per_run or 0) == 440.32
    small = next(ch for ch in sized.choices if ch.placement.name == "p5.4xlarge")
    assert small.status == "ok" and small.slower_than is not None
    assert (
        small.penalty_hours
        == 1440 * (Fraction(2 * 11, 12) * 26 / Fraction(25, 2) - sized.chosen.ring.allreduce_s) / 3600
    )  # type: ignore[union-attr]
    assert f"{float(small.cost_per_run or 0):.2f}" == "452.94"
    # steps_per_run from the file: 100 steps add 0.1032 h: 4.1032 h × 12 × $6.88 = $338.76, now the cheapest
    few = size_class(wclass(**FINE_TUNE_13B, gpus_per_run=12, gang=True, measured_on="H100-80GB", steps_per_run=100),
                     catalog_placements("us-east-1")).chosen  # fmt: skip
    assert few is not None and few.placement.name == "p5.4xlarge" and f"{float(few.cost_per_run or 0):.2f}" == "338.76"


def test_a_13b_fine_tune_over_two_pcie_l40s_nodes_pays_its_slower_ring_and_still_wins() -> None:
    # Measured on L40S, 8 GPUs, 4 h (1,440 default steps). 2 × g6e.12xlarge: 2 × 7/8 × 26 GB ÷ 12.5 GB/s = 3.64 s
    # against 1.4219 s on PCIe inside one g6e.48xlarge: 1,440 × 2.2181 s = 0.88725 h more, 4.88725 h ×
    # 8 × $10.49264 / 4 = $102.56 a run, still under g6e.48xlarge's 8 × $30.13118 / 8 × 4 = $120.52.
    c = wclass(**FINE_TUNE_13B, gpus_per_run=8, measured_on="L40S-48GB")
    sized = size_class(c, catalog_placements("us-east-1"))
    assert sized.chosen is not None and sized.chosen.placement.name == "g6e.12xlarge"
    assert sized.chosen.penalty_hours == Fraction(88725, 100000)
    assert f"{float(sized.chosen.cost_per_run or 0):.2f}" == "102.56"
    assert sized.chosen.slower_than is not None and sized.chosen.slower_than.placement.name == "g6e.48xlarge"


def test_the_report_says_which_ring_decided_and_the_hours_a_slower_one_adds() -> None:
    w = wfile(dict(FINE_TUNE_13B, gpus_per_run=12, gang=True, measured_on="H100-80GB"))
    text = sizing_text(size(w, "w.yaml"))
    assert "Buys p5.48xlarge (H100-80GB) at $440.32 per run" in text
    assert "Its gradient ring: 487.09 GB/s bus bandwidth over the node's 3,200 Gbit/s network (published busbw)" in text
    assert "each of 1,440 steps (default: one step per 10 s of the run)" in text
    assert "p5.4xlarge (12.5 GB/s over the node's 100 Gbit/s network (line rate), 3.813 s" in text
    assert "+1.49 h per run" in text


def test_a_stacks_one_gpu_efa_pool_does_not_take_a_12_gpu_gang_from_its_nvlink_pool() -> None:
    # aws-train plus `h100-small`: 16 × p5.4xlarge on the same EFA fabric. A 12-GPU gang fine-tune measured on H100
    # costs $452.94 a run there with its slower ring against $440.32 on `h100` (figures as in the catalog test).
    raw = example_estate("aws-train")
    raw["sites"][0]["node_pools"].append(
        {
            "name": "h100-small",
            "role": "training",
            "instance_type": "p5.4xlarge",
            "fabric": "train-efa",
            "scaling": {"min": 0, "desired": 0, "max": 16},
            "capacity": {"type": "on-demand"},
        }
    )
    w = wfile(dict(FINE_TUNE_13B, gpus_per_run=12, gang=True, measured_on="H100-80GB"))
    c = size(w, "w.yaml", parse_estate(raw, "aws-train"), "aws-train", today=dt.date(2026, 11, 30)).comparison
    assert c is not None
    hosts = {v.placement.name: v.demand.classes for v in c.pools}
    assert hosts["h100"] == ("ft-13b",) and hosts["h100-small"] == ()
    ((name, why),) = c.passed_over
    assert name == "ft-13b" and why.startswith("h100-small (12.5 GB/s over the node's 100 Gbit/s network (line rate)")
    assert why.endswith("+1.49 h per run")


def test_the_class_section_and_the_stack_section_penalise_against_the_same_rings() -> None:
    # Review item 6: a 23 h run with a 24 h deadline on the owned `train` pool. The class section added +1.84 h
    # against p5.48xlarge's published 487.09 GB/s and bought p5; the stack section penalised against the stack's
    # pools only and placed ft70b on train. Now both say train misses the deadline, at its scaled line rate
    # (200 × 487.09 ÷ 400 = 243.545 GB/s): 8,280 steps × (2 × 31/32 × 140 GB ÷ 243.545 - ÷ 487.09) = 8,280 ×
    # 0.55688 s = 1.2808 h, 24.28 h > 24.
    r = on("onprem", dict(FT70B, hours_per_run=23, hours_on={}))
    (cs,) = r.classes
    train = next(ch for ch in cs.choices if ch.placement.name == "train")
    assert train.status == "misses deadline" and f"{float(train.penalty_hours):.2f}" == "1.28"
    assert r.comparison is not None and r.comparison.unplaced and r.comparison.unplaced[0][0] == "ft70b"
    assert "train for ft70b misses its deadline after +1.28 h ring penalty" in headline(r)


def test_a_fabric_without_a_published_busbw_is_scaled_as_its_gpu_generation_s_published_run() -> None:
    # Review item 6 / 10: bare metal was taken at line rate while p5 got 487.09 GB/s (1.22 × its 400 GB/s line
    # rate), and p4d (400 Gbit/s EFA, A100) got a verify mark of 40 GB/s next to p4de's 62.7 on the same network.
    # p4de.24xlarge published 78.33 GB/s over 50 GB/s line rate: p4d (A100-40GB, the same A100 node) 78.33 GB/s.
    h100, a100 = catalog.gpu_model("H100-80GB"), catalog.gpu_model("A100-40GB")
    owned = catalog.node_busbw(None, Fraction(1600), h100, 8)
    assert owned.gb_per_s == Fraction(200) * Fraction("487.09") / 400 and not owned.measured
    assert "p5.48xlarge's published busbw" in owned.source and "gpufleet's assumption" in owned.source
    assert catalog.node_busbw("p4d.24xlarge", Fraction(400), a100, 8).gb_per_s == Fraction("78.33")
    assert catalog.node_busbw(None, Fraction(1600)).gb_per_s == 200  # no GPU given: the line rate
    assert catalog.node_busbw("p5.4xlarge", Fraction(100), h100, 1).gb_per_s == Fraction(100, 8)  # no NVLink ring


def test_hours_measured_on_an_owned_pool_hold_on_its_ring_not_the_fastest_one() -> None:
    # The same 23 h ft70b as above, measured on the owned `train` pool itself: its ring is the one the hours hold
    # on, so train meets the 24 h deadline with no penalty and is used first; p5's faster ring is not credited
    # (the file says nothing of how the run scales), so p5 also takes 23 h.
    r = on("onprem", dict(FT70B, hours_per_run=23, hours_on={}, measured_on=None, measured_on_pool="train"))
    (cs,) = r.classes
    assert cs.cls.measured_on == "H100-80GB"  # the pool's GPU model
    train = next(ch for ch in cs.choices if ch.placement.name == "train")
    assert train.status == "ok" and train.penalty_hours == 0 and train.hours_per_run == 23
    assert cs.chosen is train
    p5 = next(ch for ch in cs.choices if ch.placement.name == "p5.48xlarge")
    assert p5.hours_per_run == 23 and p5.penalty_hours == 0


def test_measured_on_pool_names_a_pool_of_the_stack() -> None:
    with pytest.raises(SpecError) as err:
        on("onprem", dict(FT70B, measured_on=None, measured_on_pool="trian"))
    assert str(err.value).startswith("w.yaml: classes[0].measured_on_pool: stack onprem has no pool trian (pools: ")
    with pytest.raises(SpecError) as err:
        on(None, dict(FT70B, measured_on=None, measured_on_pool="train"))
    assert "w.yaml: classes[0].measured_on_pool: names a stack's pool: give --stack" in str(err.value)
    with pytest.raises(SpecError) as err:
        on("onprem", dict(FT70B, measured_on="A100-40GB", measured_on_pool="train"))
    assert "classes[0].measured_on: A100-40GB is not pool train's GPU model (H100-80GB)" in str(err.value)
    with pytest.raises(SpecError) as err:  # 64 GPUs at once on a 32-GPU pool: no measurement was made there
        on("onprem", dict(FT70B, gpus_per_run=64, measured_on=None, measured_on_pool="train"))
    assert "classes[0].measured_on_pool: the class cannot run on pool train: needs 64 GPUs at once" in str(err.value)
    with pytest.raises(SpecError) as err:  # the resolved GPU model given hours twice
        on("onprem", dict(FT70B, measured_on=None, measured_on_pool="train", hours_on={"H100-80GB": 9}))
    assert "classes[0].hours_on.H100-80GB: H100-80GB is measured_on" in str(err.value)
