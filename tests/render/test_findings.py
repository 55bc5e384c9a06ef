"""Findings are rendered by one function per format, in one order, whichever command shows them."""

from __future__ import annotations

import json
import re

from rich.console import Console

from gpufleet.render.diff import diff_text
from gpufleet.render.findings import findings_json
from gpufleet.render.preview import check_json, check_text, preview_json, preview_markdown, preview_text
from gpufleet.review.findings import Finding, Findings
from model.load import parse_estate
from tests.review.estates import BUDGET, NODE_GROUP, TAGS, changed, review_of, small_diff

EXTRA = [
    Finding("tenancy", "tenant-quota", "mandatory", "quota missing", f"{NODE_GROUP}::use1-h100", "set gpu_quota"),
    Finding("gpu-guardrails", "efa-sg-self-only", "advisory", "open ingress", None),
]
ALL = [TAGS, *EXTRA, BUDGET]  # deliberately out of order


def text(render: object, *args: object) -> str:
    console = Console(record=True, width=300)
    render(*args, console)  # type: ignore[operator]
    return console.export_text()


def rules_in(output: str) -> list[str]:
    return re.findall(r"(cost-tags/budget-at-max-size|cost-tags/required-tags|tenancy/tenant-quota|"
                      r"gpu-guardrails/efa-sg-self-only)", output)  # fmt: skip


def test_preview_check_and_markdown_list_findings_in_the_one_order() -> None:
    r = review_of(parse_estate(changed(), "head"), ALL)
    order = [f"{f.pack}/{f.rule}" for f in Findings(ALL)]
    assert order[:2] == ["cost-tags/budget-at-max-size", "tenancy/tenant-quota"]  # mandatory first
    preview = text(preview_text, r)
    check = text(check_text, r)
    assert rules_in(preview) == rules_in(check) == order
    details = preview_markdown(r).split("Policy findings (4)", 1)[1]
    assert rules_in(details)[: len(order)] == order


def test_preview_and_check_agree_on_the_verdict_line_and_the_json() -> None:
    r = review_of(parse_estate(changed(), "head"), ALL)
    line = "Policy (41 rules in 4 packs): failed — 2 mandatory, 2 advisory"
    assert line in text(preview_text, r) and line in text(check_text, r)
    check_doc = json.loads(check_json(r))
    assert check_doc.pop("first_up") is None  # check's json adds the first-up result beside the findings
    assert check_doc.pop("journeys") is None  # and the canonical journeys (none without the reality checks)
    assert check_doc.pop("destroy") is None  # and the teardown simulation (likewise)
    assert json.loads(preview_json(r))["findings"] == check_doc == findings_json(Findings(ALL))
    doc = json.loads(check_json(r))
    assert (doc["passed"], doc["mandatory"], doc["advisory"]) == (False, 2, 2)


def test_a_passing_check_says_so_with_its_scope() -> None:
    r = review_of(parse_estate(changed(), "head"), [])
    assert "Policy (41 rules in 4 packs): passed — no violations (0 mandatory, 0 advisory)" in text(check_text, r)


def test_diff_text_shows_new_and_fixed_findings_with_the_same_line_as_preview() -> None:
    d = small_diff()
    out = text(diff_text, d)
    preview = text(preview_text, review_of(parse_estate(changed(), "head"), [BUDGET]))
    line = next(x for x in preview.splitlines() if "cost-tags/budget-at-max-size" in x).strip()
    assert f"new {line}" in out
    assert "fixed mandatory aws-security/imds-hop-limit: hop limit 2" in out
