"""Mutations of the example inputs for the property-based bad-input test and its larger run (benchmarks/fuzz_inputs.py).

A mutation is applied to the example stacks' `config:` mapping (typos, deletions, type swaps, huge/negative/non-finite
numbers, unicode, control characters and brackets, duplicate names, dangling references), to the stack file's text
(bad encodings, deep nesting, alias bombs, truncation) or to the command's arguments (bad stack names and paths).
"""

from __future__ import annotations

import copy
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from tests.cli.badinput import READERS, STACK, WORKLOADS, Answer, invoke, snapshot, stack_project
from tests.conftest import EXAMPLES, example_config

ODD_TEXT = ["[/]", "[/x]", "[bold]", "\x00", "\x07", "\u202e", "é", "🚀", "", " ", "a" * 5000, "${x}", "%s", "'", '"']
ODD_NUMBERS: list[Any] = [10**400, 10**29, -1, -(10**20), 0, float("inf"), float("-inf"), float("nan"), 1e308, 0.5]
ODD_VALUES: list[Any] = [*ODD_TEXT, *ODD_NUMBERS, None, True, [], {}, [None], {"x": 1}, "2027-02-30", "0.0.0.0/0"]


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key and list position inside `value`, as a tuple path."""
    out: list[tuple[Any, ...]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            out += [(*prefix, k), *paths(v, (*prefix, k))]
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += [(*prefix, i), *paths(v, (*prefix, i))]
    return out


def _parent(root: Any, path: tuple[Any, ...]) -> Any:
    node = root
    for part in path[:-1]:
        node = node[part]
    return node


def mutate(config: dict[str, Any], path: tuple[Any, ...], how: str, value: Any) -> dict[str, Any]:
    """A copy of `config` with one change at `path`: set, delete, typo'd key or duplicated list item."""
    out = copy.deepcopy(config)
    parent, last = _parent(out, path), path[-1]
    match how:
        case "set":
            parent[last] = value
        case "delete":
            del parent[last]
        case "typo" if isinstance(parent, dict):
            parent[f"{last}x"] = parent.pop(last)
        case "duplicate" if isinstance(parent, list):
            parent.append(copy.deepcopy(parent[last]))
        case _:
            parent[last] = value
    return out


TEXT_DAMAGE = {
    "latin-1": lambda text: text.encode() + "# caf\xe9\n".encode("latin-1"),
    "utf-16": lambda text: text.encode("utf-16"),
    "truncated": lambda text: text[: len(text) // 2].encode(),
    "deep": lambda text: (text + "  gpufleet:x: " + "[" * 2000 + "]" * 2000 + "\n").encode(),
    "bomb": lambda text: (
        text
        + "  gpufleet:x:\n    a0: &a0 [x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"    a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 10))
    ).encode(),
    "nul": lambda text: text.replace("name:", "name: \x00", 1).encode(),
    "tabs": lambda text: text.replace("  ", "\t", 3).encode(),
}


@dataclass
class Case:
    stack: str
    config: dict[str, Any] | None  # None: `data` is the stack file
    data: bytes | None = None
    stack_arg: str = STACK


@st.composite
def cases(draw: st.DrawFn) -> Case:
    stack = draw(st.sampled_from(EXAMPLES))
    config = example_config(stack)
    kind = draw(st.sampled_from(["value", "value", "value", "text", "argument"]))
    if kind == "text":
        text = yaml.safe_dump({"config": config}, sort_keys=False)
        return Case(stack, None, TEXT_DAMAGE[draw(st.sampled_from(sorted(TEXT_DAMAGE)))](text))
    if kind == "argument":
        return Case(stack, config, stack_arg=draw(st.sampled_from(["[/]", "a\x00b", "x" * 5000, "../x", ""])))
    path = draw(st.sampled_from(paths(config)))
    how = draw(st.sampled_from(["set", "set", "delete", "typo", "duplicate"]))
    value = draw(st.sampled_from(ODD_VALUES) | st.text(max_size=20) | st.integers() | st.floats())
    return Case(stack, mutate(config, path, how, value))


@dataclass
class Outcome:
    command: str
    answer: Answer
    seconds: float
    peak_mb: float


def run_case(case: Case, tmp: Path, commands: list[str], trace_memory: bool = False) -> list[Outcome]:
    """Every reader in `commands` on the case; the project must be left exactly as it was. Tracing memory
    (tracemalloc) slows everything several times over: the larger run does it, the quick test does not."""
    project = stack_project(tmp, case.config or {}, case.data)
    before = snapshot(project)
    out = []
    for command in commands:
        args = [case.stack_arg if a == STACK else a for a in READERS[command]]
        if trace_memory:
            tracemalloc.start()
        start = time.perf_counter()
        answer = invoke(args, project)
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1] / 1e6 if trace_memory else 0.0
        if trace_memory:
            tracemalloc.stop()
        out.append(Outcome(command, answer, seconds, peak))
        assert snapshot(project) == before, f"{command} wrote into the project"
    return out


def check_outcome(o: Outcome, project: Path, seconds: float, peak_mb: float) -> None:
    """Exit 0, 1 or 2; no traceback or internal error; a file, YAML path or argument named on exit 2; bounded."""
    a = o.answer
    text = a.stdout + a.stderr
    assert a.exception is None, f"{o.command}: {a.exception!r}"
    assert "Traceback" not in text and "internal error" not in text, f"{o.command}: {text[-800:]}"
    assert a.code in (0, 1, 2), f"{o.command} exited {a.code}: {a.stderr[-800:]}"
    if a.code == 2:
        named = (str(project), str(WORKLOADS), "--stack", "--at", "--project")
        assert any(n in a.stderr for n in named), f"{o.command}: nothing named in {a.stderr[-800:]}"
    assert o.seconds < seconds, f"{o.command} took {o.seconds:.1f} s"
    assert o.peak_mb < peak_mb, f"{o.command} used {o.peak_mb:.0f} MB"
