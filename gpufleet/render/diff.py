"""`gpufleet diff`: a PlanDiff as Markdown (the pull-request comment), text (terminal) and JSON."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.markup import escape

from gpufleet.engine.plan import PlanResource
from gpufleet.render.common import (
    MAX_COMMENT,
    SUMMARY_LIST_LIMIT,
    Section,
    assemble,
    code,
    details,
    inline,
    marker,
    short_key,
    signed,
    usd_or_dash,
    usd_total,
)
from gpufleet.render.cost import budget_line, unpriced_line
from gpufleet.render.findings import finding_lines, findings_summary, findings_table
from gpufleet.render.mermaid import mermaid_block
from gpufleet.review.cost.prices import LEVELS
from gpufleet.review.diff.plans import MISSING, CostLine, PlanDiff, PropertyChange
from model.conventions import NODE_GROUP

VALUE_CHARS = 120  # a property value longer than this is cut with an ellipsis

# --------------------------------------------------------------------------------------------- markdown


def diff_markdown(diff: PlanDiff, max_chars: int = MAX_COMMENT, summary_only: bool = False) -> str:
    """The pull-request comment for one stack's change: summary first (changes, policy verdict, replacements, cost
    delta, notes), details folded, diagram last."""
    head = [
        marker(diff.project, diff.stack),
        f"### gpufleet plan: `{diff.project}/{diff.stack}` — `{diff.base_label}` → {diff.head_label}",
        "",
    ]
    if diff.base_missing:
        head.append(f"🆕 The stack does not exist at `{diff.base_label}`: every resource is new.")
        head.append("")
    if diff.empty:
        head.append("**No resource changes.**")
    else:
        head.append(
            f"**{len(diff.added)} to add · {len(diff.changed)} to change · {len(diff.removed)} to delete"
            f" · {len(diff.replaced)} to replace**"
        )
    head += ["", *findings_summary(diff.findings, diff.findings_new, diff.findings_fixed)]
    head += _replacement_summary(diff)
    if diff.cost_total is not None:
        head.append("")
        head += _cost_delta_table(diff)
        budget = diff.spec.policies.budget_usd_per_hour if diff.spec else None
        head += budget_line(budget, diff.budget_hour, diff.cost_no_price)
        head += unpriced_line(diff.cost_unpriced)
    head += [f"> {inline(n)}" for n in diff.notes]
    if summary_only:
        return assemble("\n".join(head), [], max_chars)

    sections: list[Section] = []
    if diff.findings_new or diff.findings_fixed or diff.findings:
        sections.append(Section("policy findings", details("Policy findings", _findings_diff(diff))))
    if diff.replaced:
        sections.append(
            Section("replacements", details(f"Replacements ({len(diff.replaced)})", _replacements_table(diff)))
        )
    if diff.cost_pools:
        sections.append(Section("cost by pool", details("Cost by pool", _cost_pool_table(diff))))
    for c in diff.changed:
        n = len(c.changes)
        title = f"~ <code>{c.resource.type}</code> {c.resource.name} ({n} propert{'y' if n == 1 else 'ies'})"
        if c.renamed_from:
            title += " — renamed with an alias"
            if c.resource.type == NODE_GROUP:
                title += ": every node is replaced once, one at a time"
        sections.append(
            Section(f"change to {c.resource.name}", details(title, _property_table(c.changes)), "resource change")
        )
    if diff.added:
        sections.append(
            Section("added resources", details(f"+ Added ({len(diff.added)})", _resource_table(diff.added)))
        )
    if diff.removed:
        sections.append(
            Section("removed resources", details(f"- Removed ({len(diff.removed)})", _resource_table(diff.removed)))
        )
    if diff.spec is not None:
        sections.append(
            Section("estate diagram", details("Estate diagram (this change)", mermaid_block(diff.spec, diff.plan)))
        )
    return assemble("\n".join(head), sections, max_chars)


def _side(v: float | None, complete: bool) -> str:
    return "-" if v is None and complete else usd_total(v, complete)


def delta_text(diff: PlanDiff, level: str) -> str:
    """The change in $/h and $/month at `level`; "unknown" while a price is missing on either side (usage-billed
    items without a usage figure are the same on both sides and cancel)."""
    c = diff.cost_total
    if c is None:
        return "-"
    if diff.cost_no_price:
        return f"unknown ({len(diff.cost_no_price)} unpriced)"
    return f"{signed(c.delta(level))}/h ({signed(c.month_delta(level), 0)}/month)"


def _cost_delta_table(diff: PlanDiff) -> list[str]:
    c = diff.cost_total
    assert c is not None
    base_ok, head_ok = diff.cost_complete
    rows = [
        "| cost | at desired size | at max size |",
        "|---|---:|---:|",
        f"| base | {_side(c.base.get('desired'), base_ok)}/h | {_side(c.base.get('max'), base_ok)}/h |",
        f"| this change | {_side(c.head.get('desired'), head_ok)}/h | {_side(c.head.get('max'), head_ok)}/h |",
        f"| **delta** | **{delta_text(diff, 'desired')}** | **{delta_text(diff, 'max')}** |",
    ]
    if (judged := budget_hour_delta_text(diff)) is not None:
        rows.append(f"| **delta, {BUDGET_HOUR}** | | **{judged}** |")
    return rows


BUDGET_HOUR = "the hour the budget judges (max size, spot at on demand, burst pools at their max)"


def budget_hour_delta_text(diff: PlanDiff) -> str | None:
    """The change in the hour the budget judges (EstateCost.budget_hour: spot nodes at on demand, every burst pool
    at its max), where it says something the change at max size does not: it differs from it (an idle burst pool is
    $0/h at max, so a doubled burst max shows only here; a move to spot lowers max but not this hour), or burst
    pools exist. None: no such change, or a price is missing."""
    b, h, c = diff.base_budget_hour, diff.budget_hour, diff.cost_total
    if b is None or h is None or c is None or diff.cost_no_price:
        return None
    change, at_max = h - b, c.delta("max")
    if at_max is not None and abs(change - at_max) < 0.005 and not diff.bursts:
        return None
    return f"{signed(change)}/h"


def _replacement_summary(diff: PlanDiff) -> list[str]:
    if not diff.replaced:
        return []
    ordered = sorted(diff.replaced, key=lambda r: (not r.protected, r.removed.type, r.removed.name))
    n = len(ordered)
    out = [
        "",
        f"> ⚠️ **{n} resource{'s' if n > 1 else ''} would be REPLACED (rename without alias)**: the engine deletes "
        f"{'each' if n > 1 else 'it'} and creates a new one.",
    ]
    for r in ordered[:SUMMARY_LIST_LIMIT]:
        line = f"> - `{r.removed.type}` `{r.removed.name}` → `{r.added.name}`"
        if r.protected:
            line += " — **protected: `pulumi up` will stop with an error rather than delete it**"
        out.append(line)
    if n > SUMMARY_LIST_LIMIT:
        out.append(f"> - … and {n - SUMMARY_LIST_LIMIT} more (see Replacements)")
    out.append(">")
    out.append(
        "> If the rename is not meant to replace them, keep the old name in the stack file; a deliberate move needs "
        "an alias in the component (or `pulumi state mv`) before this merges."
    )
    if (groups := node_groups_replaced(diff)) is not None:
        out += [">", f"> {groups}"]
    return out


def node_groups_replaced(diff: PlanDiff) -> str | None:
    """The warning for node groups replaced by a rename (None: none is)."""
    names = [r.removed.name for r in diff.replaced if r.removed.type == NODE_GROUP]
    if not names:
        return None
    return (
        f"Node group{'s' if len(names) > 1 else ''} {', '.join(names)}: the new group is created before the old "
        "one is deleted, so the pool has up to twice its nodes for a while, and in a placement group or on a "
        "reservation or block the new group may not launch. To rename a pool, give it `renamed_from: <old name>` "
        "(docs/stack-file.md, Renaming a pool)."
    )


def node_groups_renamed(diff: PlanDiff) -> str | None:
    """The note for node groups a rename keeps by alias (None: none is): the group stays, but its launch template
    names the pool (description, instance tags), so its new template version rolls every node once."""
    names = [c.resource.name for c in diff.changed if c.resource.type == NODE_GROUP and c.renamed_from]
    if not names:
        return None
    return (
        f"Node group{'s' if len(names) > 1 else ''} {', '.join(names)} renamed with an alias: kept, with no second "
        "set of nodes, but the launch template names the pool, so its new version replaces every node once, "
        "one at a time, each drained first (EKS managed-node-update-behavior)."
    )


def _replacements_table(diff: PlanDiff) -> str:
    rows = ["| type | old name | new name | inputs equal | protected |", "|---|---|---|---:|---|"]
    for r in diff.replaced:
        rows.append(
            f"| `{r.removed.type}` | {r.removed.name} | {r.added.name} | {r.similarity:.0%} | {'yes' if r.protected else 'no'} |"
        )
    return "\n".join(rows)


def _cost_pool_table(diff: PlanDiff) -> str:
    rows = ["| pool | desired: base → head | Δ $/h | max: base → head | Δ $/h |", "|---|---:|---:|---:|---:|"]
    for c in diff.cost_pools:
        cells = []
        for lv in ("desired", "max"):
            change = "unknown (unpriced)" if c.unpriced else signed(c.delta(lv))
            cells += [f"{usd_or_dash(c.base.get(lv))} → {usd_or_dash(c.head.get(lv))}", change]
        rows.append(f"| {c.name} | {' | '.join(cells)} |")
    return "\n".join(rows)


def _short(v: Any) -> str:
    """A property value on one line: strings as they are, anything else as JSON; long values cut."""
    text = v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 3] + "…"


def _value(v: Any) -> str:
    return "*(absent)*" if v is MISSING else f"<code>{code(_short(v))}</code>"


def _property_table(changes: Iterable[PropertyChange]) -> str:
    rows = ["| property | before | after |", "|---|---|---|"]
    for p in changes:
        rows.append(f"| <code>{code(p.path)}</code> | {_value(p.before)} | {_value(p.after)} |")
    return "\n".join(rows)


def _resource_table(resources: list[PlanResource]) -> str:
    rows = ["| type | name | in | protected |", "|---|---|---|---|"]
    for r in resources:
        parent = short_key(r.parent) if r.parent else "-"
        rows.append(f"| `{r.type}` | {r.name} | {parent} | {'yes' if r.protect else ''} |")
    return "\n".join(rows)


def _findings_diff(diff: PlanDiff) -> str:
    out = []
    if diff.findings_new:
        out += ["**New**", "", findings_table(diff.findings_new)]
    if diff.findings_fixed:
        out += ["", "**Fixed by this change**", "", findings_table(diff.findings_fixed)]
    if diff.findings_persisting:
        out += ["", "**Already present at the base**", "", findings_table(diff.findings_persisting)]
    return "\n".join(out).strip()


# ------------------------------------------------------------------------------------------------- text


def diff_text(diff: PlanDiff, console: Console, summary_only: bool = False) -> None:
    """The diff for a terminal: the summary (counts, replacements, cost delta, findings, notes), then each change
    unless `summary_only`."""
    console.print(
        f"[bold]{escape(f'{diff.project}/{diff.stack}')}[/bold]: {escape(f'{diff.base_label} → {diff.head_label}')}"
    )
    if diff.base_missing:
        console.print("the stack does not exist at the base revision: every resource is new")
    console.print(
        f"[green]+{len(diff.added)}[/green] to add  [yellow]~{len(diff.changed)}[/yellow] to change  "
        f"[red]-{len(diff.removed)}[/red] to delete  [magenta]{len(diff.replaced)}[/magenta] to replace"
    )
    for r in diff.replaced:
        prot = " (protected: `pulumi up` will fail)" if r.protected else ""
        console.print(
            "[magenta]REPLACE[/magenta] "
            + escape(f"{r.removed.type} {r.removed.name} → {r.added.name}: rename without alias{prot}")
        )
    if (groups := node_groups_replaced(diff)) is not None:
        console.print(f"[yellow]warning:[/yellow] {escape(groups)}")
    if (kept := node_groups_renamed(diff)) is not None:
        console.print(f"[yellow]note:[/yellow] {escape(kept)}")
    if diff.cost_total is not None:
        c = diff.cost_total
        base_ok, head_ok = diff.cost_complete
        for lv in ("desired", "max"):
            console.print(
                f"cost at {lv}: {_side(c.base.get(lv), base_ok)}/h → {_side(c.head.get(lv), head_ok)}/h "
                f"({delta_text(diff, lv)})",
                markup=False,
            )
        if (judged := budget_hour_delta_text(diff)) is not None:
            console.print(f"{BUDGET_HOUR}: {judged}", markup=False)
    if diff.findings is None:
        console.print("policy: not evaluated")
    else:
        console.print(
            f"policy: {len(diff.findings.mandatory)} mandatory violation(s); new {len(diff.findings_new)}, "
            f"fixed {len(diff.findings_fixed)}"
        )
        for f in diff.findings_new:
            for line in finding_lines(f, "[red]new[/red] "):
                console.print(line)
        for f in diff.findings_fixed:
            for line in finding_lines(f, "[green]fixed[/green] "):
                console.print(line)
    for n in diff.notes:
        console.print(f"[dim]{escape(n)}[/dim]")
    if summary_only:
        return
    for res in diff.added:
        console.print(f"[green]+ {escape(f'{res.type} {res.name}')}[/green]")
    for res in diff.removed:
        console.print(f"[red]- {escape(f'{res.type} {res.name}')}[/red]")
    for ch in diff.changed:
        console.print(f"[yellow]~ {escape(f'{ch.resource.type} {ch.resource.name}')}[/yellow]")
        for p in ch.changes:
            before = "(absent)" if p.before is MISSING else _short(p.before)
            after = "(absent)" if p.after is MISSING else _short(p.after)
            console.print(f"    {p.path}: {before} → {after}", markup=False)


# ------------------------------------------------------------------------------------------------- json


def diff_json(diff: PlanDiff) -> str:
    def cost_line(c: CostLine) -> dict[str, Any]:
        unknown = c.name == "total" and bool(diff.cost_no_price)  # a missing price: the change is unknown, not 0
        delta = {lv: None if unknown or (v := c.delta(lv)) is None else round(v, 4) for lv in LEVELS}
        delta_month = {lv: None if unknown or (v := c.month_delta(lv)) is None else round(v, 2) for lv in LEVELS}
        return {"name": c.name, "base": c.base, "head": c.head, "delta": delta, "delta_month": delta_month}

    def value(v: Any) -> Any:
        return None if v is MISSING else v

    doc = {
        "project": diff.project,
        "stack": diff.stack,
        "base": diff.base_label,
        "head": diff.head_label,
        "base_missing": diff.base_missing,
        "added": [r.key for r in diff.added],
        "removed": [r.key for r in diff.removed],
        "changed": [
            {
                "key": c.resource.key,
                "renamed_from": c.renamed_from,
                "changes": [{"path": p.path, "before": value(p.before), "after": value(p.after)} for p in c.changes],
            }
            for c in diff.changed
        ],
        "replaced": [
            {
                "removed": r.removed.key,
                "added": r.added.key,
                "similarity": round(r.similarity, 3),
                "protected": r.protected,
            }
            for r in diff.replaced
        ],
        "cost": {
            "total": cost_line(diff.cost_total) if diff.cost_total else None,
            "pools": [cost_line(c) for c in diff.cost_pools],
            "unpriced": diff.cost_unpriced,
            "no_price": diff.cost_no_price,
            "budget_hour": {"base": diff.base_budget_hour, "head": diff.budget_hour},
        },
        "findings": None if diff.findings is None else [f.to_dict() for f in diff.findings],
        "findings_new": [f.to_dict() for f in diff.findings_new],
        "findings_fixed": [f.to_dict() for f in diff.findings_fixed],
        "notes": diff.notes,
    }
    return json.dumps(doc, indent=1, default=str)
