"""Reports lead with their summary (newcomer issue: "warnings and the cost headline come after ~150 lines of
resource tree"): verdicts, what fails them, the cost headline and the warnings come before the details."""

from __future__ import annotations

import dataclasses

from rich.console import Console

from gpufleet.engine.plan import Plan
from gpufleet.render.cost import cost_markdown, cost_text
from gpufleet.render.diff import diff_markdown, diff_text
from gpufleet.render.preview import check_text, preview_markdown, preview_text
from gpufleet.review.reality.first_up import FirstUp, Problem
from gpufleet.review.review import Review
from model.load import parse_estate
from tests.review.estates import BUDGET, TAGS, changed, review_of, small_diff

WARNING = "FSx tier hot: 2400 GiB at 125 MB/s/TiB gives 293 MB/s, under what 4 training nodes need"
PROBLEM = Problem(
    "k::cm", "ConfigMap ghost/settings", "namespace", "namespace ghost", "ConfigMap ghost/settings: no ns"
)


def review() -> Review:
    """The small estate with a mandatory and an advisory finding, a plan warning and a first-up problem and note."""
    r = review_of(parse_estate(changed(), "head"), [BUDGET, TAGS])
    plan = Plan(r.plan.project, r.plan.stack, r.plan.resources, warnings=[WARNING])
    first_up = FirstUp([PROBLEM], {"dc/kueue": 3}, 7, notes=["Release kueue: a note"])
    return dataclasses.replace(r, plan=plan, first_up=first_up)


def text(render: object, *args: object, **kwargs: object) -> str:
    console = Console(record=True, width=300)
    render(*args, console, **kwargs)  # type: ignore[operator]
    return console.export_text()


def position(output: str, *needles: str) -> list[int]:
    """Where each needle first appears in `output` (each must appear)."""
    found = [output.find(n) for n in needles]
    assert -1 not in found, [n for n, i in zip(needles, found, strict=True) if i < 0]
    return found


def test_preview_text_puts_verdicts_cost_headline_and_warnings_before_the_resource_tree() -> None:
    out = text(preview_text, review())
    summary = position(
        out,
        "gpufleet/review: 4 resources (2 types)",
        "Policy (41 rules in 4 packs): failed — 1 mandatory, 1 advisory",
        "mandatory cost-tags/budget-at-max-size",
        "first up: 1 problems",
        "[namespace] ConfigMap ghost/settings: no ns",
        "Estate: min ≥ $82.10",
        "Budget: over the budget of $200.00/h",
        f"warning: {WARNING}",
    )
    details = position(
        out,
        "Advisory findings (1)",
        "advisory cost-tags/required-tags",
        "note: Release kueue: a note",
        "Cost envelope: ",
        "gpufleet/review: 4 resources\n",  # the tree's root
        "Resources by type (4)",
    )
    assert summary == sorted(summary) and details == sorted(details)
    assert max(summary) < min(details)
    assert out.count("Estate: min ≥ $82.10") == 1  # the headline is not repeated in the details


def test_preview_text_summary_only_stops_before_the_details() -> None:
    full, short = text(preview_text, review()), text(preview_text, review(), summary_only=True)
    assert full.startswith(short)
    assert "Estate: min ≥ $82.10" in short and WARNING in short and "budget-at-max-size" in short
    for detail in ("Advisory findings", "Cost envelope", "Resources by type", "└── "):
        assert detail in full and detail not in short


def test_check_text_gives_both_verdicts_before_the_advisory_findings() -> None:
    out = text(check_text, review())
    where = position(
        out, "failed — 1 mandatory", "budget-at-max-size", "first up: 1 problems", "Advisory findings", "required-tags"
    )
    assert where == sorted(where)


def test_cost_text_leads_with_the_estate_headline() -> None:
    out = text(cost_text, review().cost)
    assert out.startswith("Estate: min ≥ $82.10")
    where = position(out, "Budget: over the budget of $200.00/h", "Cost envelope: ", "Per tenant", "Prices used")
    assert where == sorted(where)


def test_preview_markdown_leads_with_the_verdicts_then_cost_then_warnings() -> None:
    md = preview_markdown(review())
    where = position(
        md,
        "❌ **1 mandatory policy violation(s)**",
        "❌ first up: 1 problems",
        "| $/hour |",
        f"> warning: {WARNING}",
        "### First up (simulated)",
        "<details><summary>Policy findings (2)",
        "<details><summary>Cost envelope",
        "<details open><summary>Estate diagram",
        "<details><summary>Resources by type",
    )
    assert where == sorted(where)


def test_preview_markdown_summary_only_keeps_the_first_up_problems_and_drops_the_details() -> None:
    md = preview_markdown(review(), summary_only=True)
    assert "❌ **1 mandatory policy violation(s)**" in md and "| $/hour |" in md and WARNING in md
    assert "| namespace (object before its namespace) | `ConfigMap ghost/settings` |" in md
    assert "<details" not in md and "```mermaid" not in md
    assert preview_markdown(review()).startswith(md.rstrip("\n"))


def test_diff_comment_gives_the_policy_verdict_before_replacements_and_the_cost_delta() -> None:
    md = diff_markdown(small_diff())
    where = position(
        md,
        "**1 to add · 1 to change · 0 to delete · 1 to replace**",
        "❌ **1 mandatory policy violation(s)**",
        "would be REPLACED",
        "| **delta** |",
        "<details><summary>Policy findings",
    )
    assert where == sorted(where)


def test_diff_summary_only_stops_before_the_changes() -> None:
    d = small_diff()
    full, short = text(diff_text, d), text(diff_text, d, summary_only=True)
    assert full.startswith(short) and "policy: 1 mandatory violation(s)" in short and "cost at max:" in short
    assert "+ aws:" in full and "+ aws:" not in short and "~ aws:" not in short
    md, md_short = diff_markdown(d), diff_markdown(d, summary_only=True)
    assert md.startswith(md_short.rstrip("\n")) and "would be REPLACED" in md_short and "<details" not in md_short


def test_check_and_cost_summary_only_leave_out_the_details() -> None:
    r = review()
    check_short = text(check_text, r, summary_only=True)
    assert "failed — 1 mandatory" in check_short and "[namespace] ConfigMap ghost/settings" in check_short
    assert "required-tags" not in check_short and "a note" not in check_short
    cost_short = text(cost_text, r.cost, summary_only=True)
    assert cost_short.startswith("Estate: min ≥ $82.10") and "Budget: over the budget of $200.00/h" in cost_short
    assert "Cost envelope" not in cost_short and "Prices used" not in cost_short
    md = cost_markdown(r.cost, summary_only=True)
    assert "| $/hour |" in md and "over its budget" in md and "Prices used" not in md
    assert cost_markdown(r.cost).startswith(md.rstrip("\n"))
