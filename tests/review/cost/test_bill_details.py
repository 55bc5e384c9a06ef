"""The bill's details (issue 32, section 6): every list-priced item the stack creates is counted, what it leaves
out is named only where the stack makes it, burst spend is booked to the tenants that burst, and every delta is
exact to the cent.

Prices: KMS $1 per key-month, prorated hourly (aws.amazon.com/kms/pricing, no region named); Site-to-Site VPN
$0.05 per connection-hour in us-east-1 (aws.amazon.com/vpn/pricing); EBS gp3 $0.08/GB-month in us-east-1.
"""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

import pytest
from rich.console import Console

from gpufleet.engine.plan import Plan
from gpufleet.render.diff import budget_hour_delta_text, diff_markdown, diff_text
from gpufleet.review.cost.envelope import UNASSIGNED, EstateCost, estate_cost
from gpufleet.review.diff.plans import PlanDiff, diff_plans
from model.load import parse_estate
from model.spec import BurstWindow
from tests.conftest import example_estate
from tests.review.estates import NOW

PLAN = Plan("gpufleet", "test", [])


def _hybrid(**burst_pool: object) -> EstateCost:
    raw = example_estate("hybrid")
    raw["sites"][1]["node_pools"][0].update(burst_pool)
    return estate_cost(parse_estate(raw, "hybrid"), None, NOW)


def test_kms_keys_and_the_vpn_connection_are_priced_on_the_hybrid_cloud_site() -> None:
    bill = {ln.item: ln for ln in _hybrid().bill}
    kms = bill["KMS keys"]
    # the site key (components/aws/cluster.py) and the S3 tier's (components/aws/storage/s3.py): 2 keys
    assert kms.quantity == "2 keys" and kms.hourly is not None
    assert kms.hourly.at("min") == pytest.approx(2 * 1.0 / 730)  # $0.0027397/h, $2.00 a month
    assert kms.hourly.monthly("min") == pytest.approx(2.0)
    vpn = bill["Site-to-Site VPN connection"]
    assert vpn.hourly is not None and vpn.hourly.at("max") == pytest.approx(0.05)  # $36.50 a month
    assert vpn.hourly.monthly("max") == pytest.approx(36.5)


def test_what_the_totals_leave_out_is_named_only_where_the_stack_makes_it() -> None:
    hybrid = " ".join(_hybrid().excluded)
    for phantom in ("VPC flow logs", "FSx", "EFS", "site-to-site VPN"):
        assert phantom not in hybrid, phantom  # no flow logs, FSx or EFS on hybrid; the VPN is priced now
    assert "S3 requests" in hybrid  # hybrid has an S3 tier
    train = " ".join(estate_cost(parse_estate(example_estate("aws-train"), "t"), None, NOW).excluded)
    for named in ("FSx backups", "FSx logs in CloudWatch", "EFS backups", "EFS throughput"):
        assert named in train, named


def test_burst_spend_is_booked_to_the_tenant_that_bursts_not_unassigned() -> None:
    spec = parse_estate(example_estate("hybrid"), "hybrid")
    window = BurstWindow(pool="burst-h100", nodes=2, instance_type="p5.48xlarge", availability_zone="us-east-1a",
                         start=NOW, expires=NOW + dt.timedelta(hours=8))  # fmt: skip
    cost = estate_cost(spec, window, NOW)
    shares = [s for s in cost.tenant_shares if s.pool == "burst-h100"]
    # research is the one tenant with burst: true; 2 × $55.04 = $110.08/h is all its own
    assert [(s.tenant, s.share) for s in shares] == [("research", 1.0)]
    assert shares[0].hourly.at("max") == pytest.approx(110.08)
    assert all(s.tenant != UNASSIGNED for s in shares)


def test_a_pool_months_delta_is_exact_to_the_cent() -> None:
    # l40s (g6e.12xlarge, $10.49264/h) from 2 to 3 desired nodes: 10.49264 × 730 = $7,659.6272 a month. The JSON
    # carries $/h to 4 decimals (20.9853 and 31.4779), and 730 × their difference is $7,659.598: 3 ¢ off.
    base = example_estate("aws-train")
    head = copy.deepcopy(base)
    head["sites"][0]["node_pools"][1]["scaling"]["desired"] = 3
    docs = [estate_cost(parse_estate(raw, "t"), None, NOW).to_dict() for raw in (base, head)]
    diff = diff_plans(PLAN, PLAN, base_cost=docs[0], head_cost=docs[1])
    (l40s,) = [c for c in diff.cost_pools if c.name == "l40s"]
    assert l40s.month_delta("desired") == pytest.approx(7659.6272, abs=0.005)


