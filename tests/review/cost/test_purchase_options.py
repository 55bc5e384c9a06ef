"""Purchase options are priced as bought (issue 32): spot at a dated spot figure or the stack's declared discount,
never at the on-demand rate; a Savings Plan or Reserved Instances at its rate for the nodes it covers, paid
whether they run or not (https://docs.aws.amazon.com/savingsplans/latest/userguide/what-is-savings-plans.html).
Spot capacity can be interrupted with a two-minute notice
(https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-interruptions.html).

Figures (us-east-1): p5.48xlarge $55.04/h on demand; its spot figures per AZ ID in
skypilot-org/skypilot-catalog catalogs/v8/aws/vms.csv at 00148f2af3672e2229b4f7bf8157d5a3f36e3c35 are use1-az1
55.04, az2 19.2531, az3 21.1543, az4 55.04, az5 25.7522, az6 17.6289 (mean 193.8685 / 6 = 32.3114166...).
g6e.12xlarge $10.49264/h on demand and no spot figure.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from gpufleet.engine.plan import Plan
from gpufleet.render.diff import delta_text
from gpufleet.review.cost.envelope import estate_cost
from gpufleet.review.cost.options import comparison_line, steady_pools
from gpufleet.review.diff.plans import diff_plans
from model import kinds
from model.load import SpecError, parse_estate
from tests.conftest import example_estate

NOW = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)


def _estate(pool: str, capacity: dict[str, Any]) -> dict[str, Any]:
    estate = example_estate("aws-train")
    p = next(p for p in estate["sites"][0]["node_pools"] if p["name"] == pool)
    p["capacity"] = capacity
    return estate


def _cost(estate: dict[str, Any]) -> Any:
    return estate_cost(parse_estate(estate, "test"), now=NOW)


def _pool(estate: dict[str, Any], name: str) -> Any:
    return next(p for p in _cost(estate).pools if p.pool == name)


def test_a_spot_pool_is_priced_at_the_catalogs_dated_spot_mean_and_says_it_can_be_interrupted() -> None:
    h100 = _pool(_estate("h100", {"type": "spot", "checkpointing": True}), "h100")
    mean = 193.8685 / 6  # 32.31141667 $/node-hour
    assert h100.price.usd == pytest.approx(mean)
    # 0 / 2 / 4 nodes: 0, 64.62283333, 129.24566667 $/h
    assert (h100.hourly.min, h100.hourly.desired, h100.hourly.max) == pytest.approx((0.0, 64.6228333, 129.2456667))
    note = " ".join(h100.notes)
    assert "mean of 6 AZ IDs ($17.63 to $55.04/h on 2026-11-30)" in note
    assert "41.3% less" in note  # 1 - 32.3114167 / 55.04 = 0.41295
    assert "two-minute notice" in note
    assert "on-demand rate" not in note


def test_a_move_to_spot_shows_a_hand_checked_delta_in_diff() -> None:
    base = _cost(example_estate("aws-train")).to_dict()
    head = _cost(_estate("h100", {"type": "spot", "checkpointing": True})).to_dict()
    plan = Plan("gpufleet", "test", [])
    diff = diff_plans(plan, plan, base_cost=base, head_cost=head)
    # desired: 2 × (32.31141667 - 55.04) = -45.45716667 $/h; × 730 h = -$33,183.73 a month
    assert diff.cost_total is not None
    assert diff.cost_total.delta("desired") == pytest.approx(-45.4571667, abs=1e-4)
    assert diff.cost_total.month_delta("desired") == pytest.approx(-33183.73, abs=0.005)
    assert delta_text(diff, "desired") == "−$45.46/h (−$33,184/month)"
    # max: 4 × (32.31141667 - 55.04) = -90.91433333 $/h
    assert diff.cost_total.delta("max") == pytest.approx(-90.9143333, abs=1e-4)


def test_spot_without_a_spot_figure_is_refused_unless_the_stack_declares_a_discount() -> None:
    with pytest.raises(SpecError) as err:
        parse_estate(_estate("l40s", {"type": "spot"}), "test")
    assert any(
        "node_pools[1].capacity: spot pool l40s runs on spot, and the catalog holds no us-east-1 spot figure for "
        "g6e.12xlarge; set capacity.spot_discount" in line
        for line in err.value.problems
    ), err.value.problems
    l40s = _pool(_estate("l40s", {"type": "spot", "spot_discount": 0.6}), "l40s")
    assert l40s.price.usd == pytest.approx(4.197056)  # 10.49264 × (1 - 0.6)
    assert l40s.hourly.desired == pytest.approx(8.394112)  # 2 nodes


def test_a_one_year_savings_plan_covers_its_nodes_and_the_rest_pay_on_demand() -> None:
    plan = {"kind": "savings-plan", "term": "1y", "payment": "partial-upfront", "nodes": 1, "usd_per_hour": 3.5,
            "upfront_usd": 26280, "date": "2026-11-01", "source": "AWS quote SP-1"}  # fmt: skip
    base = _cost(example_estate("aws-train")).to_dict()
    head_cost = _cost(_estate("l40s", {"type": "on-demand", "commitment": plan}))
    l40s = next(p for p in head_cost.pools if p.pool == "l40s")
    # one covered node-hour: 3.5 + 26,280 / 8,760 = 6.5 $/h; l40s runs 1 / 2 / 6 nodes
    assert l40s.price.usd == pytest.approx(6.5)
    # min 6.5 (1 covered); desired 6.5 + 10.49264 = 16.99264; max 6.5 + 5 × 10.49264 = 58.9632
    assert (l40s.hourly.min, l40s.hourly.desired, l40s.hourly.max) == pytest.approx((6.5, 16.99264, 58.9632))
    diff = diff_plans(Plan("g", "t", []), Plan("g", "t", []), base_cost=base, head_cost=head_cost.to_dict())
    # every size saves 10.49264 - 6.5 = 3.99264 $/h: 2,914.63 a month (3.99264 × 730 = 2914.6272)
    assert diff.cost_total is not None
    for level in ("min", "desired", "max"):
        assert diff.cost_total.delta(level) == pytest.approx(-3.99264, abs=1e-4)  # JSON carries 4 decimals
    assert diff.cost_total.month_delta("desired") == pytest.approx(-2914.6272, abs=0.005)


def test_a_commitment_names_what_its_payment_option_needs() -> None:
    plan = {"kind": "reserved", "term": "3y", "payment": "all-upfront", "nodes": 1, "usd_per_hour": 2.0,
            "upfront_usd": 100000, "date": "2026-11-01", "source": "quote"}  # fmt: skip
    with pytest.raises(SpecError) as err:
        parse_estate(_estate("l40s", {"type": "on-demand", "commitment": plan}), "test")
    assert any("payment all-upfront has no hourly rate" in line for line in err.value.problems)
    with pytest.raises(SpecError) as err:
        parse_estate(_estate("l40s", {"type": "spot", "commitment": {**plan, "usd_per_hour": 0}}), "test")
    assert any(
        "commitment is only allowed with type on-demand or capacity-reservation" in p for p in err.value.problems
    )


def test_cost_compares_each_steady_pool_on_demand_with_how_it_is_bought() -> None:
    plan = {"kind": "savings-plan", "term": "1y", "payment": "partial-upfront", "nodes": 1, "usd_per_hour": 3.5,
            "upfront_usd": 26280, "date": "2026-11-01", "source": "AWS quote SP-1"}  # fmt: skip
    doc = _cost(_estate("l40s", {"type": "on-demand", "commitment": plan})).to_dict()
    # l40s keeps 1 node at min: 10.49264 × 730 = $7,659.63 on demand; 6.5 × 730 = $4,745.00 as bought;
    # 1 - 4,745 / 7,659.6272 = 0.3805 (the seed's "20-40 % at scale", computed). h100 and agents-l40s idle at min 0.
    (steady,) = doc["purchase_options"]
    assert steady == {"pool": "l40s", "nodes": 1, "basis": "1y savings-plan (partial-upfront) on 1 node",
                      "on_demand_monthly": 7659.6272, "as_bought_monthly": 4745.0, "saving": 0.3805}  # fmt: skip
    line = comparison_line(steady_pools(_cost(_estate("l40s", {"type": "on-demand", "commitment": plan})).pools)[0])
    assert line == (
        "l40s: 1 always-on node, $7,659.63/month on demand, $4,745.00 as bought "
        "(1y savings-plan (partial-upfront) on 1 node): 38.1% less"
    )


def test_size_quotes_a_stack_spot_pool_at_its_spot_rate_not_on_demand() -> None:
    spec = parse_estate(_estate("h100", {"type": "spot", "checkpointing": True}), "test")
    quote = kinds.of(spec.sites[0]).pool_gpu_hour(spec, "h100")
    assert quote.usd == pytest.approx(193.8685 / 6) and quote.gpus == 8  # $32.3114/node-hour, $4.0389/GPU-hour
    assert quote.basis.startswith("spot, the mean of 6 AZ IDs")
