"""Every region priced or refused, and unknown never $0: the us-west-2 example, copies of aws-train in eu-west-1 and
us-east-2, the stack's own prices (instances and services), and how totals, deltas and the budget read when
something has no price (cost text / Markdown / JSON, the preview and diff comments, `check`).

The region list is botocore's endpoints data (botocore/data/endpoints.json, partition aws, at the installed
botocore; tests/catalog/test_prices.py ties the catalog file to it); the us-west-2 GPU prices are the dated
per-region table in model/catalog/aws_prices.json (its `sources` say where each region comes from).
"""

from __future__ import annotations

import datetime as dt
import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from gpufleet.engine.plan import Plan
from gpufleet.engine.synth import synth
from gpufleet.render.cost import budget_line, cost_json, cost_markdown, cost_summary, cost_text
from gpufleet.render.diff import delta_text
from gpufleet.review.cost.envelope import EstateCost, estate_cost
from gpufleet.review.diff.plans import CostLine, PlanDiff, diff_plans
from model import catalog
from model.load import ESTATE_KEY, SpecError, parse_estate
from tests.cli.badinput import STACK, assert_bad_input, invoke, snapshot, stack_project
from tests.conftest import ROOT, example_config, example_estate
from tests.review.estates import NOW

WEST = "aws-train-west"


def _text(cost: EstateCost) -> str:
    buf = io.StringIO()
    cost_text(cost, Console(file=buf, width=200, color_system=None))
    return buf.getvalue()


def _west() -> EstateCost:
    return estate_cost(parse_estate(example_estate(WEST), WEST), None, NOW)


def _unpriced_onprem() -> dict[str, Any]:
    """The onprem example with no OnPremCost anywhere: nothing priced, its budget of $100/h kept."""
    raw = example_estate("onprem")
    for site in raw["sites"]:
        site.pop("cost", None)
        for pool in site["node_pools"]:
            pool.pop("cost", None)
    return raw


def _nowhere() -> EstateCost:
    return estate_cost(parse_estate(_unpriced_onprem(), "test"), None, NOW)


# eu-west-1 offers no p5 or g6e in any AZ (the catalog's offerings by AZ ID), so its copy runs types it offers.
OFFERED_INSTEAD = {"eu-west-1": {"h100": "p4d.24xlarge", "l40s": "g5.12xlarge", "agents-l40s": "g5.xlarge"}}


def _moved(region: str, prices: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """aws-train moved to `region` (its AZs a, b and c), on types the region offers, with `prices` on its site."""
    raw = example_estate("aws-train")
    site = raw["sites"][0]
    site["region"], site["availability_zones"] = region, [f"{region}{z}" for z in "abc"]
    for pool in site["node_pools"]:
        pool["instance_type"] = OFFERED_INSTEAD.get(region, {}).get(pool["name"], pool["instance_type"])
    site["fabrics"][0]["availability_zone"] = f"{region}a"
    if prices is not None:
        site["prices"] = prices
    return raw


# -- regions ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("region", "hint"), [("us-west-9", "did you mean us-west-2"), ("foo-bar-9", "known: af-south-1")]
)
def test_an_aws_site_in_an_unknown_region_is_refused_naming_the_field(region: str, hint: str) -> None:
    raw = example_estate("aws-train")
    raw["sites"][0]["region"] = region
    raw["sites"][0]["availability_zones"] = [f"{region}a", f"{region}b"]
    raw["sites"][0]["fabrics"][0]["availability_zone"] = f"{region}a"
    with pytest.raises(SpecError) as e:
        parse_estate(raw, "test")
    assert f"sites[0].region: {region} is not an AWS commercial region; {hint}" in str(e.value)


def test_a_stack_in_a_made_up_region_exits_2_with_one_line_and_writes_nothing(tmp_path: Path) -> None:
    config = example_config("aws-train")
    config["aws:region"] = "foo-bar-9"
    site = config[ESTATE_KEY]["sites"][0]
    site["region"], site["availability_zones"] = "foo-bar-9", ["foo-bar-9a", "foo-bar-9b"]
    site["fabrics"][0]["availability_zone"] = "foo-bar-9a"
    project = stack_project(tmp_path, config)
    before = snapshot(project)
    answer = invoke(["cost", "-s", STACK], project)
    assert_bad_input(answer, f"Pulumi.{STACK}.yaml", "sites[0].region: foo-bar-9 is not an AWS commercial region")
    assert len(answer.stderr.strip().splitlines()) == 1
    assert snapshot(project) == before


