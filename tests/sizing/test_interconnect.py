"""Interconnect in the ranking: a training run's gradient ring, and placements that split it over weaker links.

Ring all-reduce time = 2(n-1)/n × bytes ÷ bandwidth of the slowest link per GPU, one direction (NVIDIA/nccl-tests
doc/PERFORMANCE.md: busbw = algbw × 2(n-1)/n, "the speed of the hardware bottleneck", measured one direction).
Link figures: model/catalog/gpus.yaml (NVIDIA product pages) and aws_instances.json (EC2
DescribeInstanceTypes network_performance).
"""

from __future__ import annotations

import datetime as dt
from fractions import Fraction

from gpufleet.render.sizing import sizing_text
from gpufleet.sizing.interconnect import intra_node_gb_per_s, ring
from gpufleet.sizing.placement import catalog_placements, size_class
from gpufleet.sizing.report import size
from model import catalog
from model.catalog import network_gbit_per_s
from model.load import parse_estate
from tests.conftest import example_estate
from tests.sizing.helpers import wclass, wfile

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


def test_ring_time_is_the_nccl_all_reduce_formula_over_the_slowest_link() -> None:
    c = wclass(**FINE_TUNE_13B, gpus_per_run=12, gang=True)
    at = {p.name: p for p in catalog_placements("us-east-1")}
    # 2 × p5.48xlarge: NVLink 450 GB/s inside a node, 3,200 Gbit/s ÷ 8 ÷ 8 GPUs = 50 GB/s per GPU across nodes.
    # Gradients: 13e9 × 2 B = 26 GB; 2 × 11/12 × 26 GB = 47.67 GB through each GPU; ÷ 50 GB/s = 0.953 s.
    big = ring(c, at["p5.48xlarge"])
    assert big is not None and big.nodes == 2 and big.gb_per_s == 50
    assert big.allreduce_s == Fraction(2 * 11, 12) * 26 / 50
    # 12 × p5.4xlarge: one H100 each, 100 Gbit/s ÷ 8 = 12.5 GB/s per GPU: 47.67 ÷ 12.5 = 3.81 s, four times slower.
    small = ring(c, at["p5.4xlarge"])
    assert small is not None and small.nodes == 12 and small.gb_per_s == Fraction(25, 2)
    assert f"{float(small.allreduce_s or 0):.3f}" == "3.813"
    # inference and one-GPU runs all-reduce nothing
    assert ring(wclass(**FINE_TUNE_13B, gpus_per_run=1), at["p5.4xlarge"]) is None


def test_a_12_gpu_gang_fine_tune_goes_to_two_nvlink_nodes_not_twelve_one_gpu_nodes() -> None:
    # Measured on H100. 12 × p5.4xlarge bill 12 GPUs: 12 × $6.88 × 4 h = $330.24 per run; 2 × p5.48xlarge bill 16:
    # 16 × $55.04 / 8 × 4 h = $440.32. Before, the cheaper ring of 12 one-GPU nodes (12.5 GB/s per GPU) won; the
    # hours were measured for H100s and hold on H100's fastest ring (50 GB/s), so p5.4xlarge is not ranked.
    c = wclass(**FINE_TUNE_13B, gpus_per_run=12, gang=True, measured_on="H100-80GB")
    sized = size_class(c, catalog_placements("us-east-1"))
    assert sized.chosen is not None and sized.chosen.placement.name == "p5.48xlarge"
    assert sized.chosen.nodes_per_run == 2 and float(sized.chosen.cost_per_run or 0) == 440.32
    weak = next(ch for ch in sized.choices if ch.placement.name == "p5.4xlarge")
    assert weak.status == "weaker interconnect" and float(weak.cost_per_run or 0) == 330.24
    assert weak.slower_than is not None and weak.slower_than.placement.name == "p5.48xlarge"


def test_a_13b_full_fine_tune_is_not_split_over_two_pcie_l40s_nodes() -> None:
    # 8 GPUs per run, the same hours on every GPU (no measured_on). 249.6 GB of states fits 6 × L40S or 6 × A100-40GB.
    # 2 × g6e.12xlarge (4 L40S each): 8 × $10.49264 / 4 × 4 h = $83.94 per run; p4d.24xlarge (8 × A100-40GB on
    # NVLink): $21.957642 × 4 h = $87.83. Before, the two L40S nodes won. Their ring is 100 Gbit/s ÷ 8 ÷ 4 GPUs =
    # 3.125 GB/s per GPU (2 × 7/8 × 26 GB ÷ 3.125 = 14.56 s per all-reduce), against 32 GB/s PCIe inside one
    # g6e.48xlarge (1.42 s): not ranked. Next: p4d at $87.83 (NVLink, 300 GB/s: 0.152 s) under g6e.48xlarge's
    # 8 × $30.13118 / 8 × 4 = $120.52.
    c = wclass(**FINE_TUNE_13B, gpus_per_run=8)
    sized = size_class(c, catalog_placements("us-east-1"))
    assert sized.chosen is not None and sized.chosen.placement.name == "p4d.24xlarge"
    two_l40s = next(ch for ch in sized.choices if ch.placement.name == "g6e.12xlarge")
    assert two_l40s.status == "weaker interconnect" and two_l40s.nodes_per_run == 2
    assert two_l40s.ring is not None and two_l40s.ring.allreduce_s == Fraction(14, 8) * 26 / Fraction(25, 8)
    assert two_l40s.slower_than is not None and two_l40s.slower_than.placement.name == "g6e.48xlarge"


def test_the_report_says_which_assumption_decided_the_pick() -> None:
    text = sizing_text(size(wfile(dict(FINE_TUNE_13B, gpus_per_run=8)), "w.yaml"))
    assert "Its gradient ring: 300 GB/s per GPU over NVLink, 0.152 s per all-reduce of 26 GB" in text
    assert "Other GPU models were compared at the same hours (no measured_on)" in text
    assert "g6e.12xlarge (3.12 GB/s per GPU over the node's 100 Gbit/s network for 4 GPUs" in text
    assert "weaker interconnect" in text


def test_a_stacks_one_gpu_efa_pool_does_not_take_a_12_gpu_gang_from_its_nvlink_pool() -> None:
    # aws-train plus `h100-small`: 16 × p5.4xlarge on the same EFA fabric. A 12-GPU gang fine-tune measured on H100
    # costs $330.24 a run there against $440.32 on `h100` (2 × p5.48xlarge; figures as in the catalog test above).
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
    assert name == "ft-13b" and why.startswith("h100-small (12.5 GB/s per GPU over the node's 100 Gbit/s network")
