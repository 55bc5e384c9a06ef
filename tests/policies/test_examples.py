"""The example stacks pass every mandatory rule; the broken stack fails exactly the rules it was built to break."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.engine.plan import Plan
from gpufleet.review import check
from model.load import ESTATE_KEY, parse_estate
from tests.conftest import EXAMPLES, ROOT, example_estate
from tests.policies.broken_stack import BREAKS, broken_config


@pytest.mark.parametrize("stack", EXAMPLES)
def test_example_stack_passes_every_mandatory_rule(stack: str, example_plans: dict[str, Plan]) -> None:
    spec = check.load_spec(ROOT, stack)
    violations = check.evaluate(example_plans[stack], spec).mandatory
    assert violations == [], "\n".join(f"{f.rule} {f.resource}: {f.message}" for f in violations)


@pytest.mark.parametrize("stack", EXAMPLES)
def test_components_tags_satisfy_cost_tags_without_provider_default_tags(
    stack: str, example_plans: dict[str, Plan]
) -> None:
    plan = Plan.from_dict(example_plans[stack].to_dict())
    for r in plan.resources:
        if r.type == "pulumi:providers:aws":
            r.inputs.pop("defaultTags", None)
    spec = parse_estate(example_estate(stack), stack)
    found = [f for f in check.evaluate(plan, spec) if f.rule in ("required-tags", "tags-propagate")]
    assert found == []
    assert any(r.type.startswith("aws:") for r in plan.resources) or stack == "onprem"


def test_broken_stack_fails_exactly_the_rules_it_breaks(broken: tuple[Plan, Any]) -> None:
    plan, spec = broken
    violated = {f.rule for f in check.evaluate(plan, spec).mandatory}
    assert violated == set(BREAKS)


def test_broken_stack_findings_point_at_the_offending_pools(broken: tuple[Plan, Any]) -> None:
    plan, spec = broken
    found = check.evaluate(plan, spec)
    imds = {str(f.resource).rsplit("::", 1)[1] for f in found if f.rule == "imds-v2-hop-limit"}
    assert imds == {"use1-l40s-lt"}
    allow = {f.resource.rsplit("::", 1)[1] for f in found if f.rule == "gpu-instance-allowlist" and f.resource}
    assert {"use1-l40s-lt", "use1-agents-l40s-lt"} <= allow
    assert not any("h100" in r for r in allow)
    (budget,) = [f for f in found if f.rule == "budget-cap"]
    assert "exceeds the budget cap $50.00" in budget.message


def test_enforcement_override_in_the_stack_downgrades_a_broken_rule(broken: tuple[Plan, Any]) -> None:
    plan, _ = broken
    config = broken_config()
    config[ESTATE_KEY]["policies"]["enforcement"] = {"budget-cap": "advisory", "imds-v2-hop-limit": "disabled"}
    spec = parse_estate(config[ESTATE_KEY], "broken")
    found = check.evaluate(plan, spec)
    assert {f.rule for f in found.mandatory} == set(BREAKS) - {"budget-cap", "imds-v2-hop-limit"}
    assert [f.enforcement for f in found if f.rule == "budget-cap"] == ["advisory"]
    assert not [f for f in found if f.rule == "imds-v2-hop-limit"]
