"""Renderers: text (terminal), json (for other tools) and markdown (pull-request comments).

Markdown comments are one per stack, found again by a stable marker (`<!-- gpufleet:plan:<project>/<stack> -->`)
so a workflow can replace its own comment. The summary comes first (resource counts, cost, mandatory
violations); details are folded in `<details>`. A comment stays under `MAX_COMMENT` characters: detail sections
are dropped whole from the tail and a note says what was left out; the summary always survives.
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.tree import Tree

from components.model.spec import (
    AwsNodePool,
    AwsSite,
    BaremetalSite,
    EfaFabric,
    EstateSpec,
    FsxLustreTier,
    InfinibandFabric,
    ParallelFsTier,
    RoceFabric,
)
from gpufleet.engine.plan import Plan, PlanResource
from gpufleet.review.cost import HOURS, LEVELS, EstateCost
from gpufleet.review.findings import Finding, mandatory

if TYPE_CHECKING:
    from gpufleet.review.diff import PlanDiff, PropertyChange

MAX_COMMENT = 64_000  # GitHub refuses comments over 65,536 characters; keep a margin
SUMMARY_LIST_LIMIT = 10


def marker(project: str, stack: str) -> str:
    """The stable HTML comment a workflow searches for to update this stack's comment."""
    return f"<!-- gpufleet:plan:{project}/{stack} -->"


# ------------------------------------------------------------------------------------------------- text


def component_tree(plan: Plan) -> Tree:
    """Components as a tree, each with the count of its direct custom resources by type."""
    root = Tree(f"[bold]{plan.project}/{plan.stack}[/bold]: {sum(1 for r in plan.resources if r.custom)} resources")

    def add(node: Tree, component: PlanResource | None) -> None:
        kids = plan.children(component.key if component else None)
        counts = Counter(r.type for r in kids if r.custom)
        for t, n in sorted(counts.items()):
            node.add(f"{n} × {t}")
        for c in sorted((k for k in kids if not k.custom), key=lambda r: (r.type, r.name)):
            add(node.add(f"[cyan]{c.type.split(':')[-1]}[/cyan] {c.name}"), c)

    add(root, None)
    return root


def render_text(
    plan: Plan, console: Console, cost: EstateCost | None = None, findings: list[Finding] | None = None
) -> None:
    console.print(component_tree(plan))
    counts = plan.type_counts()
    console.print(f"\n[bold]Resources by type[/bold] ({sum(counts.values())})")
    for t, n in sorted(counts.items()):
        console.print(f"  {n:>5}  {t}")
    for w in plan.warnings:
        console.print(f"[yellow]warning:[/yellow] {w}")
    if cost is not None:
        console.print()
        render_cost_text(cost, console)
    if findings is not None:
        console.print()
        render_findings_text(findings, console)


def render_findings_text(findings: list[Finding], console: Console) -> None:
    if not findings:
        console.print("[green]Policy: no findings[/green]")
        return
    console.print(f"[bold]Policy findings[/bold] ({len(mandatory(findings))} mandatory, {len(findings)} in all)")
    for f in sorted(findings, key=_finding_order):
        colour = "red" if f.enforcement == "mandatory" else "yellow"
        where = f" [dim]{f.resource}[/dim]" if f.resource else ""
        console.print(f"  [{colour}]{f.enforcement}[/{colour}] {f.pack}/{f.rule}: {f.message}{where}")
        if f.remediation:
            console.print(f"      fix: {f.remediation}")


