"""Policy findings as text, Markdown and JSON: one renderer per format, used by preview, check and diff.

Every renderer walks a `Findings` collection, so all of them show findings in its one order and take the
mandatory count from it.
"""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from gpufleet.render.common import SUMMARY_LIST_LIMIT, cell, inline, short_key
from gpufleet.review.findings import Finding, Findings

# ------------------------------------------------------------------------------------------------- text


def finding_lines(f: Finding, prefix: str = "") -> list[str]:
    """One finding for a terminal (rich markup): enforcement, pack/rule, message, resource; then the fix."""
    colour = "red" if f.enforcement == "mandatory" else "yellow"
    where = f" [dim]{escape(f.resource)}[/dim]" if f.resource else ""
    lines = [
        f"  {prefix}[{colour}]{f.enforcement}[/{colour}] {escape(f'{f.pack}/{f.rule}')}: {escape(f.message)}{where}"
    ]
    if f.remediation:
        lines.append(f"      fix: {escape(f.remediation)}")
    return lines


def verdict_line(findings: Findings, scope: str) -> str:
    """`Policy (<scope>): passed|failed — <n> mandatory, <m> advisory` (rich markup)."""
    verdict = "[green]passed[/green]" if findings.passed else "[red]failed[/red]"
    counts = f"{len(findings.mandatory)} mandatory, {len(findings.advisory)} advisory"
    if not findings:
        counts = f"no violations ({counts})"
    return f"[bold]Policy[/bold]{escape(f' ({scope})') if scope else ''}: {verdict} — {counts}"


# --------------------------------------------------------------------------------------------- markdown


def _bullet(f: Finding) -> str:
    where = f" on `{short_key(f.resource)}`" if f.resource else ""
    fix = f" — fix: {inline(f.remediation)}" if f.remediation else ""
    return f"- **{f.pack}/{f.rule}**{where}: {inline(f.message)}{fix}"


def findings_summary(
    findings: Findings | None, new: Findings | None = None, fixed: Findings | None = None
) -> list[str]:
    """The verdict line of a comment and the mandatory findings it lists (the new ones, in a diff)."""
    if findings is None:
        return ["Policy: not evaluated."]
    must = findings.mandatory
    advisory = len(findings.advisory)
    if not must:
        line = f"✅ **No mandatory policy violations** ({advisory} advisory)."
    else:
        line = f"❌ **{len(must)} mandatory policy violation(s)** ({advisory} advisory)."
    shown = must
    if new is not None:
        shown = new.mandatory
        line += f" New: {len(new)} ({len(shown)} mandatory); fixed: {len(fixed or [])}."
    out = [line]
    out += [_bullet(f) for f in shown[:SUMMARY_LIST_LIMIT]]
    if len(shown) > SUMMARY_LIST_LIMIT:
        out.append(f"- … and {len(shown) - SUMMARY_LIST_LIMIT} more (see Policy findings).")
    return out


def findings_table(findings: Findings) -> str:
    rows = ["| enforcement | rule | resource | message | fix |", "|---|---|---|---|---|"]
    for f in findings:
        res = f"`{short_key(f.resource)}`" if f.resource else "(stack)"
        rows.append(f"| {f.enforcement} | {f.pack}/{f.rule} | {res} | {cell(f.message)} | {cell(f.remediation)} |")
    return "\n".join(rows)


# ------------------------------------------------------------------------------------------------- json


def findings_json(findings: Findings) -> dict[str, Any]:
    """Verdict, counts, and the findings by pack and enforcement (mandatory first)."""
    packs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for f in findings:
        packs.setdefault(f.pack, {}).setdefault(f.enforcement, []).append(f.to_dict())
    return {
        "passed": findings.passed,
        "mandatory": len(findings.mandatory),
        "advisory": len(findings.advisory),
        "packs": packs,
    }
