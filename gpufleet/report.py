"""Renderers for a plan: text (terminal), json (whole plan, for other tools)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from rich.console import Console
from rich.tree import Tree

from gpufleet.plan import Plan, PlanResource


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


def render_text(plan: Plan, console: Console) -> None:
    console.print(component_tree(plan))
    counts = plan.type_counts()
    console.print(f"\n[bold]Resources by type[/bold] ({sum(counts.values())})")
    for t, n in sorted(counts.items()):
        console.print(f"  {n:>5}  {t}")
    for w in plan.warnings:
        console.print(f"[yellow]warning:[/yellow] {w}")


def render_json(plan: Plan, extra: dict[str, Any] | None = None) -> str:
    doc = plan.to_dict()
    doc.update(extra or {})
    return json.dumps(doc, indent=1, sort_keys=True)


def render_markdown(plan: Plan) -> str:
    counts = plan.type_counts()
    lines = [
        f"### gpufleet preview: `{plan.project}/{plan.stack}`",
        "",
        f"{sum(counts.values())} resources",
        "",
        "| resources | type |",
        "|---:|---|",
        *(f"| {n} | `{t}` |" for t, n in sorted(counts.items())),
    ]
    lines += [f"> warning: {w}" for w in plan.warnings]
    return "\n".join(lines) + "\n"
