"""The burst budget alert: an AWS Budgets cost budget on the burst tag, priced at $0, a second belt.

- The filter is `TagKeyValue` `user:<key>$<value>` (pulumi-aws aws.budgets.Budget, "cost filter using resource
  tags"); a user-defined tag filters costs only once activated as a cost-allocation tag in the management account
  (https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/activating-tags.html).
- A budget without actions is $0.00 per budget-day (AWS Price List offer AWSBudgets; the first two action-enabled
  budgets are free: https://aws.amazon.com/aws-cost-management/aws-budgets/pricing/).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.engine.plan import Plan
from gpufleet.engine.synth import synth
from gpufleet.review.cost.envelope import estate_cost
from model.conventions import BURST_TAG
from model.load import read_stack
from tests.conftest import ROOT, example_config, write_project
from tests.hybrid.test_capacity import burst_group

BUDGET = "aws:budgets/budget:Budget"
runner = CliRunner()


def test_the_burst_site_has_a_monthly_budget_on_the_burst_tag_that_emails_at_80_and_100_percent(
    example_plans: dict[str, Plan],
) -> None:
    plan = example_plans["hybrid"]
    (budget,) = plan.find(BUDGET)
    cluster = burst_group(plan).inputs["clusterName"]
    b = budget.inputs
    assert (b["budgetType"], b["timeUnit"], b["limitAmount"], b["limitUnit"]) == ("COST", "MONTHLY", "20000.00", "USD")
    assert b["costFilters"] == [{"name": "TagKeyValue", "values": [f"user:gpufleet-burst${cluster}"]}]
    assert [(n["notificationType"], n["threshold"]) for n in b["notifications"]] == [
        ("ACTUAL", 80.0), ("ACTUAL", 100.0), ("FORECASTED", 100.0)
    ]  # fmt: skip
    assert all(n["subscriberEmailAddresses"] == ["ml-platform-oncall@example.com"] for n in b["notifications"])
    assert not [r for s, p in example_plans.items() if s != "hybrid" for r in p.find(BUDGET)]


def test_the_burst_pool_tags_what_it_launches_with_the_tag_the_budget_filters_on(
    example_plans: dict[str, Plan],
) -> None:
    plan = example_plans["hybrid"]
    group = burst_group(plan)
    cluster = group.inputs["clusterName"]
    assert group.inputs["tags"][BURST_TAG] == cluster
    (template,) = [r for r in plan.find("aws:ec2/launchTemplate:LaunchTemplate") if "burst" in r.name]
    specs = {s["resourceType"]: s["tags"] for s in template.inputs["tagSpecifications"]}
    assert specs["instance"][BURST_TAG] == cluster and specs["volume"][BURST_TAG] == cluster
    others = [r for r in plan.find("aws:eks/nodeGroup:NodeGroup") if r is not group]
    assert others and all(BURST_TAG not in r.inputs.get("tags", {}) for r in others)


def test_without_alert_emails_the_budget_tells_nobody_and_preview_says_so(tmp_path: Path) -> None:
    config = example_config("hybrid")
    del config["gpufleet:estate"]["burst"]["alert_emails"]
    project = write_project(tmp_path, config)
    (budget,) = synth(project, "test").find(BUDGET)
    assert budget.inputs.get("notifications", []) == []
    result = runner.invoke(app, ["preview", "-s", "test", "--summary", "-C", str(project)])
    (line,) = [x for x in result.stdout.splitlines() if x.startswith("Burst budget alert:")]
    assert "tells nobody (set burst.alert_emails)" in line and "cost-allocation tag in the payer account" in line


def test_the_budget_is_priced_at_zero_dollars_in_the_burst_sites_bill() -> None:
    cost = estate_cost(read_stack(ROOT, "hybrid").estate())
    (line,) = [ln for ln in cost.bill if ln.item == "AWS Budgets (burst alert)"]
    assert line.site == "cloud" and line.status == "priced" and line.hourly is not None
    assert (line.hourly.min, line.hourly.max) == (0.0, 0.0)
    assert line.price is not None and "AWSBudgets" in line.price.source
    assert not [ln for ln in estate_cost(read_stack(ROOT, "aws-train").estate()).bill if "Budgets" in ln.item]


def test_an_alert_email_that_is_not_an_address_is_bad_input(tmp_path: Path) -> None:
    config: dict[str, Any] = example_config("hybrid")
    config["gpufleet:estate"]["burst"]["alert_emails"] = ["oncall"]
    project = write_project(tmp_path, config)
    result = runner.invoke(app, ["preview", "-s", "test", "-C", str(project)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "burst.alert_emails" in result.stderr and "'oncall' is not an email address" in result.stderr
