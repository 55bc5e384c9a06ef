"""The pure plan comparison: property paths, renames with and without alias, absent values, findings new and fixed."""

from __future__ import annotations

from typing import Any

from gpufleet.engine.plan import Plan, PlanResource
from gpufleet.review.diff.plans import MISSING, diff_findings, diff_plans, flatten
from gpufleet.review.findings import Finding
from tests.review.estates import FSX


def res(name: str, inputs: dict[str, Any], type_: str = FSX, protect: bool = False) -> PlanResource:
    return PlanResource(
        key=f"{type_}::{name}", type=type_, name=name, parent=None, custom=True, inputs=inputs, protect=protect
    )


def test_flatten_quotes_keys_with_dots_and_indexes_lists() -> None:
    flat = flatten({"tags": {"kubernetes.io/role": "x", "env": "prod"}, "subnets": ["a", "b"], "empty": {}})
    assert flat == {
        'tags["kubernetes.io/role"]': "x",
        "tags.env": "prod",
        "subnets[0]": "a",
        "subnets[1]": "b",
        "empty": {},
    }


def test_rename_of_different_things_is_not_a_replacement() -> None:
    base = Plan("p", "s", [res("a-lustre", {"storageCapacity": 1200, "tags": {"Name": "a-lustre"}, "x": 1, "y": 2})])
    head = Plan("p", "s", [res("a-hot", {"storageCapacity": 9600, "tags": {"Name": "a-hot"}, "x": 5, "y": 6})])
    d = diff_plans(base, head)
    assert d.replaced == [] and len(d.added) == 1 and len(d.removed) == 1


def test_aliased_rename_is_a_change_not_a_replacement() -> None:
    old = res("a-lustre", {"storageCapacity": 1200})
    new = PlanResource(
        key=f"{FSX}::a-hot", type=FSX, name="a-hot", parent=None, custom=True, inputs={"storageCapacity": 1200},
        aliases=[f"urn:pulumi:s::p::{FSX}::a-lustre"],
    )  # fmt: skip
    d = diff_plans(Plan("p", "s", [old]), Plan("p", "s", [new]))
    assert d.replaced == [] and d.added == [] and d.removed == []
    assert [(c.resource.name, c.renamed_from) for c in d.changed] == [("a-hot", old.key)]


def test_removed_property_shows_as_absent() -> None:
    d = diff_plans(Plan("p", "s", [res("x", {"a": 1, "b": 2})]), Plan("p", "s", [res("x", {"a": 1})]))
    assert [(p.path, p.before, p.after) for p in d.changed[0].changes] == [("b", 2, MISSING)]


def finding(rule: str, resource: str | None = None, message: str = "m", enforcement: str = "mandatory") -> Finding:
    return Finding(pack="p", rule=rule, enforcement=enforcement, message=message, resource=resource)  # type: ignore[arg-type]


def test_findings_new_and_fixed_match_by_rule_and_resource() -> None:
    base = [finding("a", "r1"), finding("b", "r2", message="over by $10"), finding("c")]
    head = [finding("b", "r2", message="over by $20"), finding("c"), finding("d", "r3")]
    new, fixed = diff_findings(base, head)
    assert new == [finding("d", "r3")]  # b persists with a reworded message; c is unchanged
    assert fixed == [finding("a", "r1")]


def test_diff_without_policy_evaluation_says_so() -> None:
    d = diff_plans(None, Plan("p", "s", [res("x", {})]))
    assert d.findings is None and d.base_missing