def render_cost_text(cost: EstateCost, console: Console) -> None:
    table = Table(title=f"Cost envelope: {cost.estate} ({cost.environment}), $ per hour (a month is {HOURS} h)")
    table.add_column("site/pool", no_wrap=True)
    table.add_column("instance", overflow="fold")
    table.add_column("nodes", justify="right", no_wrap=True)
    table.add_column("$/h each", justify="right")
    for lv in LEVELS:
        table.add_column(lv, justify="right")
    for p in cost.pools:
        what = p.instance_type or f"{p.gpu_model} × {p.gpus_per_node}"
        nodes = "/".join(str(p.nodes[lv]) for lv in LEVELS)
        cells = [_usd(p.hourly.at(lv)) if p.priced else "unpriced" for lv in LEVELS]
        unit = _usd(p.price.usd) if p.price else "unpriced"
        table.add_row(f"{p.site}/{p.pool}", what, nodes, unit, *cells)
    console.print(table)
    for p in cost.pools:
        for n in p.notes:
            console.print(f"  [dim]{p.pool}: {n}[/dim]")
    if cost.storage:
        console.print("[bold]Storage[/bold]")
        for t in cost.storage:
            amount = f"{_usd(t.monthly_usd, 0)}/month" if t.status == "priced" else t.status
            console.print(f"  {t.site}/{t.tier} ({t.kind}): {amount} — {t.note}")
    console.print("[bold]Per site[/bold]")
    for s in cost.sites():
        console.print(f"  {s}: {_levels_text(cost.site_total(s).hourly.at)}")
    console.print("[bold]Per tenant[/bold] (quota share of each pool)")
    for tenant, f in cost.tenants().items():
        console.print(f"  {tenant}: {_levels_text(f.at)}")
    total = cost.total()
    console.print(f"[bold]Estate[/bold]: {_levels_text(total.hourly.at)}")
    console.print(f"  per month: {_levels_text(total.hourly.monthly, 0)}")
    if total.unpriced:
        console.print(f"[red]not in the totals (no price): {', '.join(total.unpriced)}[/red]")
    if cost.budget_usd_per_hour is not None:
        mx = total.hourly.at("max") or 0.0
        verdict = "within" if mx <= cost.budget_usd_per_hour else "[red]OVER[/red]"
        console.print(f"Budget: {_usd(cost.budget_usd_per_hour)}/h at max size: {verdict} ({_usd(mx)}/h)")
    console.print("[dim]Not included: " + "; ".join(cost.excluded) + "[/dim]")
    console.print("[bold]Prices used[/bold]")
    for ref in cost.prices():
        flag = "" if ref.verified else " [yellow](unverified)[/yellow]"
        console.print(f"  {_usd(ref.usd, 4)}/{ref.unit} ({ref.date}) {ref.source}{flag}")


def _levels_text(at: Any, digits: int = 2) -> str:
    return "  ".join(f"{lv} {_usd(at(lv), digits)}" for lv in LEVELS)


# ------------------------------------------------------------------------------------------------- json


def render_json(plan: Plan, extra: dict[str, Any] | None = None) -> str:
    doc = plan.to_dict()
    doc.update(extra or {})
    return json.dumps(doc, indent=1, sort_keys=True)


# --------------------------------------------------------------------------------------------- markdown


@dataclass(frozen=True)
class Section:
    """A detail block of a comment; dropped whole (never cut) when the comment is too long."""

    title: str
    body: str
    kind: str = ""  # how the truncation note counts it ("resource change"); defaults to the title

    def __post_init__(self) -> None:
        if not self.kind:
            object.__setattr__(self, "kind", self.title)


def assemble(head: str, sections: list[Section], max_chars: int = MAX_COMMENT) -> str:
    """`head` (marker and summary, always kept) then sections, dropping whole sections from the tail to fit."""
    head = head.rstrip()
    bodies = [s.body.rstrip() for s in sections]
    kept = len(sections)
    size = len(head) + sum(len(b) + 2 for b in bodies) + 1  # "\n\n" between blocks, "\n" at the end

    def note(n_kept: int) -> str:
        left_out = sections[n_kept:]
        if not left_out:
            return ""
        kinds = Counter(s.kind for s in left_out)
        what = ", ".join(f"{n} × {k}" if n > 1 else k for k, n in kinds.items())
        return (
            f"> ✂️ Left out to stay under {max_chars:,} characters: {len(left_out)} detail section(s) ({what}). "
            "Run the same command locally to see everything."
        )

    while kept and size + len(note(kept)) + 2 > max_chars:
        kept -= 1
        size -= len(bodies[kept]) + 2
    tail = note(kept)
    return "\n\n".join([head, *bodies[:kept], *([tail] if tail else [])]) + "\n"


