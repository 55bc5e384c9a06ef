"""Months that can happen: what bursting can cost in an hour at max size, in one window and in a month, the
budget in hours at max size, and the idle cloud site's fixed cost; the estate's monthly max counts the month's
burst ceiling, never 730 h of an open window.

The ceiling follows the burst policy as `gpufleet burst open` enforces it (gpufleet/burst/preflight.py: a window
is priced nodes × hours × node-hour price against what is left of the month's budget) and the window lengths the
schema allows (burst.max_window_hours, burst.grace_minutes)."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from rich.console import Console

from gpufleet.engine.plan import Plan
from gpufleet.render.cost import cost_markdown, cost_text
from gpufleet.render.diff import delta_text, diff_json
from gpufleet.review.cost.envelope import EstateCost, estate_cost
from gpufleet.review.diff.plans import DiffError, PlanDiff, diff_plans
from model import clock
from model.load import parse_estate
from model.spec import BurstWindow, EstateSpec
from tests.conftest import example_estate
from tests.review.estates import NOW

P5 = 55.04  # p5.48xlarge us-east-1 on-demand $/h (catalog)
# The hybrid example: burst-h100 scales 0-4 × p5.48xlarge; burst: budget $20,000/month, 48 h windows, 30 min grace.
AT_MAX = 4 * P5  # $220.16/h
# The burst nodes' gp3 root volumes at max: 4 × 200 GB × $0.08/GB-month ÷ 730 h = $0.087671/h.
BURST_ROOTS = 4 * 200 * 0.08 / 730
# The cloud site's own bill with no burst node: EKS $0.10 + 2 NAT × $0.045 + 2 IPv4 × $0.005 + 2 system nodes ×
# m7i.xlarge $0.2016 + 2 × 100 GB gp3 roots × $0.08/GB-month ÷ 730 h + 2 KMS keys (the site's, the S3 tier's) ×
# $1/key-month ÷ 730 h + the Site-to-Site VPN connection $0.05/h.
IDLE_SITE = 0.10 + 2 * 0.045 + 2 * 0.005 + 2 * 0.2016 + 200 * 0.08 / 730 + 2 / 730 + 0.05
# = 0.625118 + 0.002740 + 0.05 = 0.677858 -> $0.68/h, $495/month


def hybrid(**burst: object) -> EstateSpec:
    raw = example_estate("hybrid")
    raw["burst"].update(burst)
    return parse_estate(raw, "hybrid")


def text(cost: EstateCost) -> str:
    console = Console(record=True, width=300)
    cost_text(cost, console)
    return console.export_text()


def test_the_budget_becomes_hours_at_max_size_one_window_and_a_month() -> None:
    b = estate_cost(hybrid(), None, NOW).burst
    assert b is not None
    assert b.usd_per_hour_at_max == pytest.approx(AT_MAX)  # 4 × $55.04
    assert b.budget_hours_at_max == pytest.approx(20_000 / AT_MAX)  # = 90.84 h
    # 48 h + 30 min grace + 16 min stop lag (model.burst_spend.stopped_by: the budget check and the ledger count them)
    assert b.longest_window_usd == pytest.approx(AT_MAX * (48 + 46 / 60))  # $10,736.47
    assert b.after_expiry_usd == pytest.approx(AT_MAX * 46 / 60)  # $168.79
    # 730 h at max size would be $160,716.80; the budget caps the month at $20,000
    assert b.month_ceiling_usd == 20_000


def test_a_month_ceiling_is_730_hours_at_max_when_the_budget_is_larger() -> None:
    b = estate_cost(hybrid(budget_usd=200_000), None, NOW).burst
    assert b is not None and b.month_ceiling_usd == pytest.approx(AT_MAX * 730)  # $160,716.80 < $200,000


def test_the_estate_monthly_max_includes_the_burst_ceiling_while_idle() -> None:
    cost = estate_cost(hybrid(), None, NOW)
    hourly = cost.total().hourly
    monthly = cost.monthly()
    # idle: the burst pool is $0/h at every size, so min and desired are 730 h of the hourly figures and max adds
    # the month's burst ceiling ($20,000). Before, max was 730 × $47.35 = $34,567: no burst at all.
    assert monthly["min"] == pytest.approx((hourly.at("min") or 0) * 730)
    assert monthly["max"] == pytest.approx((hourly.at("max") or 0) * 730 + 20_000)
    assert json.loads(json.dumps(cost.to_dict()))["total"]["monthly"]["max"] == pytest.approx(monthly["max"], abs=1e-3)


def test_an_open_window_is_not_priced_as_730_hours() -> None:
    spec = hybrid()
    start = NOW - dt.timedelta(hours=1)
    window = BurstWindow(pool="burst-h100", nodes=2, instance_type="p5.48xlarge", availability_zone="us-east-1a",
                         start=start, expires=start + dt.timedelta(hours=8))  # fmt: skip
    cost = estate_cost(spec, window, NOW)
    pool = next(p for p in cost.pools if p.pool == "burst-h100")
    # The window: 2 × $55.04 × (8 h + 0.5 h grace + 16 min stop lag) = $965.03 at most, as booked. Before, the month showed 730 × its $110.08/h
    # = $80,358 for the pool; now the pool's month is its ceiling and the estate's max adds $20,000, not $80,358.
    assert any("may cost at most $965.03" in n for n in pool.notes)
    rest = (cost.total().hourly.at("max") or 0) - 2 * P5
    assert cost.monthly()["max"] == pytest.approx(rest * 730 + 20_000)
    assert cost.pool_month_ceiling(pool) == 20_000  # min($20,000, 4 × $55.04 × 730 h)


def test_cost_shows_budget_hours_window_and_month_ceilings_and_the_idle_site() -> None:
    cost = estate_cost(hybrid(), None, NOW)
    out = text(cost)
    assert "burst-h100: 0-4 × p5.48xlarge: $220.16/h at max size; the budget of $20,000/month buys 90.8 h" in out
    assert (
        "one window: at most 48 h + 46 min after expiry until stopped (30 min grace, the AWS stop and its lag) at max size = $10,736.47"
        in out
    )
    assert "a month: at most $20,000" in out
    assert f"idle (no window): site cloud still costs $0.68/h = ${IDLE_SITE * 730:,.0f}/month" in out
    assert cost.site_total("cloud").hourly.at("min") == pytest.approx(IDLE_SITE)  # the one computation: the bill
    md = cost_markdown(cost)
    # 730 × $46.979045 = $34,294.70, and 730 × $47.404163 + $20,000 = $54,605.04 (each $0.052740/h above the bill
    # before KMS keys and the VPN were priced; "≥": NAT data processing and data transfer out are billed on usage)
    assert "| $/month | ≥ $34,295 | ≥ $34,295 | ≥ $54,605 |" in md


def test_an_estate_without_bursting_has_no_burst_ceiling() -> None:
    cost = estate_cost(parse_estate(example_estate("aws-train"), "aws-train"), None, NOW)
    assert cost.burst is None
    assert cost.monthly()["max"] == pytest.approx((cost.total().hourly.at("max") or 0) * 730)


def test_an_autoscaled_pool_states_its_expected_month_and_its_ceiling() -> None:
    cost = estate_cost(parse_estate(example_estate("aws-train"), "aws-train"), None, NOW)
    l40s = next(p for p in cost.pools if p.pool == "l40s")
    # g6e.12xlarge $10.49264/h, scaling 1/2/6: 2 × 10.49264 × 730 = $15,319; 6 × 10.49264 × 730 = $45,958.
    assert (
        "autoscaled 1-6 nodes: a month costs about $15,319 at desired size (2 nodes) and at most $45,958 if all "
        "6 run 730 h (the ceiling)"
    ) in l40s.notes


def test_the_window_in_the_stack_is_shown_with_its_cost_before_during_and_after() -> None:
    spec = hybrid()
    start = NOW + dt.timedelta(hours=2)
    window = BurstWindow(pool="burst-h100", nodes=2, instance_type="p5.48xlarge", availability_zone="us-east-1a",
                         start=start, expires=start + dt.timedelta(hours=8))  # fmt: skip
    # 2 nodes × $55.04 × (8 h + 0.5 h grace + 16 min stop lag) = $965.03, whatever the moment (the booking)
    states = {}
    for hours in (0, 3, 10.25, 11):  # before the start, open, in the grace, after it
        b = estate_cost(spec, window, NOW + dt.timedelta(hours=hours)).burst
        assert b is not None and b.window is not None
        assert b.window.usd_at_most == pytest.approx(round(2 * P5 * (8.5 + 16 / 60), 2))
        states[hours] = b.window.state
    assert states == {0: "scheduled", 3: "open", 10.25: "draining", 11: "over"}
    out = text(estate_cost(spec, window, NOW))
    assert (
        "the window in the stack (scheduled): 2 × p5.48xlarge from 2026-12-01 14:00 to 2026-12-01 22:00 UTC, "
        "grace until 22:30: at most $965.03"
    ) in out


def _cost_diff(base: EstateSpec, head: EstateSpec) -> PlanDiff:
    plan = Plan(project="gpufleet", stack="hybrid", resources=[])
    return diff_plans(
        plan,
        plan,
        base_cost=json.loads(json.dumps(estate_cost(base, None, NOW).to_dict())),
        head_cost=json.loads(json.dumps(estate_cost(head, None, NOW).to_dict())),
    )


def test_diff_months_are_each_sides_month_not_730_hours_of_the_hourly_change() -> None:
    # Raising the burst budget moves the month's ceiling ($20,000 -> $30,000) and nothing per hour (the burst pool
    # idles at $0/h): 730 h of the hourly change would say +$0/month.
    base = hybrid()
    d = _cost_diff(base, hybrid(budget_usd=30_000))
    assert d.cost_total is not None
    assert d.cost_total.delta("max") == pytest.approx(0.0)
    assert d.cost_total.month_delta("max") == pytest.approx(10_000)
    assert d.cost_total.month_delta("desired") == pytest.approx(0.0)
    assert delta_text(d, "max") == "±$0/h (+$10,000/month)"
    assert json.loads(diff_json(d))["cost"]["total"]["delta_month"]["max"] == pytest.approx(10_000)
    # An on-prem change is billed every hour of the month: its month is 730 h of its hourly change.
    raw = example_estate("hybrid")
    raw["sites"][0]["cost"]["usd_per_kwh"] = 0.15
    d = _cost_diff(base, parse_estate(raw, "hybrid"))
    assert d.cost_total is not None
    hourly = d.cost_total.delta("max")
    assert hourly == pytest.approx(4 * 11 * 0.04)  # 4 servers × 11 kW × $0.04/kWh more
    assert d.cost_total.month_delta("max") == pytest.approx(hourly * 730, abs=0.01)


def test_diff_against_a_review_without_monthly_figures_is_refused_naming_the_base() -> None:
    base = json.loads(json.dumps(estate_cost(hybrid(), None, NOW).to_dict()))
    head = json.loads(json.dumps(estate_cost(hybrid(budget_usd=30_000), None, NOW).to_dict()))
    del base["total"]["monthly"]  # a revision too old to review: 730 h of the hourly change would say +$0/month
    plan = Plan(project="gpufleet", stack="hybrid", resources=[])
    with pytest.raises(DiffError, match=r"^main \(abc1234\) is too old to review: its cost has no field 'monthly'"):
        diff_plans(plan, plan, base_label="main (abc1234)", base_cost=base, head_cost=head)


def test_the_hourly_budget_judges_burst_pools_at_their_max_size_even_while_idle() -> None:
    # Idle, the burst pool is $0/h in the envelope; a window opened at max adds 4 × p5.48xlarge. A budget of
    # $100/h holds the idle estate ($47.35/h at max) but not that hour: before, budget-cap passed it.
    raw = example_estate("hybrid")
    raw["policies"]["budget_usd_per_hour"] = 100
    spec = parse_estate(raw, "hybrid")
    with clock.frozen(NOW):  # the pack's config prices the estate at the clock's day, as the envelope does at NOW
        return _hourly_budget_at_max(spec)


def _hourly_budget_at_max(spec: EstateSpec) -> None:
    cost = estate_cost(spec, None, NOW)
    idle_max = cost.total().hourly.at("max")
    assert idle_max is not None and idle_max < 100
    assert cost.budget_hour() == pytest.approx(idle_max + AT_MAX + BURST_ROOTS)  # roots of the nodes a window adds
    assert "over the budget of $100.00/h" in text(cost) and "(burst pools at their max size)" in text(cost)
    assert cost.to_dict()["budget_hour_usd"] == pytest.approx(idle_max + AT_MAX + BURST_ROOTS, abs=1e-4)
    from gpufleet.review.check import pack_config, packs

    cost_pack = next(p for p in packs() if "cost" in p.name)
    assert pack_config(spec, cost_pack)["budget-cap"]["maxUsdPerHour"] == pytest.approx(
        idle_max + AT_MAX + BURST_ROOTS, abs=1e-4
    )


def test_pools_sites_and_tenants_carry_the_burst_month_ceiling_and_add_up_to_the_total_at_max() -> None:
    # Before: the estate's max month counted the $20,000 ceiling (at NOW 730 × $47.404163 + $20,000 = $54,605.04),
    # but burst-h100's month at max was $0, the sites summed to $34,605.04 and tenant research left it out. Now
    # burst-h100 carries it at max (nothing at min and desired: it idles at zero), and so do its site cloud and the
    # one bursting tenant (research). onprem: 4 servers × $11.575297/h × 730 h = $33,799.87; cloud: 730 ×
    # $1.102974 + $20,000 = $20,805.17; research: 24/32 of onprem = $25,349.90 + $20,000 = $45,349.90.
    cost = estate_cost(hybrid(), None, NOW)
    (burst,) = [p for p in cost.pools if p.burst]
    assert [burst.monthly(lv) for lv in ("min", "desired", "max")] == [0.0, 0.0, 20_000]
    total = cost.monthly()["max"] or 0.0
    pools = sum(p.monthly("max") or 0.0 for p in cost.pools)
    storage = sum(t.monthly_usd or 0.0 for t in cost.storage if t.status == "priced")
    bill = sum(ln.hourly.monthly("max") or 0.0 for ln in cost.bill if ln.hourly is not None)
    assert pools + storage + bill == pytest.approx(total)
    assert sum(cost.site_total(s).hourly.monthly("max") or 0.0 for s in cost.sites()) == pytest.approx(total)
    tenants = cost.tenants()
    assert sum(t.hourly.monthly("max") or 0.0 for t in tenants.values()) == pytest.approx(pools)
    assert tenants["research"].hourly.monthly("max") == pytest.approx(0.75 * 4 * 11.575296803652968 * 730 + 20_000)
    doc = json.loads(json.dumps(cost.to_dict()))
    assert doc["total"]["monthly"]["max"] == pytest.approx(54_605.0387, abs=1e-3)
    assert doc["sites"]["onprem"]["monthly"]["max"] == pytest.approx(33_799.8667, abs=1e-3)
    assert doc["sites"]["cloud"]["monthly"]["max"] == pytest.approx(20_805.172, abs=1e-3)
    assert doc["tenants"]["research"]["monthly"]["max"] == pytest.approx(45_349.90, abs=1e-2)


def test_the_burst_month_ceiling_is_split_among_the_bursting_tenants_as_burst_spend_is() -> None:
    # Two tenants with `burst: true` and no quota on burst-h100: each is booked half its $20,000 at max.
    raw = example_estate("hybrid")
    for t in raw["tenants"]:
        t["burst"] = True
    cost = estate_cost(parse_estate(raw, "hybrid"), None, NOW)
    shares = [s for s in cost.tenant_shares if s.pool == "burst-h100"]
    assert sorted((s.tenant, s.hourly.monthly("max")) for s in shares) == [("product", 10_000), ("research", 10_000)]
