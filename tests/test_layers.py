"""Data flows one way through the tool: engine -> review -> render -> cli (docs/architecture.md, Layers).

Every import in gpufleet/ (also the ones inside functions) is read from the source; a layer may import the
layers before it and never one after it, so the engine only synthesizes and the review never renders.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT

# Each layer, and the gpufleet packages it must not import.
LATER: dict[str, tuple[str, ...]] = {
    "engine": ("review", "render", "cli", "sizing", "burst", "catalog", "verify"),
    "review": ("render", "cli"),
    "sizing": ("render", "cli"),
    "burst": ("render", "cli"),
    "catalog": ("render", "cli"),
    "verify": ("render", "cli"),
    "render": ("cli",),
}


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


@pytest.mark.parametrize("layer", sorted(LATER))
def test_a_layer_never_imports_a_later_one(layer: str) -> None:
    banned = tuple(f"gpufleet.{later}" for later in LATER[layer])
    for path in sorted((ROOT / "gpufleet" / layer).rglob("*.py")):
        wrong = sorted(m for m in imports(path) if m.startswith(banned))
        assert not wrong, f"{path.relative_to(ROOT)} imports {', '.join(wrong)}"


def test_components_never_import_the_tool() -> None:
    for path in sorted((ROOT / "components").rglob("*.py")):
        assert not any(m.startswith("gpufleet") for m in imports(path)), path.relative_to(ROOT)