def render_markdown(
    plan: Plan,
    cost: EstateCost | None = None,
    findings: list[Finding] | None = None,
    *,
    spec: EstateSpec | None = None,
    max_chars: int = MAX_COMMENT,
) -> str:
    """The preview comment for one stack: summary, findings, cost, diagram, resources by type."""
    spec = spec or (cost.spec if cost else None)
    counts = plan.type_counts()
    head = [
        marker(plan.project, plan.stack),
        f"### gpufleet preview: `{plan.project}/{plan.stack}`",
        "",
        f"**{sum(counts.values())} resources** ({len(counts)} types)",
    ]
    if cost is not None:
        total = cost.total()
        head.append("")
        head += _cost_summary_table(total.hourly.at, None)
        head += _budget_line(cost.budget_usd_per_hour, total.hourly.at("max"))
        if total.unpriced:
            head.append(f"> ⚠️ Not in the totals (no catalog price): {', '.join(total.unpriced)}")
    head += ["", *_findings_summary(findings, None)]
    head += [f"> warning: {_inline(w)}" for w in plan.warnings]
    sections: list[Section] = []
    if findings:
        sections.append(
            Section("policy findings", _details(f"Policy findings ({len(findings)})", _findings_table(findings)))
        )
    if cost is not None:
        sections.append(Section("cost envelope", _details("Cost envelope", cost_markdown(cost))))
    if spec is not None:
        sections.append(Section("estate diagram", _details("Estate diagram", mermaid_block(spec, plan), open_=True)))
    sections.append(Section("resources by type", _details("Resources by type", _type_table(counts))))
    return assemble("\n".join(head), sections, max_chars)


def render_cost_markdown(cost: EstateCost) -> str:
    total = cost.total()
    lines = [f"### gpufleet cost: `{cost.estate}` ({cost.environment})", ""]
    lines += _cost_summary_table(total.hourly.at, None)
    lines += _budget_line(cost.budget_usd_per_hour, total.hourly.at("max"))
    return "\n".join(lines) + "\n\n" + cost_markdown(cost) + "\n"


