"""Helpers of the bad-input tests: a throwaway project with a stack file, every command that reads it, and what a
bad-input answer must look like (exit 2, the file named, no traceback, nothing written)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from gpufleet.cli.app import app
from tests.conftest import ROOT, write_project

STACK = "test"
WORKLOADS = ROOT / "examples" / "workloads.yaml"

# Every command that reads a stack file without reaching a cloud (burst open/close/reconcile need Pulumi and AWS;
# they read the stack through the same load_state as burst status). preview and check are judged on a fast path:
# the stack file is refused before the program is synthesized.
READERS: dict[str, list[str]] = {
    "preview": ["preview", "-s", STACK],
    "check": ["check", "-s", STACK],
    "cost": ["cost", "-s", STACK, "--at", "2026-11-20T12:00:00Z"],
    "burst status": ["burst", "status", "-s", STACK],
    "size": ["size", str(WORKLOADS), "-s", STACK],
}


@dataclass
class Answer:
    code: int
    stdout: str
    stderr: str
    exception: BaseException | None


def invoke(args: list[str], project: Path | None = None) -> Answer:
    extra = ["-C", str(project)] if project is not None else []
    result = CliRunner().invoke(app, [*args, *extra])
    exc = result.exception if not isinstance(result.exception, SystemExit) else None
    return Answer(result.exit_code, result.stdout, result.stderr, exc)


def snapshot(tree: Path) -> dict[str, tuple[int, int]]:
    """Every file under `tree` with its size and mtime: a command that writes nothing leaves this unchanged."""
    out = {}
    for dirpath, _, files in os.walk(tree):
        for f in files:
            st = os.lstat(Path(dirpath) / f)
            out[str(Path(dirpath) / f)] = (st.st_size, st.st_mtime_ns)
    return out


def stack_project(tmp: Path, config: dict[str, Any] | None = None, text: str | bytes | None = None) -> Path:
    """A project whose stack file holds `config` (as YAML), or exactly `text`."""
    write_project(tmp, config or {})
    path = tmp / "stacks" / f"Pulumi.{STACK}.yaml"
    if text is not None:
        path.write_bytes(text.encode() if isinstance(text, str) else text)
    return tmp


def assert_bad_input(answer: Answer, *names: str) -> None:
    """Exit 2, no traceback, and every line names the file/argument and YAML path given in `names`."""
    assert answer.exception is None, repr(answer.exception)
    assert "Traceback" not in answer.stdout + answer.stderr
    assert answer.code == 2, (answer.code, answer.stderr[-600:])
    for name in names:
        assert name in answer.stderr, (name, answer.stderr[-600:])


def dump(config: dict[str, Any]) -> str:
    return yaml.safe_dump({"config": config}, sort_keys=False)
