"""Loading the estate from stack config, with one clear message per problem (file and YAML path).

Used by the Pulumi program (config from the engine) and by the CLI (stack files read from disk).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from components.model.catalog import CatalogError
from components.model.spec import BurstLedgerEntry, BurstWindow, EstateSpec, SpecFieldError, SpecProblems
from components.model.yaml_text import safe_load

ESTATE_KEY = "gpufleet:estate"
WINDOW_KEY = "gpufleet:burstWindow"
LEDGER_KEY = "gpufleet:burstLedger"  # past burst windows (spend so far); written by `gpufleet burst`

# Discriminator values pydantic inserts into error locations of tagged unions; they are not YAML keys.
_UNION_TAGS = frozenset(
    {"aws", "baremetal", "efa", "infiniband", "roce", "scratch", "fsx-lustre", "efs", "s3", "nfs",
     "parallel-fs", "s3-onprem", "vpn", "transit-gateway", "existing", "public"}
)  # fmt: skip
_UNION_FIELDS = frozenset({"interconnect"})  # tagged unions held by a key, not a list


@dataclass
class SpecError(Exception):
    """Bad input: one message per problem, each naming the file and the YAML path."""

    problems: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(self.problems)


def yaml_path(base: str, loc: tuple[int | str, ...]) -> str:
    out = base
    for i, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
        elif (
            part in _UNION_TAGS and i > 0 and (isinstance(loc[i - 1], int) or loc[i - 1] in _UNION_FIELDS)
        ) or part.startswith("function-"):
            continue
        else:
            out += f".{part}"
    return out


SCHEMA_HINT = "`gpufleet schema` lists the allowed keys"


def problem_line(source: str, base: str, path: str, message: str) -> str:
    """The one shape of an error line: `file: yaml.path: message` (the path is `base` + `path`)."""
    where = ".".join(x for x in (base, path) if x)
    return f"{source}: {where or '(top level)'}: {message}"


def validation_problems(err: ValidationError, source: str, base: str, hint: str = SCHEMA_HINT) -> list[str]:
    """One `file: yaml.path: message` line per pydantic error; `base` prefixes every path ("" for the top level)."""
    out = []
    for e in err.errors():
        ctx_err = (e.get("ctx") or {}).get("error")
        if isinstance(ctx_err, SpecProblems):
            out += [problem_line(source, base, p.path, p.message) for p in ctx_err.problems]
            continue
        if isinstance(ctx_err, SpecFieldError):
            out.append(problem_line(source, base, ctx_err.path, ctx_err.message))
            continue
        msg = e["msg"].removeprefix("Value error, ")
        if isinstance(ctx_err, CatalogError):
            msg = str(ctx_err).strip("'\"")
        if e["type"] == "extra_forbidden":
            msg = f"unknown key (check the spelling; {hint})"
        elif e["type"] == "missing":
            msg = "required key is missing"
        out.append(problem_line(source, "", yaml_path(base, tuple(e["loc"])).lstrip("."), msg))
    return out


def parse_estate(raw: Any, source: str) -> EstateSpec:
    base = f"config.{ESTATE_KEY}"
    if not isinstance(raw, dict):
        raise SpecError([f"{source}: {base}: must be a mapping (the estate), got {type(raw).__name__}"])
    try:
        return EstateSpec.model_validate(raw)
    except ValidationError as err:
        raise SpecError(validation_problems(err, source, base)) from None


def _json_text(raw: Any, source: str, base: str) -> Any:
    """`pulumi config set KEY '<json>'` stores structured values as JSON text; the engine parses it back."""
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except json.JSONDecodeError as err:
        raise SpecError([f"{source}: {base}: not valid JSON: {err}"]) from None


def parse_window(raw: Any, source: str) -> BurstWindow | None:
    base = f"config.{WINDOW_KEY}"
    raw = _json_text(raw, source, base)
    if raw is None:
        return None
    try:
        return BurstWindow.model_validate(raw)
    except ValidationError as err:
        raise SpecError(validation_problems(err, source, base)) from None


def check_window(spec: EstateSpec, window: BurstWindow | None, source: str) -> None:
    """A window must grow an existing burst pool with that pool's instance type, in its AZ."""
    from components.model.windows import window_problems

    if window is None:
        return
    base = f"config.{WINDOW_KEY}"
    problems = window_problems(spec, window)
    if problems:
        raise SpecError([problem_line(source, base, p.path, p.message) for p in problems])