def cost_markdown(cost: EstateCost) -> str:
    """Tables: pools, storage, sites, tenants, prices used; then what is not included."""
    out = [
        f"Hourly $ at min / desired / max size; a month is {HOURS} h.",
        "",
        "| site | pool | instance / GPU | nodes min/desired/max | $/unit-hour | $/GPU-hour | min | desired | max "
        "| $/month at max |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in cost.pools:
        what = f"`{p.instance_type}`" if p.instance_type else f"{p.gpu_model} × {p.gpus_per_node} (owned)"
        unit = f"{_usd(p.price.usd, 4)}/{p.price.unit}" if p.price else "**unpriced**"
        cells = [_usd(p.hourly.at(lv)) if p.priced else "unpriced" for lv in LEVELS]
        monthly = _usd(p.hourly.monthly("max"), 0) if p.priced else "unpriced"
        nodes = " / ".join(str(p.nodes[lv]) for lv in LEVELS)
        per_gpu = _usd(p.usd_per_gpu_hour, 4) if p.usd_per_gpu_hour is not None else "-"
        out.append(
            f"| {p.site} | {p.pool}{' (burst)' if p.burst else ''} | {what} | {nodes} | {unit} | {per_gpu} "
            f"| {' | '.join(cells)} | {monthly} |"
        )
    notes = [f"- `{p.pool}`: {_inline(n)}" for p in cost.pools for n in p.notes]
    if notes:
        out += ["", *notes]
    if cost.storage:
        out += ["", "| site | storage tier | kind | $/month | basis |", "|---|---|---|---:|---|"]
        for t in cost.storage:
            amount = _usd(t.monthly_usd, 0) if t.status == "priced" else t.status
            basis = f"{t.quantity} × {_usd(t.price.usd, 3)}/GB-month; " if t.status == "priced" and t.price else ""
            out.append(f"| {t.site} | {t.tier} | {t.kind} | {amount} | {_cell(basis + t.note)} |")
    out += ["", "| site | min | desired | max |", "|---|---:|---:|---:|"]
    for s in cost.sites():
        at = cost.site_total(s).hourly.at
        out.append(f"| {s} | {' | '.join(_usd(at(lv)) for lv in LEVELS)} |")
    total = cost.total()
    out.append(f"| **estate** | {' | '.join('**' + _usd(total.hourly.at(lv)) + '**' for lv in LEVELS)} |")
    tenants = cost.tenants()
    if tenants:
        out += ["", "Per tenant: its `gpu_quota` on a pool ÷ the pool's GPU units, times the pool's cost.", ""]
        out += ["| tenant | min | desired | max | $/month at desired |", "|---|---:|---:|---:|---:|"]
        for tenant, f in tenants.items():
            out.append(
                f"| {tenant} | {' | '.join(_usd(f.at(lv)) for lv in LEVELS)} | {_usd(f.monthly('desired'), 0)} |"
            )
    out += ["", "Prices used:", ""]
    for ref in cost.prices():
        flag = " *(not confirmed from a stored copy)*" if not ref.verified else ""
        out.append(f"- {_usd(ref.usd, 4)}/{ref.unit}, {ref.date}: {_inline(ref.source)}{flag}")
    out += ["", "Not included: " + "; ".join(cost.excluded) + "."]
    return "\n".join(out)


# -------------------------------------------------------------------------------------------------- diff


def render_diff_markdown(diff: PlanDiff, max_chars: int = MAX_COMMENT) -> str:
    """The pull-request comment for one stack's change: summary first, details folded, diagram last."""
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
    head += _replacement_summary(diff)
    if diff.cost_total is not None:
        head.append("")
        head += _cost_summary_table(lambda lv: diff.cost_total.head.get(lv) if diff.cost_total else None, diff)
        budget = diff.spec.policies.budget_usd_per_hour if diff.spec else None
        head += _budget_line(budget, diff.cost_total.head.get("max"))
        if diff.cost_unpriced:
            head.append(f"> ⚠️ Not in the totals (no catalog price): {', '.join(diff.cost_unpriced)}")
    head += ["", *_findings_summary(diff.findings, diff)]
    head += [f"> {_inline(n)}" for n in diff.notes]

    sections: list[Section] = []
    if diff.findings_new or diff.findings_fixed or diff.findings:
        sections.append(Section("policy findings", _details("Policy findings", _findings_diff(diff))))
    if diff.replaced:
        sections.append(
            Section("replacements", _details(f"Replacements ({len(diff.replaced)})", _replacements_table(diff)))
        )
    if diff.cost_pools:
        sections.append(Section("cost by pool", _details("Cost by pool", _cost_pool_table(diff))))
    for c in diff.changed:
        n = len(c.changes)
        title = f"~ <code>{c.resource.type}</code> {c.resource.name} ({n} propert{'y' if n == 1 else 'ies'})"
        if c.renamed_from:
            title += " — renamed with an alias"
        sections.append(
            Section(f"change to {c.resource.name}", _details(title, _property_table(c.changes)), "resource change")
        )
    if diff.added:
        sections.append(
            Section("added resources", _details(f"+ Added ({len(diff.added)})", _resource_table(diff.added)))
        )
    if diff.removed:
        sections.append(
            Section("removed resources", _details(f"- Removed ({len(diff.removed)})", _resource_table(diff.removed)))
        )
    if diff.spec is not None:
        sections.append(
            Section("estate diagram", _details("Estate diagram (this change)", mermaid_block(diff.spec, diff.plan)))
        )
    return assemble("\n".join(head), sections, max_chars)


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
    return out


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
            cells += [f"{_usd_or(c.base.get(lv))} → {_usd_or(c.head.get(lv))}", _signed(c.delta(lv))]
        rows.append(f"| {c.name} | {' | '.join(cells)} |")
    return "\n".join(rows)


def _property_table(changes: Iterable[PropertyChange]) -> str:
    rows = ["| property | before | after |", "|---|---|---|"]
    for p in changes:
        rows.append(f"| <code>{_code(p.path)}</code> | {_value(p.before)} | {_value(p.after)} |")
    return "\n".join(rows)


def _resource_table(resources: list[PlanResource]) -> str:
    rows = ["| type | name | in | protected |", "|---|---|---|---|"]
    for r in resources:
        parent = r.parent.split("::")[-1] if r.parent else "-"
        rows.append(f"| `{r.type}` | {r.name} | {parent} | {'yes' if r.protect else ''} |")
    return "\n".join(rows)


def _findings_diff(diff: PlanDiff) -> str:
    out = []
    if diff.findings_new:
        out += ["**New**", "", _findings_table(diff.findings_new)]
    if diff.findings_fixed:
        out += ["", "**Fixed by this change**", "", _findings_table(diff.findings_fixed)]
    persisting = [f for f in diff.findings or [] if f not in diff.findings_new]
    if persisting:
        out += ["", "**Already present at the base**", "", _findings_table(persisting)]
    return "\n".join(out).strip()


# ------------------------------------------------------------------------------------------ summary bits


def _cost_summary_table(head_at: Any, diff: PlanDiff | None) -> list[str]:
    if diff is None or diff.cost_total is None:
        return [
            "| cost | min | desired | max |",
            "|---|---:|---:|---:|",
            f"| $/hour | {' | '.join(_usd(head_at(lv)) for lv in LEVELS)} |",
            f"| $/month | {' | '.join(_usd(_month(head_at(lv)), 0) for lv in LEVELS)} |",
        ]
    c = diff.cost_total
    return [
        "| cost | at desired size | at max size |",
        "|---|---:|---:|",
        f"| base | {_usd_or(c.base.get('desired'))}/h | {_usd_or(c.base.get('max'))}/h |",
        f"| this change | {_usd_or(c.head.get('desired'))}/h | {_usd_or(c.head.get('max'))}/h |",
        f"| **delta** | **{_signed(c.delta('desired'))}/h ({_signed(_month(c.delta('desired')), 0)}/month)** | "
        f"**{_signed(c.delta('max'))}/h ({_signed(_month(c.delta('max')), 0)}/month)** |",
    ]


def _budget_line(budget: float | None, at_max: float | None) -> list[str]:
    if budget is None or at_max is None:
        return []
    if at_max > budget:
        return ["", f"> ❌ At max size the estate costs {_usd(at_max)}/h, over its budget of {_usd(budget)}/h."]
    return ["", f"Budget: {_usd(at_max)}/h at max size of {_usd(budget)}/h allowed."]


def _findings_summary(findings: list[Finding] | None, diff: PlanDiff | None) -> list[str]:
    if findings is None:
        return ["Policy: not evaluated."]
    must = mandatory(findings)
    advisory = len(findings) - len(must)
    if not must:
        line = f"✅ **No mandatory policy violations** ({advisory} advisory)."
    else:
        line = f"❌ **{len(must)} mandatory policy violation(s)** ({advisory} advisory)."
    if diff is not None:
        new_must = mandatory(diff.findings_new)
        line += f" New: {len(diff.findings_new)} ({len(new_must)} mandatory); fixed: {len(diff.findings_fixed)}."
        shown = new_must
    else:
        shown = must
    out = [line]
    for f in shown[:SUMMARY_LIST_LIMIT]:
        where = f" on `{f.resource.split('::')[-1]}`" if f.resource else ""
        out.append(
            f"- **{f.pack}/{f.rule}**{where}: {_inline(f.message)}"
            + (f" — fix: {_inline(f.remediation)}" if f.remediation else "")
        )
    if len(shown) > SUMMARY_LIST_LIMIT:
        out.append(f"- … and {len(shown) - SUMMARY_LIST_LIMIT} more (see Policy findings).")
    return out


def _findings_table(findings: list[Finding]) -> str:
    rows = ["| enforcement | rule | resource | message | fix |", "|---|---|---|---|---|"]
    for f in sorted(findings, key=_finding_order):
        res = f"`{f.resource.split('::')[-1]}`" if f.resource else "(stack)"
        rows.append(f"| {f.enforcement} | {f.pack}/{f.rule} | {res} | {_cell(f.message)} | {_cell(f.remediation)} |")
    return "\n".join(rows)


def _finding_order(f: Finding) -> tuple[int, str, str, str]:
    return (0 if f.enforcement == "mandatory" else 1, f.pack, f.rule, f.resource or "")


def _type_table(counts: Counter[str]) -> str:
    return "\n".join(["| resources | type |", "|---:|---|", *(f"| {n} | `{t}` |" for t, n in sorted(counts.items()))])


def _details(summary: str, body: str, open_: bool = False) -> str:
    return f"<details{' open' if open_ else ''}><summary>{summary}</summary>\n\n{body.strip()}\n\n</details>"


# ----------------------------------------------------------------------------------------------- mermaid


def _id(kind: str, *parts: str) -> str:
    """A Mermaid node id: letters, digits and underscores only, prefixed by kind (never a keyword)."""
    return kind + "_" + "__".join(re.sub(r"[^A-Za-z0-9]", "_", p) for p in parts)


def _label(text: str) -> str:
    return '"' + text.replace('"', "#quot;") + '"'


def mermaid(spec: EstateSpec, plan: Plan | None = None) -> str:
    """A flowchart of the estate: sites with their pools, fabrics and storage tiers; tenants and their queues."""
    lines = ["flowchart LR"]
    burst_pools: list[str] = []
    for site in spec.sites:
        where = f"aws {site.region}" if isinstance(site, AwsSite) else "bare metal"
        lines.append(f"  subgraph {_id('site', site.name)}[{_label(f'{site.name} · {where}')}]")
        lines.append("    direction TB")
        for f in site.fabrics:
            lines.append(f"    {_id('fabric', site.name, f.name)}{{{{{_label(_fabric_text(f))}}}}}")
        for pool in site.node_pools:
            lines.append(f"    {_id('pool', pool.name)}[{_label(_pool_text(spec, pool.name))}]")
            if pool.fabric:
                lines.append(f"    {_id('pool', pool.name)} --- {_id('fabric', site.name, pool.fabric)}")
            if isinstance(pool, AwsNodePool) and pool.burst:
                burst_pools.append(pool.name)
        for tier in site.storage:
            lines.append(f"    {_id('storage', site.name, tier.name)}[({_label(_tier_text(tier))})]")
            if isinstance(tier, FsxLustreTier):
                lines.append(f"    {_id('storage', site.name, tier.name)} --- {_id('fabric', site.name, tier.fabric)}")
        lines.append("  end")
    queues = _queues(plan)
    for t in spec.tenants:
        text = f"tenant {t.name}" + (" (untrusted)" if t.trust == "untrusted" else "")
        if queues.get(t.name):
            text += "<br/>queues: " + ", ".join(sorted(queues[t.name]))
        lines.append(f"  {_id('tenant', t.name)}([{_label(text)}])")
        for pool_name, quota in sorted(t.gpu_quota.items()):
            lines.append(f"  {_id('tenant', t.name)} -->|{_label(f'{quota} GPUs')}| {_id('pool', pool_name)}")
        if t.burst and spec.burst is not None:
            for pool_name in burst_pools:
                lines.append(f"  {_id('tenant', t.name)} -.->|{_label('burst')}| {_id('pool', pool_name)}")
    return "\n".join(lines)


def mermaid_block(spec: EstateSpec, plan: Plan | None = None) -> str:
    return "```mermaid\n" + mermaid(spec, plan) + "\n```"


def _pool_text(spec: EstateSpec, name: str) -> str:
    pool = spec.pool(name)
    model = spec.pool_gpu_model(name).id
    per_node = spec.pool_gpus_per_node(name)
    if isinstance(pool, AwsNodePool):
        nodes = pool.scaling.max
        what = f"{pool.instance_type}<br/>{model} × {per_node} × {nodes} max nodes = {nodes * per_node} GPUs"
        if pool.burst:
            what += " (burst: 0 outside windows)"
    else:
        site = spec.site_of_pool(name)
        assert isinstance(site, BaremetalSite)
        servers = len(spec.pool_servers(site, pool))
        what = f"{model} × {per_node} × {servers} servers = {spec.pool_gpu_capacity(name)} GPUs"
    if pool.sharing.mode == "mig":
        what += f"<br/>MIG {pool.sharing.mig_profile}: {spec.pool_gpu_units(name)} slices"
    elif pool.sharing.mode == "time-slicing":
        what += f"<br/>time-sliced × {pool.sharing.replicas}"
    dedicated = f" · dedicated to {pool.dedicated_to}" if pool.dedicated_to else ""
    return f"pool {name} · {pool.role}{dedicated}<br/>{what}"


def _fabric_text(f: EfaFabric | InfinibandFabric | RoceFabric) -> str:
    if isinstance(f, EfaFabric):
        return f"fabric {f.name} · EFA {f.availability_zone}"
    if isinstance(f, InfinibandFabric):
        return f"fabric {f.name} · InfiniBand"
    return f"fabric {f.name} · RoCE"


def _tier_text(t: Any) -> str:
    if isinstance(t, FsxLustreTier):
        return f"{t.name} · FSx Lustre {t.capacity_gib} GiB, {t.throughput_gbps:.1f} GB/s"
    if isinstance(t, ParallelFsTier):
        return f"{t.name} · parallel FS {t.throughput_gbps:g} GB/s"
    kinds = {"scratch": "node NVMe scratch", "efs": "EFS", "s3": "S3", "nfs": "NFS", "s3-onprem": "on-prem S3"}
    return f"{t.name} · {kinds.get(t.kind, t.kind)}"


def _queues(plan: Plan | None) -> dict[str, set[str]]:
    """LocalQueue names per namespace (= tenant), read from the plan's Kueue objects when there is a plan."""
    out: dict[str, set[str]] = {}
    for r in plan.kubernetes_objects() if plan else []:
        if r.inputs.get("kind") == "LocalQueue":
            meta = r.inputs.get("metadata") or {}
            ns, name = meta.get("namespace"), meta.get("name")
            if isinstance(ns, str) and isinstance(name, str):
                out.setdefault(ns, set()).add(name)
    return out


# ------------------------------------------------------------------------------------------------ format


def _usd(v: float | None, digits: int = 2) -> str:
    if v is None:
        return "unpriced"
    return f"${v:,.{digits}f}"


def _usd_or(v: float | None) -> str:
    return "-" if v is None else _usd(v)


def _month(v: float | None) -> float | None:
    return None if v is None else v * HOURS


def _signed(v: float | None, digits: int = 2) -> str:
    if v is None:
        return "-"
    if abs(v) < 0.005:
        return "±$0"
    return ("+" if v > 0 else "−") + _usd(abs(v), digits)


def _inline(text: str) -> str:
    return " ".join(str(text).split())


def _cell(text: str) -> str:
    return _inline(text).replace("|", "\\|")


def _code(text: str) -> str:
    return html.escape(text).replace("|", "&#124;")


def _value(v: Any) -> str:
    from gpufleet.review.diff import MISSING

    if v is MISSING:
        return "*(absent)*"
    text = json.dumps(v, sort_keys=True, default=str) if not isinstance(v, str) else v
    if len(text) > 120:
        text = text[:117] + "…"
    return f"<code>{_code(text)}</code>"


def render_diff_text(diff: PlanDiff, console: Console) -> None:
    """The diff for a terminal: counts, replacements, cost delta, findings, then each change."""
    console.print(f"[bold]{diff.project}/{diff.stack}[/bold]: {diff.base_label} → {diff.head_label}")
    if diff.base_missing:
        console.print("the stack does not exist at the base revision: every resource is new")
    console.print(
        f"[green]+{len(diff.added)}[/green] to add  [yellow]~{len(diff.changed)}[/yellow] to change  "
        f"[red]-{len(diff.removed)}[/red] to delete  [magenta]{len(diff.replaced)}[/magenta] to replace"
    )
    for r in diff.replaced:
        prot = " (protected: `pulumi up` will fail)" if r.protected else ""
        console.print(
            f"[magenta]REPLACE[/magenta] {r.removed.type} {r.removed.name} → {r.added.name}: rename without alias{prot}"
        )
    if diff.cost_total is not None:
        c = diff.cost_total
        for lv in ("desired", "max"):
            console.print(
                f"cost at {lv}: {_usd_or(c.base.get(lv))}/h → {_usd_or(c.head.get(lv))}/h ({_signed(c.delta(lv))}/h, "
                f"{_signed(_month(c.delta(lv)), 0)}/month)"
            )
    if diff.findings is None:
        console.print("policy: not evaluated")
    else:
        console.print(
            f"policy: {len(mandatory(diff.findings))} mandatory violation(s); new {len(diff.findings_new)}, "
            f"fixed {len(diff.findings_fixed)}"
        )
        for f in diff.findings_new:
            console.print(f"  [red]new[/red] {f.enforcement} {f.pack}/{f.rule}: {f.message}")
        for f in diff.findings_fixed:
            console.print(f"  [green]fixed[/green] {f.pack}/{f.rule}: {f.message}")
    for res in diff.added:
        console.print(f"[green]+ {res.type} {res.name}[/green]")
    for res in diff.removed:
        console.print(f"[red]- {res.type} {res.name}[/red]")
    for ch in diff.changed:
        console.print(f"[yellow]~ {ch.resource.type} {ch.resource.name}[/yellow]")
        for p in ch.changes:
            console.print(f"    {p.path}: {_plain(p.before)} → {_plain(p.after)}", markup=False)
    for n in diff.notes:
        console.print(f"[dim]{n}[/dim]")


def _plain(v: Any) -> str:
    from gpufleet.review.diff import MISSING

    if v is MISSING:
        return "(absent)"
    text = v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)
    return text if len(text) <= 120 else text[:117] + "…"
