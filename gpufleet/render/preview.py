"""`gpufleet preview` and `gpufleet check`: a Review as text (terminal), Markdown (pull-request comment) and JSON."""

from __future__ import annotations

import json
from collections import Counter

from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from gpufleet.engine.plan import Plan, PlanResource
from gpufleet.render import first_up
from gpufleet.render.common import MAX_COMMENT, Section, assemble, details, inline, marker
from gpufleet.render.cost import cost_summary, cost_tables, cost_text
from gpufleet.render.findings import findings_json, findings_summary, findings_table, findings_text
from gpufleet.render.mermaid import mermaid_block
from gpufleet.review.findings import Findings
from gpufleet.review.review import Review

# ------------------------------------------------------------------------------------------------- text


def component_tree(plan: Plan) -> Tree:
    """Components as a tree, each with the count of its direct custom resources by type."""
    root = Tree(
        f"[bold]{escape(f'{plan.project}/{plan.stack}')}[/bold]: {sum(1 for r in plan.resources if r.custom)} resources"
    )

    def add(node: Tree, component: PlanResource | None) -> None:
        kids = plan.children(component.key if component else None)
        counts = Counter(r.type for r in kids if r.custom)
        for t, n in sorted(counts.items()):
            node.add(escape(f"{n} × {t}"))
        for c in sorted((k for k in kids if not k.custom), key=lambda r: (r.type, r.name)):
            add(node.add(f"[cyan]{escape(c.type.split(':')[-1])}[/cyan] {escape(c.name)}"), c)

    add(root, None)
    return root


def preview_text(review: Review, console: Console) -> None:
    """Component tree, resources by type, warnings, the cost envelope and the policy verdict."""
    plan = review.plan
    console.print(component_tree(plan))
    counts = plan.type_counts()
    console.print(f"\n[bold]Resources by type[/bold] ({sum(counts.values())})")
    for t, n in sorted(counts.items()):
        console.print(f"  {n:>5}  {t}", markup=False)
    for w in plan.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(w)}")
    console.print()
    cost_text(review.cost, console)
    if review.findings is not None:
        console.print()
        findings_text(review.findings, console, review.scope)
    if review.first_up is not None:
        console.print()
        console.print(first_up.text(review.first_up), markup=False, end="")


def check_text(review: Review, console: Console) -> None:
    """`gpufleet check`: the policy verdict and every finding, then the first-up verdict and every problem."""
    findings_text(review.findings or Findings(), console, review.scope)
    if review.first_up is not None:
        console.print(first_up.text(review.first_up), markup=False, end="")


# --------------------------------------------------------------------------------------------- markdown


def preview_markdown(review: Review, max_chars: int = MAX_COMMENT) -> str:
    """The preview comment for one stack: summary, findings, cost, diagram, resources by type."""
    plan, findings = review.plan, review.findings
    counts = plan.type_counts()
    head = [
        marker(plan.project, plan.stack),
        f"### gpufleet preview: `{plan.project}/{plan.stack}`",
        "",
        f"**{sum(counts.values())} resources** ({len(counts)} types)",
        "",
        *cost_summary(review.cost),
        "",
        *findings_summary(findings),
        *([f"{first_up.verdict(review.first_up)}"] if review.first_up is not None else []),
    ]
    head += [f"> warning: {inline(w)}" for w in plan.warnings]
    sections: list[Section] = []
    if review.first_up is not None and review.first_up.problems:
        sections.append(Section("first-up problems", first_up.markdown(review.first_up)))
    if findings:
        sections.append(
            Section("policy findings", details(f"Policy findings ({len(findings)})", findings_table(findings)))
        )
    sections.append(Section("cost envelope", details("Cost envelope", cost_tables(review.cost))))
    sections.append(Section("estate diagram", details("Estate diagram", mermaid_block(review.spec, plan), open_=True)))
    sections.append(Section("resources by type", details("Resources by type", _type_table(counts))))
    return assemble("\n".join(head), sections, max_chars)


def _type_table(counts: Counter[str]) -> str:
    return "\n".join(["| resources | type |", "|---:|---|", *(f"| {n} | `{t}` |" for t, n in sorted(counts.items()))])


# ------------------------------------------------------------------------------------------------- json


def preview_json(review: Review) -> str:
    """The whole plan (every resource with key, type, name, parent, inputs, options) plus cost and findings."""
    doc = review.plan.to_dict()
    doc["cost"] = review.cost.to_dict()
    doc["findings"] = None if review.findings is None else findings_json(review.findings)
    doc["first_up"] = None if review.first_up is None else review.first_up.to_dict()
    return json.dumps(doc, indent=1, sort_keys=True)


def check_json(review: Review) -> str:
    doc = findings_json(review.findings or Findings())
    doc["first_up"] = None if review.first_up is None else review.first_up.to_dict()
    return json.dumps(doc, indent=1)
