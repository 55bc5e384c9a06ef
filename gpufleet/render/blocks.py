"""Documents as a list of blocks (headings, paragraphs, tables, code), rendered to Markdown or plain text.

A report built once as blocks says the same thing in both formats.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_never


@dataclass(frozen=True)
class Heading:
    level: int
    text: str


@dataclass(frozen=True)
class Para:
    text: str


@dataclass(frozen=True)
class Table:
    headers: list[str]
    rows: list[list[str]]


@dataclass(frozen=True)
class Code:
    lang: str
    text: str


Block = Heading | Para | Table | Code


def blocks_markdown(blocks: list[Block]) -> str:
    lines: list[str] = []
    for b in blocks:
        match b:
            case Heading():
                lines += [f"{'#' * (b.level + 1)} {b.text}", ""]
            case Para():
                lines += [b.text, ""]
            case Table():
                lines += [
                    "| " + " | ".join(b.headers) + " |",
                    "|" + "---|" * len(b.headers),
                    *("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in b.rows),
                    "",
                ]
            case Code():
                lines += [f"```{b.lang}", b.text.rstrip("\n"), "```", ""]
            case _:
                assert_never(b)
    return "\n".join(lines).rstrip("\n") + "\n"


def blocks_text(blocks: list[Block]) -> str:
    lines: list[str] = []
    for b in blocks:
        match b:
            case Heading():
                if lines:
                    lines.append("")
                lines += [b.text, ("=" if b.level == 1 else "-" if b.level == 2 else "·") * len(b.text)]
            case Para():
                lines.append(b.text)
            case Table():
                widths = [max(len(x) for x in col) for col in zip(b.headers, *b.rows, strict=False)]
                for row in [b.headers, *b.rows]:
                    lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
            case Code():
                lines += ["  " + line for line in b.text.rstrip("\n").splitlines()]
            case _:
                assert_never(b)
    return "\n".join(lines) + "\n"
