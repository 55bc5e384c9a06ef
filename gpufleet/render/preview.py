"""`gpufleet preview` and `gpufleet check`: a Review as text (terminal), Markdown (pull-request comment) and JSON."""

from __future__ import annotations

import json
from collections import Counter

from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from gpufleet.engine.plan import Plan, PlanResource
from gpufleet.render import first_up, journey, teardown
from gpufleet.render.common import MAX_COMMENT, Section, assemble, details, inline, marker
from gpufleet.render.cost import cost_details_text, cost_headline_text, cost_summary, cost_tables
from gpufleet.render.findings import (
    finding_lines,
    findings_json,
    findings_summary,
    findings_table,
    verdict_line,
)
from gpufleet.render.health import health_json, health_lines, health_markdown
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


def preview_text(review: Review, console: Console, summary_only: bool = False) -> None:
    """The summary (verdicts, cost headline, warnings, first-up problems), then the details: advisory findings,
    first-up notes, the cost envelope, the component tree and the resources by type."""
    preview_summary_text(review, console)
    if not summary_only:
        console.print()
        preview_details_text(review, console)


def preview_summary_text(review: Review, console: Console) -> None:
    """What a reader needs first: size, both verdicts with what fails them, the cost headline, the warnings."""
    plan = review.plan
    counts = plan.type_counts()
    console.print(
        f"[bold]{escape(f'{plan.project}/{plan.stack}')}[/bold]: {sum(counts.values())} resources ({len(counts)} types)"
    )
    verdicts_text(review.findings, review, console)
    cost_headline_text(review.cost, console)
    for line in (backstop_line(review), budget_alert_line(review)):
        if line is not None:
            console.print(line, markup=False)
    for w in plan.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(w)}")


def preview_details_text(review: Review, console: Console) -> None:
    """Everything after the summary: advisory findings, first-up notes, cost envelope, node health, tree, resources
    by type."""
    plan = review.plan
    if advisory_and_notes_text(review.findings, review, console):
        console.print()
    cost_details_text(review.cost, console)
    console.print()
    health = health_lines(review.spec)
    if health:
        console.print("[bold]Node health[/bold] (per pool: detectors; remediator)")
        for line in health:
            console.print(line, markup=False)
        console.print()
    console.print(component_tree(plan))
    counts = plan.type_counts()
    console.print(f"\n[bold]Resources by type[/bold] ({sum(counts.values())})")
    for t, n in sorted(counts.items()):
        console.print(f"  {n:>5}  {t}", markup=False)


def backstop_line(review: Review) -> str | None:
    """When the window's capacity stops by itself, with no runner (None: no window holds capacity)."""
    b = review.backstop
    if b is None:
        return None
    return (
        f"Backstop: burst pool {b.pool} stops by itself: the cloud queues hold at {b.hold_at:%Y-%m-%d %H:%M} UTC "
        f"(CronJob on the cloud worker); at {b.stop_at:%Y-%m-%d %H:%M} UTC they drain"
        + (" and" if b.aws_stop_at == b.stop_at else f"; at {b.aws_stop_at:%Y-%m-%d %H:%M} UTC")
        + " AWS scales the node group to zero (EventBridge Scheduler)"
    )


BUDGET_TYPE = "aws:budgets/budget:Budget"


def budget_alert_line(review: Review) -> str | None:
    """What the burst budget alert in the plan watches and tells, and what it needs (None: no such budget)."""
    budget = next(iter(review.plan.find(BUDGET_TYPE)), None)
    if budget is None:
        return None
    inputs = budget.inputs
    tag = ", ".join(v for f in inputs.get("costFilters") or [] for v in f.get("values") or [])
    emails = sorted({e for n in inputs.get("notifications") or [] for e in n.get("subscriberEmailAddresses") or []})
    tells = f"emails {', '.join(emails)} at 80% and 100% (actual) and 100% (forecast)" if emails else (
        "tells nobody (set burst.alert_emails)"
    )  # fmt: skip
    return (
        f"Burst budget alert: AWS Budgets watches ${float(inputs.get('limitAmount', 0)):,.2f} a month of costs tagged "
        f"{tag.removeprefix('user:').replace('$', '=')} and {tells}. It sees them only once that tag is activated "
        "as a cost-allocation tag in the payer account (Billing console, Cost allocation tags)"
    )


