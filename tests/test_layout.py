"""House rules for the source (components/, model/, policies/, gpufleet/): no module over 500 lines, and module
docstrings a reader takes in at once (a contract and a few reasons, at most 150 words; measurements go in
benchmarks/)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import ROOT

LIMIT = 500
DOCSTRING_WORDS = 150
PACKAGES = ("components", "model", "policies", "gpufleet")


def _modules() -> list[Path]:
    return [path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))]


def test_no_module_of_components_policies_or_gpufleet_is_over_500_lines() -> None:
    long = {str(path.relative_to(ROOT)): n for path in _modules() if (n := len(path.read_text().splitlines())) > LIMIT}
    assert long == {}


def test_no_module_docstring_is_over_150_words() -> None:
    long = {
        str(path.relative_to(ROOT)): n
        for path in _modules()
        if (n := len((ast.get_docstring(ast.parse(path.read_text())) or "").split())) > DOCSTRING_WORDS
    }
    assert long == {}


def test_no_module_docstring_holds_a_measurement() -> None:
    # Timings belong in benchmarks/README.md: "1.3 s", "250 ms", "2.16x" in a docstring is a lab note.
    timing = re.compile(r"\b\d+(\.\d+)?\s?(ms|s|seconds|minutes)\b|\b\d+\.\d+x\b")
    found = {
        str(path.relative_to(ROOT)): m.group(0)
        for path in _modules()
        if (m := timing.search(ast.get_docstring(ast.parse(path.read_text())) or ""))
    }
    assert found == {}
