"""The findings collection: one order (mandatory first, then pack, rule, resource) and one mandatory count."""

from __future__ import annotations

from gpufleet.review.findings import Finding, Findings


def f(pack: str, rule: str, enforcement: str, resource: str | None = None) -> Finding:
    return Finding(pack, rule, enforcement, f"{rule} broken", resource)  # type: ignore[arg-type]


def test_findings_are_ordered_mandatory_first_then_pack_rule_and_resource() -> None:
    found = Findings(
        [
            f("tenancy", "b", "advisory"),
            f("tenancy", "a", "mandatory", "r2"),
            f("cost-tags", "z", "advisory"),
            f("tenancy", "a", "mandatory", "r1"),
            f("segmentation", "c", "mandatory"),
        ]
    )
    assert [(x.enforcement, x.pack, x.rule, x.resource) for x in found] == [
        ("mandatory", "segmentation", "c", None),
        ("mandatory", "tenancy", "a", "r1"),
        ("mandatory", "tenancy", "a", "r2"),
        ("advisory", "cost-tags", "z", None),
        ("advisory", "tenancy", "b", None),
    ]


def test_mandatory_and_advisory_split_the_findings_and_decide_the_verdict() -> None:
    found = Findings([f("p", "a", "advisory"), f("p", "b", "mandatory"), f("p", "c", "mandatory")])
    assert [x.rule for x in found.mandatory] == ["b", "c"]
    assert [x.rule for x in found.advisory] == ["a"]
    assert not found.passed
    assert Findings([f("p", "a", "advisory")]).passed and Findings().passed


def test_findings_compare_equal_to_the_same_findings_in_a_list() -> None:
    a, b = f("p", "a", "mandatory"), f("p", "b", "advisory")
    assert Findings([b, a]) == [a, b] and Findings([b, a]) == Findings([a, b])
    assert Findings([a]) != [b]
    assert Findings([a, b])[1:] == [b]
