"""What every renderer shares: money and text formatting, and the size-limited pull-request comment.

Markdown comments are one per stack, found again by a stable marker (`<!-- gpufleet:plan:<project>/<stack> -->`)
so a workflow can replace its own comment. The summary comes first (resource counts, cost, mandatory
violations); details are folded in `<details>`. A comment stays under `MAX_COMMENT` characters: detail sections
are dropped whole from the tail and a note says what was left out; the summary always survives.
"""

from __future__ import annotations

import html
from collections import Counter
from dataclasses import dataclass
from fractions import Fraction

from model.pricing import HOURS_PER_MONTH

MAX_COMMENT = 64_000  # GitHub refuses comments over 65,536 characters; keep a margin
SUMMARY_LIST_LIMIT = 10


def marker(project: str, stack: str) -> str:
    """The stable HTML comment a workflow searches for to update this stack's comment."""
    return f"<!-- gpufleet:plan:{project}/{stack} -->"


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


def details(summary: str, body: str, open_: bool = False) -> str:
    return f"<details{' open' if open_ else ''}><summary>{summary}</summary>\n\n{body.strip()}\n\n</details>"


# ------------------------------------------------------------------------------------------------ money


def usd(v: float | Fraction | None, digits: int = 2) -> str:
    """Dollars with thousands separators; "unpriced" for a missing price (the sizing report's exact fractions too)."""
    if v is None:
        return "unpriced"
    return f"${float(v):,.{digits}f}"


def usd_total(v: float | None, complete: bool, digits: int = 2) -> str:
    """A total: "unknown" when nothing in it is priced, "≥ $X" when it leaves something out, never $0 for unknown."""
    if v is None:
        return "unknown"
    return usd(v, digits) if complete else f"≥ {usd(v, digits)}"


def usd_or_dash(v: float | None) -> str:
    return "-" if v is None else usd(v)


def month(v: float | None) -> float | None:
    """An hourly figure over a month (`model.pricing.HOURS_PER_MONTH`)."""
    return None if v is None else v * HOURS_PER_MONTH


def signed(v: float | None, digits: int = 2) -> str:
    if v is None:
        return "-"
    if abs(v) < 0.005:
        return "±$0"
    return ("+" if v > 0 else "−") + usd(abs(v), digits)


# ------------------------------------------------------------------------------------------------- text


def inline(text: str) -> str:
    """One line: runs of whitespace (newlines too) become one space."""
    return " ".join(str(text).split())


def cell(text: str) -> str:
    """A Markdown table cell: one line, pipes escaped."""
    return inline(text).replace("|", "\\|")


def code(text: str) -> str:
    """Text for an HTML <code> element inside a table cell."""
    return html.escape(text).replace("|", "&#124;")


def short_key(resource: str) -> str:
    """The name part of a logical key (`type$type::name` -> `name`)."""
    return resource.split("::")[-1]
