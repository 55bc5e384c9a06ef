"""Regressions from the review of issue 32's purchase options (briefs/s40/P2-review.md), each with its arithmetic.

Figures (us-east-1): p5.48xlarge $55.04/h on demand; its spot figures per AZ ID (skypilot-org/skypilot-catalog
catalogs/v8/aws/vms.csv at 00148f2af3672e2229b4f7bf8157d5a3f36e3c35) have the mean 193.8685 / 6 = 32.31141667.
aws-train's hour at max beside h100's 4 nodes (its other pools and the rest of the bill) is $91.5384/h.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from rich.console import Console

from gpufleet.render.cost import cost_details_text
from gpufleet.review.cost.envelope import estate_cost
from model import kinds
from model.load import SpecError, parse_estate
from model.spec import BurstWindow
from tests.conftest import example_estate

NOW = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)


def _estate(pool: str, capacity: dict[str, Any], **policies: Any) -> dict[str, Any]:
    estate = example_estate("aws-train")
    p = next(p for p in estate["sites"][0]["node_pools"] if p["name"] == pool)
    p["capacity"] = capacity
    estate.setdefault("policies", {}).update(policies)
    return estate


def test_the_budget_hour_judges_spot_nodes_at_their_maximum_price_on_demand_not_the_mean() -> None:
    # AWS bills spot up to the maximum price, on demand by default, and two of six recorded AZ IDs sit there.
    on_demand = estate_cost(parse_estate(_estate("h100", {"type": "on-demand"}), "t"), now=NOW)
    spot = estate_cost(parse_estate(_estate("h100", {"type": "spot", "checkpointing": True}), "t"), now=NOW)
    # at max: 4 x 55.04 + 91.5384 = 311.6984 $/h, the same hour on demand and on spot
    assert on_demand.budget_hour() == pytest.approx(311.6984, abs=1e-4)
    assert spot.budget_hour() == pytest.approx(311.6984, abs=1e-4)
    # the expected cost stays at the mean: 4 x 32.31141667 + 91.5384 = 220.78406667 $/h
    assert spot.total().hourly.max == pytest.approx(220.7840667, abs=1e-4)


PLAN = {"kind": "savings-plan", "term": "1y", "payment": "no-upfront", "nodes": 1, "usd_per_hour": 40.0,
        "date": "2020-01-01", "source": "AWS quote SP-9"}  # fmt: skip


def test_a_commitment_on_a_burst_pool_is_refused() -> None:
    # Priced, its budget hour read 4 x 40 = $160/h for burst-h100 where 40 + 3 x 55.04 = $205.12/h can bill.
    raw = example_estate("hybrid")
    pool = next(p for s in raw["sites"] for p in s.get("node_pools", []) if p["name"] == "burst-h100")
    pool["capacity"] = {"type": "on-demand", "commitment": {**PLAN, "date": "2026-11-01"}}
    with pytest.raises(SpecError) as err:
        parse_estate(raw, "hybrid")
    assert any("pool burst-h100: a burst pool idles at zero" in p for p in err.value.problems), err.value.problems


def test_a_commitment_whose_term_has_ended_is_priced_on_demand_with_a_note() -> None:
    # 1y from 2020-01-01 ended 2021-01-01; on 2026-12-01 l40s's 1 / 2 / 6 nodes pay 10.49264 $/h each:
    # 10.49264, 20.98528, 62.95584 $/h (not 40 + (n - 1) x 10.49264)
    cost = estate_cost(parse_estate(_estate("l40s", {"type": "on-demand", "commitment": PLAN}), "t"), now=NOW)
    l40s = next(p for p in cost.pools if p.pool == "l40s")
    assert (l40s.hourly.min, l40s.hourly.desired, l40s.hourly.max) == pytest.approx((10.49264, 20.98528, 62.95584))
    assert l40s.purchase == "on demand"
    assert any("(1y savings-plan of 2020-01-01) ended on 2021-01-01: its nodes pay on demand" in n for n in l40s.notes)


def test_a_spot_burst_pool_needs_a_spot_figure_for_every_type_a_window_may_use() -> None:
    # A window on a type with an on-demand price and no spot figure (p4d.24xlarge before the spot import;
    # p6-b300.48xlarge here) left the pool unpriced: the budget hour dropped from 176.74 to 47.49 $/h.
    raw = example_estate("hybrid")
    pool = next(p for s in raw["sites"] for p in s.get("node_pools", []) if p["name"] == "burst-h100")
    pool["capacity"] = {"type": "spot", "checkpointing": True}
    raw["burst"]["allowed_instance_types"] = ["p5.48xlarge", "p6-b300.48xlarge"]
    raw["burst"]["allow_spot"] = True
    with pytest.raises(SpecError) as err:
        parse_estate(raw, "hybrid")
    assert any(
        "burst.allowed_instance_types[1]: spot pool burst-h100 runs on spot, and the catalog holds no" in p
        and "spot figure for p6-b300.48xlarge; set capacity.spot_discount" in p
        for p in err.value.problems
    ), err.value.problems
    pool["capacity"]["spot_discount"] = 0.6  # then every allowed type is priced at 60 % off on demand
    parse_estate(raw, "hybrid")


def test_size_quotes_a_committed_pools_added_nodes_on_demand() -> None:
    # The commitment covers 1 node at $6.50/h (3.5 + 26,280 / 8,760); a node sizing adds is above it and pays
    # g6e.12xlarge's on-demand 10.49264 $/h, not 6.50.
    plan = {"kind": "savings-plan", "term": "1y", "payment": "partial-upfront", "nodes": 1, "usd_per_hour": 3.5,
            "upfront_usd": 26280, "date": "2026-11-01", "source": "AWS quote SP-1"}  # fmt: skip
    spec = parse_estate(_estate("l40s", {"type": "on-demand", "commitment": plan}), "t")
    quote = kinds.of(spec.sites[0]).pool_gpu_hour(spec, "l40s")
    assert quote.usd == pytest.approx(10.49264) and quote.gpus == 4
    assert quote.basis.endswith("nodes above the 1y savings-plan (partial-upfront) on 1 node pay on demand")


def test_spot_source_kms_month_and_rotation_cap_the_spot_window_note_and_adopted_clusters_logs() -> None:
    spot = estate_cost(parse_estate(_estate("h100", {"type": "spot", "checkpointing": True}), "t"), now=NOW)
    h100 = next(p for p in spot.pools if p.pool == "h100")
    assert h100.price.source.endswith("rows in Local Zones (use1-atl2-az1) left out; us-east-1")  # the region once
    console = Console(width=400, record=True)
    cost_details_text(spot, console)
    kms = next(ln for ln in console.export_text().splitlines() if "/KMS keys:" in ln)
    # aws-train's 4 keys (the site key and one per EFS, FSx and S3 tier) x $1 = $4.00 a month, not the hour's
    # 4 / 730 = $0.0055 shown as $0.01 (or, with 2 keys, $0.0027 as $0.00)
    assert ": 4 keys: $4.00/month — " in kms
    assert "for the first two rotations only (AWS caps rotation charges)" in kms
    # a window on a spot burst pool is not "on demand"
    raw = example_estate("hybrid")
    pool = next(p for s in raw["sites"] for p in s.get("node_pools", []) if p["name"] == "burst-h100")
    pool["capacity"] = {"type": "spot", "checkpointing": True}
    raw["burst"]["allow_spot"] = True
    spec = parse_estate(raw, "hybrid")
    start = NOW - dt.timedelta(hours=1)
    window = BurstWindow(pool="burst-h100", nodes=2, instance_type="p5.48xlarge", availability_zone="us-east-1a",
                         start=start, expires=start + dt.timedelta(hours=8))  # fmt: skip
    notes = next(p for p in estate_cost(spec, window, NOW).pools if p.pool == "burst-h100").notes
    # 2 x 55.04 x (8 h + 0.5 h grace + 16 min stop lag) = $965.03, at on demand (spot's maximum price)
    assert any("2 × p5.48xlarge on spot, priced at on demand (spot's maximum price)" in n for n in notes), notes
    assert any("may cost at most $965.03" in n for n in notes)
    # an adopted cluster makes no control-plane log group (components/aws/cluster.py creates it for its own only)
    site = parse_estate(example_estate("aws-train"), "t").sites[0]
    adopted = site.model_copy(update={"cluster": site.cluster.model_copy(update={"adopt_name": "theirs"})})  # type: ignore[union-attr]
    assert "CloudWatch logs (EKS control-plane logs)" not in kinds.of(adopted).bill_excludes  # type: ignore[attr-defined]
    assert "CloudWatch logs (EKS control-plane logs)" in kinds.of(site).bill_excludes  # type: ignore[attr-defined]


def test_the_vpn_price_cites_what_verifies_it_and_marks_the_rest() -> None:
    # us-east-1: a stored AWS Price List extract (retrieved 2026-06-04) lists VPN-Usage-Hours:ipsec.1 at $0.0500
    # an hour, so 730 h = $36.50 a month; the other regions stay unverified, and the old placeholder is not cited.
    from model import catalog

    east = catalog.service_price("vpn-connection", "us-east-1")
    assert east is not None and east.verified and east.usd == pytest.approx(0.05)
    assert "VPN-Usage-Hours:ipsec.1" in east.source and "retrieved 2026-06-04" in east.source
    for region in ("us-east-2", "us-west-1", "us-west-2"):
        other = catalog.service_price("vpn-connection", region)
        assert other is not None and not other.verified and "api-evangelist" not in other.source
