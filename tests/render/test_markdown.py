"""Pull-request Markdown: the summary first, the stable marker, truncation by whole sections that keeps the summary."""

from __future__ import annotations

import re

from gpufleet.engine.plan import Plan, PlanResource
from gpufleet.render.common import MAX_COMMENT, Section, assemble, marker
from gpufleet.render.diff import diff_markdown
from gpufleet.render.preview import preview_markdown
from gpufleet.review.cost.envelope import estate_cost
from gpufleet.review.diff.plans import PlanDiff, diff_plans
from model.load import parse_estate
from tests.review.estates import BUDGET, NODE_GROUP, NOW, review_of, small, small_diff


def test_diff_comment_summary_comes_first_with_counts_cost_and_violations() -> None:
    md = diff_markdown(small_diff())
    summary = md.split("<details", 1)[0]
    assert md.startswith(marker("gpufleet", "review") + "\n")
    assert "**1 to add · 1 to change · 0 to delete · 1 to replace**" in summary
    assert "**1 resource would be REPLACED (rename without alias)**" in summary
    assert "> - `aws:fsx/lustreFileSystem:LustreFileSystem` `use1-lustre` → `use1-hot` — **protected" in summary
    # pools +10.49264 / +76.02560 plus their gp3 roots (200 GB / 600 GB × $0.08 / 730 = +0.02192 / +0.06575)
    assert "| **delta** | **+$10.51/h (+$7,676/month)** | **+$76.09/h (+$55,546/month)** |" in summary
    assert "❌ **1 mandatory policy violation(s)** (1 advisory). New: 2 (1 mandatory); fixed: 1." in summary
    assert "**cost-tags/budget-at-max-size**" in summary
    assert "over its budget of $200.00/h" in summary


def test_preview_without_findings_still_renders_counts() -> None:
    md = preview_markdown(review_of(parse_estate(small(), "x")))
    assert md.startswith("<!-- gpufleet:plan:gpufleet/review -->")
    assert "**3 resources**" in md and "Policy: not evaluated." in md


# ------------------------------------------------------------------------------------------- truncation


def huge_diff(n: int = 3000) -> PlanDiff:
    """n node groups whose every label changes: far more than one comment can hold."""

    def plan(value: str) -> Plan:
        return Plan(
            "gpufleet",
            "big",
            [
                PlanResource(
                    f"{NODE_GROUP}::ng-{i}",
                    NODE_GROUP,
                    f"ng-{i}",
                    None,
                    True,
                    {"labels": {f"k{j}": f"{value}-{j}" for j in range(5)}},
                )
                for i in range(n)
            ],
        )

    spec = parse_estate(small(), "x")
    cost = estate_cost(spec, None, NOW).to_dict()
    return diff_plans(plan("a"), plan("b"), base_cost=cost, head_cost=cost, head_findings=[BUDGET], spec=spec)


def test_long_comment_is_truncated_by_whole_sections_and_keeps_the_summary() -> None:
    d = huge_diff()
    md = diff_markdown(d)
    assert len(md) <= MAX_COMMENT
    full_summary = diff_markdown(d, max_chars=10**9).split("<details", 1)[0]
    assert md.startswith(full_summary)  # the summary survives intact
    assert "✂️ Left out to stay under 64,000 characters" in md
    note = md.split("✂️", 1)[1]
    assert "estate diagram" in note and "added resources" not in note  # dropped from the tail: diagram first
    assert re.search(r"\d+ × resource change", note)
    assert md.count("<details") == md.count("</details>")
    # no table is cut: every kept change section is complete (all five labels of its resource)
    for block in re.findall(r"<details>.*?</details>", md, flags=re.S):
        if "~ <code>aws:eks/nodeGroup" in block:
            assert block.count("<code>labels.k") == 5


def test_assemble_never_cuts_inside_a_section() -> None:
    table = "| a | b |\n|---|---|\n" + "| 1 | 2 |\n" * 50
    sections = [Section(f"s{i}", f"<details><summary>s{i}</summary>\n\n{table}</details>") for i in range(10)]
    out = assemble("HEAD", sections, max_chars=2500)
    assert out.startswith("HEAD") and len(out) <= 2500
    kept = out.count("<details>")
    assert 0 < kept < 10 and out.count("| 1 | 2 |") == 50 * kept
    assert f"{10 - kept} detail section(s) (" in out and f"s{kept}" in out


def test_summary_survives_even_when_nothing_else_fits() -> None:
    out = assemble("SUMMARY " * 10, [Section("big", "x" * 5000)], max_chars=200)
    assert out.startswith("SUMMARY") and "x" * 10 not in out and "big" in out