def test_catalog_show_prices_us_west_2_and_refuses_a_made_up_region() -> None:
    shown = invoke(["catalog", "show", "-r", "us-west-2"])
    assert shown.code == 0 and "55.04" in shown.stdout  # p5.48xlarge in us-west-2, not '-'
    assert "2026-01-21" in shown.stdout  # the region's date (and source) under the table
    nowhere = invoke(["catalog", "show", "-r", "af-south-1"])
    assert nowhere.code == 0 and "holds no af-south-1 prices" in nowhere.stdout
    refused = invoke(["catalog", "show", "-r", "foo-bar-9"])
    assert_bad_input(refused, "--region: foo-bar-9 is not an AWS commercial region")


def test_init_refuses_a_made_up_region_and_writes_no_stack_file(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    answer = invoke(["init", "aws", "--gpu", "H100-80GB", "--region", "us-wets-2", "-C", str(tmp_path)])
    assert_bad_input(answer, "--region: us-wets-2 is not an AWS commercial region; did you mean us-west-2")
    assert not (tmp_path / "stacks").exists()


def test_every_priced_region_is_a_known_region_with_a_dated_source() -> None:
    table = catalog.price_table()
    assert set(table["regions"]) <= set(catalog.aws_regions())
    assert set(table["sources"]) == set(table["regions"])
    for region, source in table["sources"].items():
        assert dt.date.fromisoformat(source["date"]) and len(source["source"]) > 40, region
    for section in ("storage", "services", "cpu_instances"):
        regions = {r for r in table[section] if not r.startswith("_")} - {catalog.ALL_REGIONS}
        assert regions <= set(catalog.aws_regions()), section


@pytest.mark.parametrize("region", sorted(catalog.price_table()["regions"]))
def test_every_region_the_catalog_prices_instances_in_has_the_region_independent_prices(region: str) -> None:
    # EKS standard support and public IPv4 are one published figure for every region (their `all-regions` sources)
    for key, usd in (("eks-cluster", 0.10), ("public-ipv4", 0.005)):
        found = catalog.service_price(key, region)
        assert found is not None and found.usd == usd and found.region == region, key
        assert dt.date.fromisoformat(found.date) and len(found.source) > 40


# -- the us-west-2 example -------------------------------------------------------------------------------------


def test_the_us_west_2_example_prices_every_gpu_pool_from_the_regions_dated_table() -> None:
    cost = _west()
    assert cost.pools and all(p.priced for p in cost.pools)
    for p in cost.pools:
        assert p.price is not None and p.price.source.endswith("us-west-2")
        assert dt.date.fromisoformat(p.price.date) == dt.date(2026, 1, 21)
    h100 = next(p for p in cost.pools if p.pool == "h100")
    assert h100.price is not None and h100.price.usd == 55.04 and h100.hourly.at("max") == pytest.approx(4 * 55.04)


def test_the_us_west_2_example_never_shows_zero_totals_and_names_what_it_leaves_out() -> None:
    cost = _west()
    total = cost.total()
    assert total.no_price == () and not total.complete  # only the usage-billed lines are left out, by name
    assert all("usage-based" in item for item in total.unpriced)
    text = _text(cost)
    estate = next(line for line in text.splitlines() if line.startswith("Estate:"))
    assert "$0.00" not in estate and "≥ $291.97" in estate and f"(+ {len(total.unpriced)} unpriced)" in estate
    md = cost_markdown(cost)
    # desired includes 3 KMS keys (site key, FSx, EFS tiers) × $1 / 730 h = $0.0041/h: $133.7110 + 0.0041 = $133.7151
    assert "| $/hour | ≥ $11.19 | ≥ $133.72 | ≥ $291.97 |" in md and "**≥ $291.97**" in md
    doc = json.loads(cost_json(cost))
    assert doc["total"]["complete"] is False and doc["total"]["no_price"] == []


def test_with_nothing_priced_every_total_is_unknown_not_zero() -> None:
    cost = _nowhere()
    assert cost.total().hourly.at("max") is None
    summary = "\n".join(cost_summary(cost))
    assert "| $/hour | unknown | unknown | unknown |" in summary and "$0.00" not in summary
    assert "unknown" in next(line for line in _text(cost).splitlines() if line.startswith("Estate:"))
    doc = json.loads(cost_json(cost))
    assert doc["total"]["hourly"] == {"min": None, "desired": None, "max": None}
    assert all(t["hourly"]["max"] is None for t in doc["tenants"].values())


# -- copies of aws-train in eu-west-1 and us-east-2 -------------------------------------------------------------

# What the catalog cannot price in each region, where the stack asks for it (sites[0]. + path): the GPU types its
# sources do not list there, and the storage and services no dated source was found for. Lines billed on usage
# (S3 and EFS GB stored, data transfer out) are not refused: without a usage profile they are outside the totals.
REFUSED = {
    "eu-west-1": {
        "region": "ebs-gp3",
        "storage[0]": "fsx-lustre-persistent-2-1000",
    },
    "us-east-2": {
        "region": "ebs-gp3",
        "storage[0]": "fsx-lustre-persistent-2-1000",
    },
}
USAGE_UNPRICED = ("s3-standard", "efs-standard", "data-transfer-out")  # in both regions


@pytest.mark.parametrize("region", sorted(REFUSED))
def test_a_copy_of_aws_train_is_refused_for_each_line_its_region_cannot_price(region: str) -> None:
    with pytest.raises(SpecError) as e:
        parse_estate(_moved(region), "Pulumi.copy.yaml")
    lines = str(e.value).splitlines()
    for path, key in REFUSED[region].items():
        (line,) = [ln for ln in lines if f"sites[0].{path}: " in ln and f"({key})" in ln]
        assert line.startswith("Pulumi.copy.yaml: ") and f"has no {region} price" in line
        assert "to this site's `prices`" in line
        assert ("catalog refresh --prices -r " + region + " --from FILE" in line) == ("fsx-lustre" not in key)
    assert len(lines) == len(REFUSED[region])
    assert not any(f"({key})" in ln for ln in lines for key in USAGE_UNPRICED)


def _priced_copy(region: str) -> list[dict[str, Any]]:
    """A `prices` entry for every line REFUSED names in `region`, and data transfer out (stack quotes, dated)."""
    quote = {"date": "2026-11-01", "source": "AWS quote Q-2026-11"}
    entries: list[dict[str, Any]] = []
    for key in [*REFUSED[region].values(), *USAGE_UNPRICED]:
        if "." in key:
            entries.append({"instance_type": key, "usd_per_hour": 50.0, **quote})
        else:
            entries.append({"service": key, "usd": 0.1, **quote})
    return entries


@pytest.mark.parametrize("region", sorted(REFUSED))
def test_a_copy_of_aws_train_with_its_own_prices_prices_every_line_each_with_its_date_and_source(region: str) -> None:
    cost = estate_cost(parse_estate(_moved(region, _priced_copy(region)), "copy"), None, NOW)
    assert cost.total().no_price == ()
    assert all(p.priced for p in cost.pools) and all(t.status != "unpriced" for t in cost.storage)
    for line in cost.bill:
        assert line.price is not None and line.price.source.endswith(region), line.item
    stack_priced = [ln for ln in cost.bill if "sites.use1.prices (AWS quote" in (ln.price.source if ln.price else "")]
    assert {ln.key for ln in stack_priced} == {"ebs-gp3", "data-transfer-out"}
    (lustre,) = [t for t in cost.storage if t.tier == "lustre"]
    assert lustre.monthly_usd == pytest.approx(24000 * 0.1) and lustre.price and "AWS quote" in lustre.price.source
    nat = next(ln for ln in cost.bill if ln.item == "NAT gateways")  # the catalog's own figure for the region
    assert nat.price is not None and nat.price.usd == {"eu-west-1": 0.048, "us-east-2": 0.045}[region]


def test_a_refused_copy_exits_2_naming_the_stack_file_and_writes_nothing(tmp_path: Path) -> None:
    config = example_config("aws-train")
    config["aws:region"] = "eu-west-1"
    config[ESTATE_KEY] = _moved("eu-west-1")
    project = stack_project(tmp_path, config)
    before = snapshot(project)
    answer = invoke(["cost", "-s", STACK], project)
    assert_bad_input(answer, f"Pulumi.{STACK}.yaml", "sites[0].storage[0]: tier lustre (fsx-lustre-persistent-2-1000)")
    assert "has no eu-west-1 price" in answer.stderr
    assert snapshot(project) == before


def test_a_missing_price_never_stops_the_program_but_every_review_command_refuses_it(tmp_path: Path) -> None:
    """The Pulumi program builds an unpriced estate (`pulumi up` of infrastructure never waits on price data);
    gpufleet's review commands refuse it, so no review shows a cost it cannot know."""
    config = example_config("aws-train")
    config["aws:region"] = "eu-west-1"
    config[ESTATE_KEY] = _moved("eu-west-1")
    project = stack_project(tmp_path, config)
    plan = synth(project, STACK)
    assert plan.find("aws:eks/cluster:Cluster") and plan.find("aws:eks/nodeGroup:NodeGroup")
    for command in ("validate", "preview", "check"):
        answer = invoke([command, "-s", STACK], project)
        assert answer.code == 2 and "has no eu-west-1 price" in answer.stderr, (command, answer.stderr[-500:])


@pytest.mark.parametrize(
    ("prices", "path", "message"),
    [
        (
            [{"service": "ebs-gp3", "usd": 0, "date": "2026-10-01", "source": "quote"}],
            "sites[0].prices[0].usd",
            "greater than 0",
        ),
        (
            [{"service": "ebs-gp4", "usd": 0.1, "date": "2026-10-01", "source": "quote"}],
            "sites[0].prices[0].service",
            "'ebs-gp3'",
        ),
        (
            [{"service": "fsx-lustre-persistent-2-125", "usd": 0.1, "date": "2026-10-01", "source": "quote"}],
            "sites[0].prices[0].service",
            "nothing on this site bills fsx-lustre-persistent-2-125",
        ),
        (
            [{"service": "ebs-gp3", "usd": 0.1, "date": "2026-10-01", "source": "quote"}] * 2,
            "sites[0].prices[1].service",
            "ebs-gp3 is priced twice",
        ),
        (
            [{"usd": 0.1, "date": "2026-10-01", "source": "quote"}],
            "sites[0].prices[0]",
            "a price names `instance_type`",
        ),
    ],
)
def test_a_bad_service_price_is_refused_naming_its_field(prices: list[dict[str, Any]], path: str, message: str) -> None:
    with pytest.raises(SpecError) as e:
        parse_estate(_with_prices(prices), WEST)
    (line,) = [ln for ln in str(e.value).splitlines() if f"{path}: " in ln or str(e.value).endswith(path)]
    assert message in line


# The us-west-2 bill as `gpufleet cost -s aws-train-west -f json` writes it: every line a figure with its date and
# source. Before the us-west-2 `services` entries (EKS, public IPv4, gp3) these lines read "unpriced".
BILLED_PER_HOUR = ("EKS control plane", "NAT gateways", "NAT public IPv4 addresses", "system node pool")


def test_the_us_west_2_example_prices_its_whole_bill_each_figure_with_its_date_and_source() -> None:
    doc = json.loads(cost_json(_west()))
    bill = {line["item"]: line for line in doc["bill"]}
    for item in (*BILLED_PER_HOUR, "EBS root volumes"):
        line = bill[item]
        assert line["status"] == "priced" and line["hourly"]["max"] is not None, item
        price = line["price"]
        assert price["usd"] > 0 and dt.date.fromisoformat(price["date"]) and price["source"].endswith("us-west-2")
    assert bill["EKS control plane"]["hourly"]["max"] == pytest.approx(0.10)
    assert bill["NAT public IPv4 addresses"]["hourly"]["max"] == pytest.approx(3 * 0.005)
    assert bill["EBS root volumes"]["hourly"]["max"] == pytest.approx(3200 * 0.08 / 730, abs=1e-4)
    for item in ("NAT data processing", "data transfer out"):  # per GB: priced once a usage profile gives GB
        assert bill[item]["status"] == "usage-based" and bill[item]["price"]["usd"] > 0, item
    storage = {t["tier"]: t for t in doc["storage"]}
    for tier in ("objects", "home"):
        assert storage[tier]["status"] == "usage-based" and storage[tier]["price"]["source"], tier
    assert all(p["priced"] and p["price"]["source"] for p in doc["pools"])
    assert doc["total"]["no_price"] == []


def test_the_us_west_2_example_prices_every_tier() -> None:
    assert json.loads(cost_json(_west()))["total"]["no_price"] == []


# -- budget ------------------------------------------------------------------------------------------------------


def test_a_missing_price_makes_the_budget_unchecked_instead_of_within() -> None:
    cost = _nowhere()  # budget 100 $/h; no pool has a price
    budget = next(line for line in _text(cost).splitlines() if line.startswith("Budget:"))
    assert "price missing for pool" in budget and "cannot check the budget of $100.00/h" in budget
    assert "within" not in budget
    md = "\n".join(cost_summary(cost))
    assert "Price missing for pool" in md and "cannot check the budget" in md
    assert "lower scaling.max" not in md
    # A priced part already over the budget is over whatever is missing.
    assert "costs at least $450.00/h, over its budget" in "\n".join(budget_line(400, 450, ["tier lustre"]))


def test_check_writes_the_missing_prices_for_the_budget_rules() -> None:
    from gpufleet.review.check import pack_config, packs

    spec = parse_estate(_unpriced_onprem(), "onprem")
    (pack,) = [p for p in packs() if any(r.name == "budget-priced" for r in p.policies)]
    entry = pack_config(spec, pack)["budget-priced"]
    assert entry["unpricedItems"] and all(i.startswith("pool ") for i in entry["unpricedItems"])
    assert entry["budgetUsdPerHour"] == 100 and entry["enforcementLevel"] == "mandatory"


def test_an_unpriced_estate_with_a_budget_fails_check_naming_what_is_unpriced(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, example_plans: dict[str, Plan]
) -> None:
    from typer.testing import CliRunner

    from gpufleet.cli.app import app
    from gpufleet.review import review

    monkeypatch.setattr(review, "synth_stack", lambda project, stack, stack_file, **_: example_plans["onprem"])
    config = example_config("onprem")
    config[ESTATE_KEY] = _unpriced_onprem()
    project = stack_project(tmp_path, config)
    result = CliRunner().invoke(app, ["check", "--stack", STACK, "--project", str(project), "--format", "json"])
    assert result.exit_code == 1, result.output
    doc = json.loads(result.output)
    (budget,) = [f for f in doc["packs"]["cost-tags"]["mandatory"] if f["rule"] == "budget-priced"]
    assert "price missing for pool" in budget["message"] and "cannot check the budget of $100.00/h" in budget["message"]


# -- diff --------------------------------------------------------------------------------------------------------


def _diff(no_price: list[str]) -> PlanDiff:
    from gpufleet.engine.plan import Plan

    line = CostLine("total", {"desired": 100.0, "max": 200.0}, {"desired": 150.0, "max": 260.0})
    return PlanDiff(
        "p", "s", "main", "head", [], [], [], [], cost_total=line, cost_no_price=no_price,
        cost_complete=(True, not no_price), plan=Plan("p", "s", []),
    )  # fmt: skip


def test_a_cost_delta_with_a_missing_price_is_unknown_not_a_number() -> None:
    assert delta_text(_diff([]), "max") == "+$60.00/h (+$43,800/month)"
    assert delta_text(_diff(["pool h100"]), "max") == "unknown (1 unpriced)"


def test_a_pool_that_loses_its_price_has_an_unknown_change_not_minus_its_old_cost() -> None:
    def doc(priced: bool, at_max: float = 220.16) -> dict[str, Any]:
        hourly = {"min": 0.0, "desired": 110.08, "max": at_max} if priced else dict.fromkeys(("min", "desired", "max"))
        total = {"hourly": hourly, "monthly": hourly, "unpriced": [], "no_price": [], "complete": True}
        pools = [{"pool": "h100", "priced": priced, "hourly": hourly, "monthly": hourly}]
        return {"total": total, "pools": pools, "budget_hour_usd": at_max}

    plan = Plan("p", "s", [])
    (h100,) = diff_plans(plan, plan, base_cost=doc(True), head_cost=doc(False)).cost_pools
    assert h100.unpriced and h100.delta("max") is None
    (grown,) = diff_plans(plan, plan, base_cost=doc(True), head_cost=doc(True, 330.24)).cost_pools
    assert grown.delta("max") == pytest.approx(110.08)


# -- the stack's own prices -------------------------------------------------------------------------------------


def _with_prices(prices: list[dict[str, Any]]) -> dict[str, Any]:
    raw = example_estate(WEST)
    raw["sites"][0]["prices"] = prices
    return raw


def test_a_stack_price_replaces_the_catalog_rate_and_shows_its_date_and_source() -> None:
    raw = _with_prices(
        [
            {"instance_type": "p5.48xlarge", "usd_per_hour": 40.0, "date": "2026-10-01", "source": "EDP contract"},
            {"instance_type": "m7i.xlarge", "usd_per_hour": 0.2, "date": "2026-10-01", "source": "EDP contract"},
        ]
    )
    cost = estate_cost(parse_estate(raw, WEST), None, NOW)
    h100 = next(p for p in cost.pools if p.pool == "h100")
    assert h100.price is not None and h100.price.usd == 40.0 and h100.price.date == "2026-10-01"
    assert "EDP contract" in h100.price.source and "sites.usw2.prices" in h100.price.source
    assert h100.hourly.at("max") == pytest.approx(4 * 40.0)
    system = next(ln for ln in cost.bill if ln.item == "system node pool")
    assert system.status == "priced" and system.price is not None and "EDP contract" in system.price.source
    assert "system node pool (usw2)" not in cost.total().no_price
    assert "EDP contract" in _text(cost)


@pytest.mark.parametrize(
    ("prices", "path", "message"),
    [
        (
            [{"instance_type": "p4d.24xlarge", "usd_per_hour": 9.0, "date": "2026-10-01", "source": "EDP contract"}],
            "sites[0].prices[0].instance_type",
            "no pool of this site runs p4d.24xlarge",
        ),
        (
            [{"instance_type": "p5.48xlarge", "usd_per_hour": 40.0, "date": "2026-10-01", "source": "EDP"}] * 2,
            "sites[0].prices[1].instance_type",
            "p5.48xlarge is priced twice",
        ),
        (
            [{"instance_type": "p5.48xlarge", "usd_per_hour": 0, "date": "2026-10-01", "source": "EDP"}],
            "sites[0].prices[0].usd_per_hour",
            "greater than 0",
        ),
        (
            [{"instance_type": "p5.48xlarge", "usd_per_hour": 40.0, "date": "last week", "source": "EDP"}],
            "sites[0].prices[0].date",
            "date",
        ),
    ],
)
def test_a_bad_stack_price_is_refused_naming_its_field(prices: list[dict[str, Any]], path: str, message: str) -> None:
    with pytest.raises(SpecError) as e:
        parse_estate(_with_prices(prices), WEST)
    assert path in str(e.value) and message in str(e.value)


# -- unverified FSx prices ---------------------------------------------------------------------------------------


def test_unverified_fsx_tier_prices_are_flagged_in_every_cost_output() -> None:
    cost = estate_cost(parse_estate(example_estate("aws-train"), "aws-train"), None, NOW)
    (fsx,) = [t for t in cost.storage if t.kind == "fsx-lustre"]
    assert fsx.price is not None and fsx.price.verified is False  # 1000 MB/s/TiB: no stored copy confirms it
    assert "(unverified)" in _text(cost) and "not confirmed" in fsx.note
    assert "*(not confirmed from a stored copy)*" in cost_markdown(cost)
    (stored,) = [t for t in json.loads(cost_json(cost))["storage"] if t["kind"] == "fsx-lustre"]
    assert stored["price"]["verified"] is False


def test_a_stack_price_also_prices_sizing_placements_and_the_burst_budget() -> None:
    # One home for a cloud node-hour (model.pricing.site_price): `gpufleet size` ranks a stack pool at
    # the stack's rate (p5.48xlarge at $40.00/h over 8 GPUs = $5.00/GPU-h), and `gpufleet burst` checks a window
    # against the budget at the same rate.
    from fractions import Fraction

    from gpufleet.sizing.placement import stack_placements
    from model import burst, burst_spend
    from model.spec import AwsSite

    raw = _with_prices(
        [{"instance_type": "p5.48xlarge", "usd_per_hour": 40.0, "date": "2026-10-01", "source": "EDP contract"}]
    )
    spec = parse_estate(raw, WEST)
    placements, _ = stack_placements(spec)
    h100 = next(p for p in placements if p.pool == "h100")
    assert h100.usd_per_gpu_hour == Fraction(5) and "EDP contract" in h100.price_basis
    hybrid = example_estate("hybrid")
    cloud = next(s for s in hybrid["sites"] if s["kind"] == "aws")
    burst_type = next(p["instance_type"] for p in cloud["node_pools"] if p.get("burst"))
    cloud["prices"] = [{"instance_type": burst_type, "usd_per_hour": 1.5, "date": "2026-10-01", "source": "EDP"}]
    hspec = parse_estate(hybrid, "hybrid")
    assert isinstance(burst.cloud_site(hspec), AwsSite)
    assert burst_spend.node_hour_price(hspec, burst_type) == 1.5
