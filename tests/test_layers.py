"""The layers of the tree and the one way data flows through them (docs/architecture.md).

Every import is read from the source, including the ones inside functions: a lazy import is still an import.
- `model` is pure: it imports nothing of `components`, `policies` or `gpufleet`.
- `policies` import `model` only, of the project's packages.
- `gpufleet` runs the program (gpufleet.engine.synth, by path) and the policy packs (gpufleet.review.check) but
  imports no Pulumi component module.
- Inside gpufleet, a layer imports the layers before it and never one after it: engine -> review -> render -> cli.
- No import cycle anywhere. Imports under `if TYPE_CHECKING:` never run, so they count for the layers, not for
  cycles.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGES = ("components", "gpufleet", "model", "policies")

# Each gpufleet layer, and the gpufleet packages it must not import.
LATER: dict[str, tuple[str, ...]] = {
    "engine": ("review", "render", "cli", "sizing", "burst", "catalog", "verify"),
    "review": ("render", "cli"),
    "sizing": ("render", "cli"),
    "burst": ("render", "cli"),
    "catalog": ("render", "cli"),
    "verify": ("render", "cli"),
    "showback": ("render", "cli"),
    "render": ("cli",),
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(node: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (a.name for a in node.names)
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            base = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
            target = ".".join([*base, *([node.module] if node.module else [])])
        else:
            target = node.module or ""
        yield target
        yield from (f"{target}.{a.name}" for a in node.names)  # `from pkg import module`


def imports(path: Path, *, type_checking: bool = True) -> set[str]:
    """Every module `path` imports, anywhere in it (inside functions too); `type_checking=False` leaves out the
    imports under `if TYPE_CHECKING:`."""
    module, is_package = module_name(path), path.name == "__init__.py"
    found: set[str] = set()

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and not type_checking and _type_checking(child):
                for other in child.orelse:
                    walk(other)
                continue
            found.update(_imported(child, module, is_package))
            walk(child)

    walk(ast.parse(path.read_text()))
    return {m for m in found if m}


def project_imports(path: Path, *, type_checking: bool = True) -> set[str]:
    """The project modules `path` imports (a name imported from a module counts as that module)."""
    known = modules()
    out = set()
    for m in imports(path, type_checking=type_checking):
        while m and m not in known:
            m = m.rpartition(".")[0]
        if m and m != module_name(path):
            out.add(m)
    return out


def _in(package: str, module: str) -> bool:
    return module == package or module.startswith(f"{package}.")


@pytest.mark.parametrize("package", ["model", "policies", "gpufleet"])
def test_each_package_imports_only_the_layers_below_it(package: str) -> None:
    allowed = {"model": ("model",), "policies": ("model", "policies"), "gpufleet": ("model", "policies", "gpufleet")}[
        package
    ]
    wrong = sorted(
        f"{module_name(path)} imports {m}"
        for path in sorted((ROOT / package).rglob("*.py"))
        for m in project_imports(path)
        if not any(_in(a, m) for a in allowed)
    )
    assert wrong == []


def test_components_never_import_the_tool_or_the_policies() -> None:
    wrong = sorted(
        f"{module_name(path)} imports {m}"
        for path in sorted((ROOT / "components").rglob("*.py"))
        for m in project_imports(path)
        if _in("gpufleet", m) or _in("policies", m)
    )
    assert wrong == []


@pytest.mark.parametrize("layer", sorted(LATER))
def test_a_gpufleet_layer_never_imports_a_later_one(layer: str) -> None:
    banned = tuple(f"gpufleet.{later}" for later in LATER[layer])
    for path in sorted((ROOT / "gpufleet" / layer).rglob("*.py")):
        wrong = sorted(m for m in imports(path) if m.startswith(banned))
        assert not wrong, f"{path.relative_to(ROOT)} imports {', '.join(wrong)}"


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_import_cycles_are_found() -> None:
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_anywhere() -> None:
    graph = {m: project_imports(p, type_checking=False) for m, p in modules().items()}
    assert import_cycles(graph) == []
