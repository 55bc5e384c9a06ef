"""Recommended node pools (valid AwsNodePool entries, whole nodes) and the verdict on an existing stack."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import yaml

from components.model import catalog
from components.model.load import parse_estate
from components.model.pricing import server_hour_usd
from components.model.spec import AwsNodePool, BaremetalSite
from gpufleet.render.sizing import node_pool_snippet, sizing_markdown
from gpufleet.sizing.report import SizingReport, size
from gpufleet.sizing.workloads import load_workloads
from tests.conftest import example_estate

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = ROOT / "examples" / "workloads.yaml"
TODAY = dt.date(2026, 11, 29)


def sized(stack: str | None = None, estate: dict | None = None) -> SizingReport:  # type: ignore[type-arg]
    spec = None
    if stack is not None:
        spec = parse_estate(estate if estate is not None else example_estate(stack), stack)
    return size(load_workloads(WORKLOADS), str(WORKLOADS), spec, stack, today=TODAY)


def test_node_pool_snippet_entries_are_valid_aws_node_pools() -> None:
    r = sized()
    doc = yaml.safe_load(node_pool_snippet(r.pools))
    pools = [AwsNodePool.model_validate(entry) for entry in doc["node_pools"]]
    assert [p.instance_type for p in pools] == [rec.demand.placement.instance_type for rec in r.pools]
    for p, rec in zip(pools, r.pools, strict=True):
        assert p.scaling.min == rec.demand.min_nodes and p.scaling.max == rec.demand.max_nodes
        # whole nodes: the pool at max holds the pessimistic GPU figure and every gang
        assert p.scaling.max * p.gpus_per_node >= rec.demand.max_gpus >= rec.demand.gang_gpus


def test_example_portfolio_range_and_gang() -> None:
    r = sized()
    assert r.total_gpu_hours == 2924
    assert [s.rounded for s in r.scenarios] == [42, 35, 30]
    assert (r.gang_gpus, r.gang_class) == (8, "pretrain-7b")
    training = next(p for p in r.pools if p.role == "training")
    assert training.demand.placement.name == "p5.48xlarge"
    assert training.demand.classes == ("pretrain-7b", "finetune-13b")


def test_aws_train_verdict_h100_within_and_l40s_over_with_its_monthly_cost() -> None:
    c = sized("aws-train").comparison
    assert c is not None
    v = {p.placement.name: p for p in c.pools}
    assert v["h100"].verdict == "within"
    assert (v["h100"].demand.min_gpus, v["h100"].demand.max_gpus) == (27, 37)
    assert v["l40s"].verdict == "over-provisioned"
    assert v["l40s"].excess_gpus == 24 - v["l40s"].demand.max_gpus == 19
    per_gpu_hour = catalog.price("g6e.12xlarge", "us-east-1").usd_per_hour / 4  # type: ignore[union-attr]
    assert float(v["l40s"].excess_usd_per_month or 0) == pytest.approx(19 * per_gpu_hour * 730)
    assert c.verdict == "over-provisioned"
    assert ("agents-l40s", "dedicated to tenant agents; workload classes name no tenant") in c.skipped


def test_a_too_small_training_pool_is_under_provisioned() -> None:
    estate = example_estate("aws-train")
    estate["sites"][0]["node_pools"][0]["scaling"] = {"min": 0, "desired": 1, "max": 2}  # 16 H100s
    for t in estate["tenants"]:
        t["gpu_quota"].pop("h100", None)
    c = sized("aws-train", estate).comparison
    assert c is not None and c.verdict == "under-provisioned"
    assert next(p for p in c.pools if p.placement.name == "h100").verdict == "under-provisioned"


def test_onprem_inventory_is_a_candidate_priced_at_the_amortised_server_hour() -> None:
    r = sized("onprem")
    spec = parse_estate(example_estate("onprem"), "onprem")
    train = next(ch for cs in r.classes for ch in cs.choices if ch.placement.name == "train")
    site = spec.sites[0]
    assert isinstance(site, BaremetalSite) and site.cost is not None
    # train: 6 servers x 8 GPUs, so the pool's hour over its GPUs is one server-hour over 8
    assert float(train.placement.usd_per_gpu_hour or 0) == pytest.approx(server_hour_usd(site.cost) / 8)
    assert train.placement.gpus_per_node == 8  # from the inventory, not the catalog
    c = r.comparison
    assert c is not None
    assert [name for name, _ in c.skipped] == ["dev"]  # MIG slices are not whole GPUs
    # an existing on-prem pool stays one pool whatever roles it hosts, sized in whole servers
    (onprem,) = [rec for rec in r.pools if rec.demand.placement.instance_type is None]
    assert onprem.name == "train" and onprem.role == "training"
    assert onprem.demand.classes == ("pretrain-7b", "finetune-13b", "chat-70b")
    assert onprem.demand.max_nodes * 8 >= onprem.demand.max_gpus


def test_figures_past_their_review_date_are_flagged_in_the_decision_record() -> None:
    w = load_workloads(WORKLOADS)
    assert "OVERDUE" not in sizing_markdown(size(w, "w.yaml", today=dt.date(2027, 3, 1)))
    late = size(w, "w.yaml", today=dt.date(2027, 3, 2))
    assert late.review_overdue
    assert "Review by 2027-03-01 (OVERDUE: review the figures before deciding)." in sizing_markdown(late)
