"""A pool on an EC2 Capacity Block is costed for exactly the block's hours at a capacity-block rate.

AWS sells blocks of 1 to 14 days, or 7-day steps up to 182 days ("reservation durations in 1-day increments up
to 14 days, and in 7-day increments up to 182 days", EC2 user guide, capacity-blocks-purchase:
https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-purchase.html), and charges the price up
front ("The price of a Capacity Block offering is charged up front", capacity-blocks-extend). Its effective
hourly rate is not the on-demand rate: p5en.48xlarge in us-east-1 is $54.92/h in a block
(model/catalog/aws_capacity_block_prices.json) against $63.296/h on demand. The newcomer issue: a
block's length could not be stated and was costed as 730 h a month at the on-demand rate.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

import pytest
import yaml

from gpufleet.engine.plan import Plan
from gpufleet.render.diff import diff_json
from gpufleet.review.cost.envelope import EstateCost, PoolCost, estate_cost
from gpufleet.review.cost.prices import HOURS
from gpufleet.review.diff.plans import diff_plans
from model import catalog
from model.load import SpecError, parse_estate
from tests.conftest import ROOT, example_estate

NOW = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
RESERVATION = "cr-0123456789abcdef0"
BLOCK_RATE = 54.92  # p5en.48xlarge, us-east-1, capacity block (the catalog file; the source's date 2026-07-22)


def _estate(block: dict[str, Any] | None) -> dict[str, Any]:
    """aws-train (us-east-1) plus a two-node pool on a capacity block."""
    estate = example_estate("aws-train")
    capacity: dict[str, Any] = {"type": "capacity-block", "reservation_id": RESERVATION}
    if block is not None:
        capacity["block"] = block
    estate["sites"][0]["node_pools"].append(
        {"name": "block", "role": "training", "instance_type": "p5en.48xlarge", "fabric": "train-efa",
         "capacity": capacity, "scaling": {"max": 2}}
    )  # fmt: skip
    return estate


def _cost(block: dict[str, Any] | None) -> tuple[EstateCost, PoolCost]:
    cost = estate_cost(parse_estate(_estate(block), "test"), None, NOW)
    return cost, next(p for p in cost.pools if p.pool == "block")


def test_a_week_block_costs_its_168_hours_at_the_block_rate_for_every_instance() -> None:
    cost, pool = _cost({"days": 7, "start": "2026-12-03T11:30:00Z"})
    assert pool.price is not None and pool.price.usd == BLOCK_RATE
    assert "capacityblocks/pricing" in pool.price.source and pool.price.date == "2026-07-22"
    assert catalog.price("p5en.48xlarge", "us-east-1").usd_per_hour != BLOCK_RATE  # type: ignore[union-attr]
    # Paid whether or not nodes run: both instances at every size, though the pool's min is 0.
    assert [pool.hourly.at(lv) for lv in ("min", "desired", "max")] == [pytest.approx(2 * BLOCK_RATE)] * 3
    assert pool.monthly("max") == pytest.approx(2 * BLOCK_RATE * 168)  # $18,453.12, not 730 h
    assert any("$18,453.12 paid up front" in n for n in pool.notes)
    assert any("2026-12-10 11:30" in n for n in pool.notes)  # start + 7 days
    # The estate's month grows by the block and the root volumes of the nodes it may run, nothing more.
    bare = estate_cost(parse_estate(example_estate("aws-train"), "test"), None, NOW)
    for lv in ("min", "desired", "max"):
        roots = [
            ln.hourly.monthly(lv) for c in (cost, bare) for ln in c.bill if ln.item == "EBS root volumes" and ln.hourly
        ]
        extra = cost.monthly()[lv] - bare.monthly()[lv]  # type: ignore[operator]
        assert extra - (roots[0] - roots[1]) == pytest.approx(2 * BLOCK_RATE * 168)  # type: ignore[operator]
    assert cost.pool_month_ceiling(pool) == pytest.approx(2 * BLOCK_RATE * 168)
    doc = json.loads(json.dumps(cost.to_dict()))
    (entry,) = [p for p in doc["pools"] if p["pool"] == "block"]
    assert entry["monthly"]["max"] == pytest.approx(18453.12) and entry["month_hours"] == 168


def test_a_block_longer_than_a_month_counts_730_hours_in_a_month() -> None:
    _, pool = _cost({"days": 182})
    assert pool.month_hours == HOURS and pool.monthly("max") == pytest.approx(2 * BLOCK_RATE * HOURS)
    assert any(f"for 182 days ({182 * 24} h)" in n for n in pool.notes)


def test_a_block_without_its_length_is_refused_and_never_priced_on_demand() -> None:
    with pytest.raises(SpecError) as err:
        parse_estate(_estate(None), "s.yaml")
    (problem,) = err.value.problems
    assert problem == (
        "s.yaml: config.gpufleet:estate.sites[0].node_pools[3].capacity.block: pool block runs on capacity block "
        f"{RESERVATION}, which AWS charges up front for its length: set block: {{days: <1 to 14, or 21 to 182 in "
        "steps of 7>} (and its start), so cost counts its hours, not a month at the on-demand rate"
    )
    # The Pulumi program takes the estate all the same; its envelope names the pool unpriced, never on-demand.
    cost = estate_cost(parse_estate(_estate(None), "s.yaml", priced=False), None, NOW)
    pool = next(p for p in cost.pools if p.pool == "block")
    assert pool.price is None and pool.hourly.at("max") is None and "pool block" in cost.total().unpriced


def test_a_block_the_catalog_has_no_rate_for_is_priced_by_its_upfront_fee(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = json.loads(catalog.CAPACITY_BLOCK_PRICES_FILE.read_text())
    del doc["regions"]["us-east-1"]["p5en.48xlarge"]
    monkeypatch.setattr(catalog, "_capacity_block_doc", lambda: doc)
    with pytest.raises(SpecError) as err:
        parse_estate(_estate({"days": 2}), "s.yaml")
    (problem,) = err.value.problems
    assert "config.gpufleet:estate.sites[0].node_pools[3].capacity.block: " in problem
    assert "no us-east-1 capacity-block rate for p5en.48xlarge; set block.upfront_usd" in problem
    # What AWS charged for the block, as its offering said: $5,000 for 2 days of both instances.
    _, pool = _cost({"days": 2, "upfront_usd": 5000})
    assert pool.price is not None and "capacity.block.upfront_usd" in pool.price.source
    assert pool.hourly.at("min") == pytest.approx(5000 / 48) and pool.monthly("max") == pytest.approx(5000)


def test_an_ended_block_costs_nothing_more() -> None:
    _, pool = _cost({"days": 1, "start": "2026-11-20T11:30:00Z"})
    assert pool.hourly.at("max") == 0.0 and any("has ended" in n for n in pool.notes)


@pytest.mark.parametrize("days", [1, 14, 21, 28, 175, 182])
def test_every_length_aws_sells_is_accepted(days: int) -> None:
    parse_estate(_estate({"days": days}), "test")


@pytest.mark.parametrize("days", [0, 15, 20, 22, 183, 189])
def test_a_length_aws_does_not_sell_is_refused_naming_the_field(days: int) -> None:
    with pytest.raises(SpecError) as err:
        parse_estate(_estate({"days": days}), "s.yaml")
    (problem,) = err.value.problems
    assert problem.startswith("s.yaml: config.gpufleet:estate.sites[0].node_pools[3].capacity.block.days: ")
    assert f"{days} days is not a length AWS sells: 1 to 14 days, or 21 to 182 in steps of 7" in problem


def test_a_block_on_capacity_that_is_not_a_block_is_refused() -> None:
    estate = example_estate("aws-train")
    estate["sites"][0]["node_pools"][0]["capacity"] = {"type": "on-demand", "block": {"days": 7}}
    with pytest.raises(SpecError, match="block is only allowed with type capacity-block"):
        parse_estate(estate, "s.yaml")


def test_the_catalog_block_rates_are_for_shipped_types_sold_as_blocks_in_known_regions() -> None:
    doc = json.loads(catalog.CAPACITY_BLOCK_PRICES_FILE.read_text())
    assert doc["source"]["date"] and doc["source"]["source"] and doc["source"]["verified"] is False
    for region, rates in doc["regions"].items():
        assert region in catalog.aws_regions(), region
        for name, usd in rates.items():
            assert "capacity-block" in catalog.instance_type(name).usage_classes, name
            assert usd > 0, (region, name)


def test_the_documented_example_is_valid_and_costs_what_the_reference_says() -> None:
    text = (ROOT / "docs" / "capacity-blocks.md").read_text()
    adopted, bought = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    for block in (adopted, bought):  # the same block, adopted by id and bought from its offering
        (pool,) = yaml.safe_load(block)["node_pools"]
        estate = example_estate("aws-train")
        estate["sites"][0]["node_pools"].append(pool)
        cost = estate_cost(parse_estate(estate, "test"), None, NOW)
        (costed,) = [p for p in cost.pools if p.pool == pool["name"]]
        assert costed.monthly("max") == pytest.approx(18453.12) and "$18,453.12" in text


def test_site_and_tenant_months_count_the_block_hours_and_add_up_to_the_estate_month() -> None:
    # A week's block in a month: the site's and each tenant's month count 168 h of the block, as the estate's does.
    cost, _ = _cost({"days": 7})
    for lv in ("min", "desired", "max"):
        (site,) = cost.sites()
        assert cost.site_total(site).hourly.monthly(lv) == pytest.approx(cost.monthly()[lv])
    doc = json.loads(json.dumps(cost.to_dict()))
    assert doc["sites"]["use1"]["monthly"]["max"] == pytest.approx(cost.monthly()["max"], rel=1e-6)
    shares = [s for s in cost.tenant_shares if s.pool == "block"]
    assert sum(s.hourly.monthly("max") or 0.0 for s in shares) == pytest.approx(2 * BLOCK_RATE * 168)


def test_an_unverified_block_rate_says_so_in_the_pool_note() -> None:
    _, pool = _cost({"days": 7})
    assert pool.price is not None and not pool.price.verified
    assert any("(unverified, of 2026-07-22)" in n for n in pool.notes)


def test_moving_a_pool_from_on_demand_to_a_bought_block_diffs_by_the_blocks_upfront_fee() -> None:
    # aws-train's h100 pool (p5.48xlarge, 0/2/4 nodes, on demand at $55.04/h in us-east-1) moves to a block of
    # its 4 instances for 7 days, bought from an offering whose UpfrontFee is $20,000.00:
    #   the block's node-hour: 20,000 / (4 × 168 h) = $29.761905; the pool: 4 × 29.761905 = $119.047619/h at
    #   every size (paid whether nodes run or not), and its month is the block's 168 h: 168 × 119.047619 =
    #   $20,000.00.
    #   on demand at desired (2 nodes): 2 × 55.04 = $110.08/h, × 730 h = $80,358.40 a month; at max (4):
    #   $220.16/h, $160,716.80 a month; at min (0): $0.
    #   Δ desired: +$8.967619/h, 20,000.00 − 80,358.40 = −$60,358.40 a month; Δ max: −$101.112381/h,
    #   −$140,716.80 a month; Δ min: +$119.047619/h, +$20,000.00 a month.
    base = parse_estate(example_estate("aws-train"), "test")
    raw = example_estate("aws-train")
    h100 = raw["sites"][0]["node_pools"][0]
    h100["capacity"] = {
        "type": "capacity-block", "instances": 4, "availability_zone": "us-east-1a",
        "block": {"offering_id": "cb-0123456789abcdefg", "days": 7, "start": "2026-12-03T11:30:00Z",
                  "upfront_usd": 20_000.00},
    }  # fmt: skip
    head = parse_estate(raw, "test")
    plan = Plan(project="gpufleet", stack="aws-train", resources=[])
    d = diff_plans(
        plan,
        plan,
        base_cost=json.loads(json.dumps(estate_cost(base, None, NOW).to_dict())),
        head_cost=json.loads(json.dumps(estate_cost(head, None, NOW).to_dict())),
    )
    line = next(c for c in d.cost_pools if c.name == "h100")
    # The cost documents carry $/h to 4 decimals ($119.0476), so the hourly deltas are to 4 decimals too.
    assert round(line.delta("desired"), 4) == 8.9676  # type: ignore[arg-type]
    assert round(line.delta("max"), 4) == -101.1124  # type: ignore[arg-type]
    assert round(line.month_delta("desired"), 2) == -60_358.40  # type: ignore[arg-type]
    assert round(line.month_delta("max"), 2) == -140_716.80  # type: ignore[arg-type]
    assert round(line.month_delta("min"), 2) == 20_000.00  # type: ignore[arg-type]
    doc = json.loads(diff_json(d))
    (pool,) = [p for p in doc["cost"]["pools"] if p["name"] == "h100"]
    assert pool["delta_month"] == {"min": 20_000.0, "desired": -60_358.4, "max": -140_716.8}


def test_a_longer_block_at_the_same_rate_keeps_its_pool_line_in_diff() -> None:
    # h100's block of 4 instances goes from 7 days for $20,000 to 14 days for $40,000: the node-hour stays
    # 20,000 / (4 × 168 h) = 40,000 / (4 × 336 h) = $29.761905, but the month goes from 168 h ($20,000.00) to
    # 336 h ($40,000.00): +$20,000.00 at every size.
    def cost(days: int, fee: float) -> dict[str, Any]:
        raw = example_estate("aws-train")
        raw["sites"][0]["node_pools"][0]["capacity"] = {
            "type": "capacity-block", "instances": 4, "availability_zone": "us-east-1a",
            "block": {"offering_id": "cb-0123456789abcdefg", "days": days, "start": "2026-12-03T11:30:00Z",
                      "upfront_usd": fee},
        }  # fmt: skip
        return json.loads(json.dumps(estate_cost(parse_estate(raw, "test"), None, NOW).to_dict()))

    plan = Plan(project="gpufleet", stack="aws-train", resources=[])
    d = diff_plans(plan, plan, base_cost=cost(7, 20_000.0), head_cost=cost(14, 40_000.0))
    (line,) = [c for c in d.cost_pools if c.name == "h100"]
    assert line.delta("max") == 0
    assert round(line.month_delta("max"), 2) == 20_000.00  # type: ignore[arg-type]


def test_a_blocks_node_hour_is_its_fee_over_its_instances_not_the_pools_max() -> None:
    # A block of 4 instances for 7 days at $20,000 under a pool of max 2: the node-hour is 20,000 / (4 × 168 h)
    # = $29.761905, and the pool still pays the whole block, 4 × 29.761905 = $119.047619/h (168 h: $20,000).
    capacity = {"type": "capacity-block", "instances": 4, "availability_zone": "us-east-1a",
                "block": {"offering_id": "cb-0123456789abcdefg", "days": 7, "start": "2026-12-03T11:30:00Z",
                          "upfront_usd": 20_000.0}}  # fmt: skip
    estate = _estate(None)
    estate["sites"][0]["node_pools"][-1]["capacity"] = capacity
    cost = estate_cost(parse_estate(estate, "test"), None, NOW)
    pool = next(p for p in cost.pools if p.pool == "block")
    assert pool.price is not None and pool.price.usd == pytest.approx(20_000 / (4 * 168))
    assert pool.hourly.at("max") == pytest.approx(20_000 / 168)
