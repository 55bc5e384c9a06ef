"""The first-up simulation as text (preview, check) and as a pull-request comment section (markdown)."""

from __future__ import annotations

from gpufleet.review.reality.first_up import CHECKS, FirstUp

WHAT = {
    "chart": "chart could not be rendered",
    "reach": "API not reachable",
    "crd": "custom resource before its CRD",
    "namespace": "object before its namespace",
    "node": "workload with no node to run on",
    "schema": "invalid against the real schema",
}


def summary(result: FirstUp) -> str:
    rendered = sum(result.rendered.values())
    head = f"{rendered} objects rendered from {len(result.rendered)} charts, {result.checked} objects checked"
    if not result.problems:
        return f"first up: no problems ({head})"
    counts = ", ".join(f"{n} {c}" for c, n in result.counts().items() if n)
    return f"first up: {len(result.problems)} problems ({counts}; {head})"


def text(result: FirstUp) -> str:
    """The verdict and every problem, then what was not checked and the notes."""
    return problems_text(result) + notes_text(result)


def problems_text(result: FirstUp) -> str:
    """The verdict line and every problem: the part of a report's summary."""
    return "\n".join([summary(result), *(f"  [{p.check}] {p.message}" for p in result.problems)]) + "\n"


def notes_text(result: FirstUp) -> str:
    """What the simulation did not check, and its notes (empty when none): detail after the summary."""
    lines = [*(f"  unchecked: {u}" for u in result.unchecked), *(f"  note: {n}" for n in result.notes)]
    return "".join(f"{line}\n" for line in lines)


def verdict(result: FirstUp) -> str:
    """One line for the head of a pull-request comment."""
    return ("✅ " if not result.problems else "❌ ") + summary(result)


def markdown(result: FirstUp) -> str:
    """A `### First up` section: a verdict line, then a table of problems per check (folded when long)."""
    out = ["### First up (simulated)", "", verdict(result)]
    if result.problems:
        rows = ["| check | resource | missing | problem |", "|---|---|---|---|"]
        order = {c: i for i, c in enumerate(CHECKS)}
        for p in sorted(result.problems, key=lambda p: order[p.check]):
            rows.append(
                f"| {p.check} ({WHAT[p.check]}) | `{_cell(p.name)}` | {_cell(p.missing)} | {_cell(p.message)} |"
            )
        body = "\n".join(rows)
        out += [
            "",
            body if len(result.problems) <= 10 else f"<details><summary>problems</summary>\n\n{body}\n\n</details>",
        ]
    if result.notes:
        out += ["", *(f"- note: {_cell(n)}" for n in result.notes)]
    return "\n".join(out) + "\n"


def _cell(value: str) -> str:
    return value.replace("|", "\\|").replace("\n", " ")
