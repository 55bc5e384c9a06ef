"""The README stays short and starts a newcomer; the reference in docs/ holds together.

The README says what gpufleet is, sets it up, shows each workflow once and links into docs/ (issue #36: at most
160 lines). Every relative link in the README, docs/ and benchmarks/README.md names a file that exists, and an
anchor names a heading of that file (GitHub's heading slugs).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

README = ROOT / "README.md"
PAGES = [README, ROOT / "benchmarks" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MAX_README_LINES = 160


def slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.MULTILINE | re.DOTALL)  # no headings in code
    return {slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, flags=re.MULTILINE)}


def broken_links(path: Path) -> list[str]:
    """Each relative link of `path` whose file or anchor does not exist."""
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.MULTILINE | re.DOTALL)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading #{anchor} in {linked.name}")
    return broken


def test_readme_is_at_most_160_lines() -> None:
    lines = len(README.read_text().splitlines())
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines; move reference text into docs/"


def test_readme_links_into_every_page_of_docs() -> None:
    text = README.read_text()
    unlinked = [p.name for p in sorted((ROOT / "docs").glob("*.md")) if f"](docs/{p.name}" not in text]
    assert unlinked == []


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path: Path) -> None:
    assert broken_links(path) == []


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\n## Where `up` runs\n\n[x](b.md) [y](a.md#nowhere) [z](#where-up-runs)\n")
    assert broken_links(tmp_path / "a.md") == ["b.md: no such file", "a.md#nowhere: no heading #nowhere in a.md"]


def test_readme_set_up_commands_are_the_ones_ci_runs() -> None:
    """A fresh clone is set up and tested with the README's two commands: `.ci/run` installs the same extras and
    runs the README's first preview."""
    text = README.read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert (
        'python3 -m venv .venv && .venv/bin/pip install -e ".[dev]" && .venv/bin/gpufleet preview --stack hybrid'
        in text
    )
    assert "```sh\nbash .ci/run\n```" in text
    assert 'pip install --quiet -e ".[dev]"' in ci and ".venv/bin/gpufleet preview --stack hybrid" in ci