def verdicts_text(findings: Findings | None, review: Review, console: Console) -> None:
    """The policy verdict with every mandatory finding, the first-up verdict with every problem."""
    if findings is None:
        console.print("[bold]Policy[/bold]: not evaluated")
    else:
        console.print(verdict_line(findings, review.scope))
        for f in findings.mandatory:
            for line in finding_lines(f):
                console.print(line)
    if review.first_up is not None:
        console.print(first_up.problems_text(review.first_up), markup=False, end="")
    if review.journeys is not None:
        console.print(journey.promised_text(review.journeys), markup=False, end="")
    if review.teardown is not None:
        console.print(teardown.problems_text(review.teardown, review.plan), markup=False, end="")


def advisory_and_notes_text(findings: Findings | None, review: Review, console: Console) -> bool:
    """Advisory findings and the first-up simulation's unchecked items and notes, each under a heading; whether
    there was any."""
    advisory = findings.advisory if findings is not None else Findings()
    if advisory:
        console.print(f"[bold]Advisory findings[/bold] ({len(advisory)})")
        for f in advisory:
            for line in finding_lines(f):
                console.print(line)
    notes = first_up.notes_text(review.first_up) if review.first_up is not None else ""
    if notes:
        console.print("[bold]First up: unchecked and notes[/bold]")
        console.print(notes, markup=False, end="")
    kept = teardown.kept_text(review.teardown, review.plan) if review.teardown is not None else ""
    if kept:
        console.print("[bold]Destroy: what the data keeps[/bold]")
        console.print(kept, markup=False, end="")
    return bool(advisory or notes or kept)


def check_text(review: Review, console: Console, summary_only: bool = False) -> None:
    """`gpufleet check`: both verdicts with what fails them first, then (unless `summary_only`) the advisory
    findings and first-up notes."""
    findings = review.findings or Findings()
    verdicts_text(findings, review, console)
    if not summary_only:
        advisory_and_notes_text(findings, review, console)


# --------------------------------------------------------------------------------------------- markdown


def preview_markdown(review: Review, max_chars: int = MAX_COMMENT, summary_only: bool = False) -> str:
    """The preview comment for one stack: the summary (verdicts, cost, warnings, first-up problems), then folded
    details (findings, cost envelope, diagram, resources by type); `summary_only` stops after the summary."""
    plan, findings = review.plan, review.findings
    counts = plan.type_counts()
    head = [
        marker(plan.project, plan.stack),
        f"### gpufleet preview: `{plan.project}/{plan.stack}`",
        "",
        f"**{sum(counts.values())} resources** ({len(counts)} types)",
        "",
        *findings_summary(findings),
        *([f"{first_up.verdict(review.first_up)}"] if review.first_up is not None else []),
        *([f"**{journey.promised_verdict(review.journeys)}**"] if review.journeys is not None else []),
        *([teardown.verdict(review.teardown, plan)] if review.teardown is not None else []),
        "",
        *cost_summary(review.cost),
    ]
    for line in (backstop_line(review), budget_alert_line(review)):
        if line is not None:
            head += ["", inline(line)]
    if plan.warnings:
        head += ["", *(f"> warning: {inline(w)}" for w in plan.warnings)]
    sections: list[Section] = []
    if review.first_up is not None and review.first_up.problems:
        sections.append(Section("first-up problems", first_up.markdown(review.first_up)))
    if review.journeys:
        failed = bool(review.journeys_failed())
        table = details(f"Journeys ({len(review.journeys)})", journey.promised_markdown(review.journeys), open_=failed)
        sections.append(Section("journeys", table))
    if summary_only:
        return assemble("\n".join(head), sections, max_chars)
    if findings:
        sections.append(
            Section("policy findings", details(f"Policy findings ({len(findings)})", findings_table(findings)))
        )
    sections.append(Section("cost envelope", details("Cost envelope", cost_tables(review.cost))))
    if review.spec.pools():
        sections.append(Section("node health", details("Node health", health_markdown(review.spec))))
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
    doc["journeys"] = _journeys(review)
    doc["destroy"] = None if review.teardown is None else review.teardown.to_dict()
    doc["health"] = health_json(review.spec)
    b = review.backstop
    doc["backstop"] = (
        None
        if b is None
        else {
            "pool": b.pool,
            "hold_at": b.hold_at.isoformat(),
            "stop_at": b.stop_at.isoformat(),
            "aws_stop_at": b.aws_stop_at.isoformat(),
        }
    )
    return json.dumps(doc, indent=1, sort_keys=True)


def check_json(review: Review) -> str:
    doc = findings_json(review.findings or Findings())
    doc["first_up"] = None if review.first_up is None else review.first_up.to_dict()
    doc["journeys"] = _journeys(review)
    doc["destroy"] = None if review.teardown is None else review.teardown.to_dict()
    return json.dumps(doc, indent=1)


def _journeys(review: Review) -> list[dict[str, object]] | None:
    return None if review.journeys is None else [j.to_dict() for j in review.journeys]