def test_the_diff_headline_shows_the_change_at_max_when_the_burst_max_doubles() -> None:
    base, head = _hybrid().to_dict(), _hybrid(scaling={"min": 0, "max": 8}).to_dict()
    diff = diff_plans(PLAN, PLAN, base_cost=base, head_cost=head)
    assert diff.cost_total is not None and diff.cost_total.delta("max") == pytest.approx(0.0)  # idle: $0/h
    # 4 more p5.48xlarge at $55.04 = $220.16/h, and their roots 4 × 200 GB × $0.08 / 730 = $0.0877/h: $220.25/h
    assert diff.budget_hour is not None and diff.base_budget_hour is not None
    assert diff.budget_hour - diff.base_budget_hour == pytest.approx(220.16 + 4 * 200 * 0.08 / 730, abs=1e-3)
    assert budget_hour_delta_text(diff) == "+$220.25/h"
    assert (
        "| **delta, the hour the budget judges (max size, spot at on demand, burst pools at their max)** | | "
        "**+$220.25/h** |"
    ) in diff_markdown(diff)


def _diff_text(diff: PlanDiff) -> str:
    console = Console(record=True, width=300)
    diff_text(diff, console, summary_only=True)
    return console.export_text()


def _aws_train(capacity: dict[str, object] | None = None, desired: int | None = None) -> dict[str, Any]:
    raw = example_estate("aws-train")
    pools = raw["sites"][0]["node_pools"]
    if capacity is not None:
        next(p for p in pools if p["name"] == "h100")["capacity"] = capacity
    if desired is not None:
        pools[1]["scaling"]["desired"] = desired
    return estate_cost(parse_estate(raw, "aws-train"), None, NOW).to_dict()


def test_a_move_to_spot_labels_the_budget_hour_for_what_it_is_on_a_stack_without_burst_pools() -> None:
    # h100 (4 × p5.48xlarge) to spot: at max 4 × ($32.311417 mean spot − $55.04) = −$90.91/h; the budget judges
    # spot at on demand (AWS bills up to the maximum price), so its hour does not move: ±$0/h. Before, that line
    # read "cost at max with burst windows open: ±$0/h" on a stack with no burst pool.
    diff = diff_plans(PLAN, PLAN, base_cost=_aws_train(), head_cost=_aws_train({"type": "spot", "checkpointing": True}))
    assert diff.cost_total is not None and diff.cost_total.delta("max") == pytest.approx(4 * (32.31141667 - 55.04))
    assert not diff.bursts and budget_hour_delta_text(diff) == "±$0/h"
    out = _diff_text(diff)
    assert "cost at max: " in out and "(−$90.91/h (−$66,367/month))" in out
    assert "the hour the budget judges (max size, spot at on demand, burst pools at their max): ±$0/h" in out
    assert "burst windows open" not in out


def test_the_budget_hour_line_is_left_out_where_it_says_what_the_max_line_says() -> None:
    # l40s desired 2 → 3: max and the budget hour are both unchanged, and aws-train has no burst pool.
    diff = diff_plans(PLAN, PLAN, base_cost=_aws_train(), head_cost=_aws_train(desired=3))
    assert budget_hour_delta_text(diff) is None
    assert "the hour the budget judges" not in _diff_text(diff) + diff_markdown(diff)


def test_the_budget_hour_line_stays_on_a_stack_with_burst_pools() -> None:
    # hybrid, burst-h100 unchanged: the max line leaves the idle burst pool at $0/h; the budget hour counts it at
    # max, so its line is shown even when it does not move.
    diff = diff_plans(PLAN, PLAN, base_cost=_hybrid().to_dict(), head_cost=_hybrid().to_dict())
    assert diff.bursts and budget_hour_delta_text(diff) == "±$0/h"