def parse_ledger(raw: Any, source: str) -> list[BurstLedgerEntry]:
    base = f"config.{LEDGER_KEY}"
    raw = _json_text(raw, source, base)
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise SpecError([f"{source}: {base}: must be a list of past windows, got {type(raw).__name__}"])
    out, problems = [], []
    for i, entry in enumerate(raw):
        try:
            out.append(BurstLedgerEntry.model_validate(entry))
        except ValidationError as err:
            problems += validation_problems(err, source, f"{base}[{i}]")
    if problems:
        raise SpecError(problems)
    return out


@dataclass(frozen=True)
class StackFile:
    """A stack settings file as the Pulumi CLI reads it."""

    path: Path
    project: str
    config: dict[str, Any]  # fully namespaced keys -> raw YAML values (secure values as {"secure": ...})

    def estate(self) -> EstateSpec:
        if ESTATE_KEY not in self.config:
            raise SpecError([f"{self.path}: config.{ESTATE_KEY}: required key is missing"])
        return parse_estate(self.config[ESTATE_KEY], str(self.path))

    def window(self) -> BurstWindow | None:
        return parse_window(self.config.get(WINDOW_KEY), str(self.path))

    def ledger(self) -> list[BurstLedgerEntry]:
        return parse_ledger(self.config.get(LEDGER_KEY), str(self.path))


def yaml_problem(source: Path | str, err: yaml.YAMLError) -> str:
    """The one message for a file PyYAML cannot parse: `file: not valid YAML (line L, column C): problem`."""
    mark = getattr(err, "problem_mark", None)
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
    return f"{source}: not valid YAML{where}: {getattr(err, 'problem', None) or err}"


def read_project(project_dir: Path) -> dict[str, Any]:
    path = project_dir / "Pulumi.yaml"
    try:
        doc = safe_load(path.read_text())
    except FileNotFoundError:
        raise SpecError([f"{path}: not found; run gpufleet from the project directory"]) from None
    except yaml.YAMLError as err:
        raise SpecError([yaml_problem(path, err)]) from None
    if not isinstance(doc, dict) or "name" not in doc:
        raise SpecError([f"{path}: name: required key is missing"])
    return doc


def stack_path(project_dir: Path, stack: str) -> Path:
    project = read_project(project_dir)
    return project_dir / str(project.get("stackConfigDir", ".")) / f"Pulumi.{stack}.yaml"


def read_stack(project_dir: Path, stack: str) -> StackFile:
    """Read `Pulumi.<stack>.yaml` from the project's stackConfigDir, namespacing keys like the engine."""
    project = read_project(project_dir)
    name = str(project["name"])
    path = stack_path(project_dir, stack)
    try:
        text = path.read_text()
    except FileNotFoundError:
        stacks = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in path.parent.glob("Pulumi.*.yaml"))
        raise SpecError([f"{path}: stack file not found; stacks here: {', '.join(stacks) or 'none'}"]) from None
    try:
        doc = safe_load(text) or {}
    except yaml.YAMLError as err:
        raise SpecError([yaml_problem(path, err)]) from None
    if not isinstance(doc, dict):
        raise SpecError([f"{path}: must be a mapping with a `config:` key"])
    config = doc.get("config") or {}
    if not isinstance(config, dict):
        raise SpecError([f"{path}: config: must be a mapping of config keys"])
    namespaced = {(k if ":" in str(k) else f"{name}:{k}"): v for k, v in config.items()}
    return StackFile(path=path, project=name, config=namespaced)
