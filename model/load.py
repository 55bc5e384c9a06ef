"""Loading the estate from stack config, with one clear message per problem (file and YAML path).

Used by the Pulumi program (config from the engine) and by the CLI (stack files read from disk).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import TypeAdapter, ValidationError
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from model.burst import judged_at, window_problems
from model.burst_state import READABLE_FORMATS, STATE_FORMAT, BurstState
from model.catalog import CatalogError
from model.clock import now
from model.inputs import MAX_DEPTH, MAX_INT_DIGITS, JsonLimitError, SpecError, load_json, read_text
from model.node_groups import replacement_problems as replaced
from model.placeholders import placeholder_problems
from model.rules.estate import estate_problems, unpriced_lines
from model.schema_changes import Kind, change_at
from model.secrets import check_secrets
from model.spec import BurstLedgerEntry, BurstWindow, EstateSpec, SpecFieldError, SpecProblems
from model.spec.net import Timestamp
from model.spec.tenancy import MAX_MEMBERS
from model.yaml_text import check_unique_keys, over_limit

ESTATE_KEY = "gpufleet:estate"
WINDOW_KEY = "gpufleet:burstWindow"
LEDGER_KEY = "gpufleet:burstLedger"  # past burst windows (spend so far); written by `gpufleet burst`

# Discriminator values pydantic inserts into error locations of tagged unions; they are not YAML keys.
_UNION_TAGS = frozenset(
    {"aws", "baremetal", "efa", "infiniband", "roce", "scratch", "fsx-lustre", "efs", "s3", "nfs",
     "parallel-fs", "s3-onprem", "vpn", "transit-gateway", "existing", "public", "instance-price", "service-price"}
)  # fmt: skip
_UNION_FIELDS = frozenset({"interconnect"})  # tagged unions held by a key, not a list
# Lists whose items are tagged unions: a tag right after an index into one of these is not a key (a tenant's `s3`
# list, whose name is also a storage tag, is a key).
_UNION_LISTS = frozenset({"sites", "fabrics", "storage", "prices"})


def yaml_path(base: str, loc: tuple[int | str, ...]) -> str:
    out = base
    for i, part in enumerate(loc):
        if isinstance(part, int):
            out += f"[{part}]"
        elif (
            part in _UNION_TAGS
            and i > 0
            and ((isinstance(loc[i - 1], int) and i > 1 and loc[i - 2] in _UNION_LISTS) or loc[i - 1] in _UNION_FIELDS)
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


_CHANGE_KINDS: dict[str, Kind] = {"missing": "required", "extra_forbidden": "replaced"}


def validation_problems(
    err: ValidationError, source: str, base: str, hint: str = SCHEMA_HINT, estate: bool = False
) -> list[str]:
    """One `file: yaml.path: message` line per pydantic error; `base` prefixes every path ("" for the top level).
    An estate key missing or unknown because the schema changed says what to write (model.schema_changes)."""
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
        kind = _CHANGE_KINDS.get(e["type"])
        change = change_at(yaml_path("", tuple(e["loc"])).lstrip("."), kind) if estate and kind else None
        if change is not None:
            msg = change.message()
        out.append(problem_line(source, "", yaml_path(base, tuple(e["loc"])).lstrip("."), msg))
    return out


def parse_estate(raw: Any, source: str, *, priced: bool = True) -> EstateSpec:
    """The estate of a stack file, every problem at once as a SpecError. `priced` also refuses a line no price
    covers (model.rules.estate.unpriced_lines): gpufleet's commands ask for it, the Pulumi program does not."""
    base = f"config.{ESTATE_KEY}"
    if not isinstance(raw, dict):
        raise SpecError([f"{source}: {base}: must be a mapping (the estate), got {type(raw).__name__}"])
    try:
        spec = EstateSpec.model_validate(raw)
    except ValidationError as err:
        raise SpecError(validation_problems(err, source, base, estate=True)) from None
    problems = estate_problems(spec) or (list(unpriced_lines(spec)) if priced else [])
    if problems:
        raise SpecError([problem_line(source, base, p.path, p.message) for p in problems])
    return spec


def _json_text(raw: Any, source: str, base: str) -> Any:
    """`pulumi config set KEY '<json>'` stores structured values as JSON text; the engine parses it back."""
    if not isinstance(raw, str):
        return raw
    try:  # bounded like every JSON gpufleet reads: a key twice, a 5,000-digit number, deep nesting are refused
        return load_json(raw)
    except JsonLimitError as err:
        raise SpecError([f"{source}: {base}: {err}"]) from None


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
    """A window must grow an existing burst pool with that pool's instance type; while it is live, no change may
    replace that pool's node group (model.node_groups)."""
    if window is None:
        return
    lines = [problem_line(source, f"config.{WINDOW_KEY}", p.path, p.message) for p in window_problems(spec, window)]
    lines += [problem_line(source, f"config.{ESTATE_KEY}", p.path, p.message) for p in replaced(spec, window, now())]
    if lines:
        raise SpecError(lines)


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

    def estate(self, *, priced: bool = True) -> EstateSpec:
        if ESTATE_KEY not in self.config:
            raise SpecError([f"{self.path}: config.{ESTATE_KEY}: required key is missing"])
        return parse_estate(self.config[ESTATE_KEY], str(self.path), priced=priced)

    def window(self) -> BurstWindow | None:
        return parse_window(self.config.get(WINDOW_KEY), str(self.path))

    def ledger(self) -> list[BurstLedgerEntry]:
        return parse_ledger(self.config.get(LEDGER_KEY), str(self.path))

    def contents(self) -> tuple[EstateSpec, BurstWindow | None, list[BurstLedgerEntry]]:
        """Estate (no `gpufleet init` placeholder left in it), window (checked against the estate), ledger and the
        secrets the program reads: what every command validates alike (gpufleet.review.stack_file.judged adds the
        policy overrides), so one stack file is valid or invalid for validate, preview, check, cost, size, verify
        and burst the same way."""
        if placeholders := placeholder_problems(self.config.get(ESTATE_KEY)):
            raise SpecError([problem_line(str(self.path), f"config.{ESTATE_KEY}", p, m) for p, m in placeholders])
        spec, window = self.estate(), self.window()
        check_window(spec, window, str(self.path))
        ledger = self.ledger()
        check_secrets(spec, self.config, str(self.path), self.project, self.stack)
        return spec, window, ledger

    @property
    def stack(self) -> str:
        """The stack's name, from its file name (`Pulumi.<stack>.yaml`)."""
        return self.path.name.removeprefix("Pulumi.").removesuffix(".yaml")


# Limits of every YAML file gpufleet reads (stack, workload, Pulumi.yaml, kubeconfig), besides model.inputs' own.
MAX_NODES = 200_000  # values after aliases (*name, <<: *name) are expanded: an alias bomb stops here
# Lists whose schema bound is checked while reading, since parsing a list far beyond it takes seconds.
LIST_LIMITS = {("config", ESTATE_KEY, "tenants", "*", "members"): MAX_MEMBERS}


def _namespaced(path: list[Any]) -> list[Any]:
    """`path` with its config key namespaced as read_stack and Pulumi read it (`estate:` is `gpufleet:estate`,
    https://www.pulumi.com/docs/iac/concepts/config/): the un-namespaced key is bounded too."""
    if len(path) > 1 and path[0] == "config" and isinstance(path[1], str) and ":" not in path[1]:
        return ["config", f"{ESTATE_KEY.partition(':')[0]}:{path[1]}", *path[2:]]
    return path


class _LimitedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, bounded: nesting depth, integer length and dates that exist (see the limits above)."""

    source = ""
    _path: list[Any]

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        self._depth = getattr(self, "_depth", 0) + 1
        path = self.__dict__.setdefault("_path", [])
        path.append(index.value if isinstance(index, ScalarNode) else index)  # None: a mapping's key
        try:
            if self._depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"nested deeper than {MAX_DEPTH} levels", self.peek_event().start_mark
                )
            if (over := over_limit(_namespaced(path[1:]), LIST_LIMITS)) is not None:  # path[0]: the document
                raise SpecError([problem_line(self.source, over[0], "", f"List should have at most {over[1]} items")])
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1
            path.pop()

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        check_unique_keys(self, node)
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: ScalarNode) -> int:
        digits = str(node.value).lstrip("+-").replace("_", "")
        if len(digits) > MAX_INT_DIGITS:
            raise ConstructorError(None, None, f"integer longer than {MAX_INT_DIGITS} digits", node.start_mark)
        return super().construct_yaml_int(node)

    def construct_yaml_timestamp(self, node: ScalarNode) -> dt.date:
        try:
            return super().construct_yaml_timestamp(node)
        except (ValueError, OverflowError) as err:
            raise ConstructorError(
                None, None, f"{node.value!r} is not a date or time: {err}", node.start_mark
            ) from None


_LimitedLoader.add_constructor("tag:yaml.org,2002:int", _LimitedLoader.construct_yaml_int)
_LimitedLoader.add_constructor("tag:yaml.org,2002:timestamp", _LimitedLoader.construct_yaml_timestamp)


def _check_expansion(root: Node) -> None:
    """Refuse a document whose aliases expand to more than MAX_NODES values, or refer to themselves."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            raise ConstructorError(None, None, "an alias refers to the value that contains it", node.start_mark)
        open_nodes.add(key)
        children: list[Node] = []
        if isinstance(node, SequenceNode):
            children = list(node.value)
        elif isinstance(node, MappingNode):
            children = [n for pair in node.value for n in pair]
        total = 1
        for child in children:
            total += size(child)
            if total > MAX_NODES:
                raise ConstructorError(
                    None, None, f"more than {MAX_NODES} values once aliases are expanded", node.start_mark
                )
        open_nodes.discard(key)
        sizes[key] = total
        return total

    size(root)


def load_yaml(text: str, source: Path | str) -> Any:
    """The one YAML loader: safe tags only, bounded (see the limits above); raises yaml.YAMLError on bad input."""
    bad = _FORBIDDEN.search(text)
    if bad is not None:  # NUL and most control characters: YAML forbids them anywhere
        raise _forbidden_character(text, bad.start())
    _check_flow_depth(text)
    loader = _LimitedLoader(text)
    loader.source = str(source)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


# The characters YAML 1.1 does not allow in a stream (PyYAML's Reader.NON_PRINTABLE), besides a leading BOM.
_FORBIDDEN = re.compile("[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _forbidden_character(text: str, index: int) -> yaml.MarkedYAMLError:
    """The error for a forbidden character, with the YAML path of the value it is in (found with it blanked)."""
    line = text.count("\n", 0, index)
    column = index - (text.rfind("\n", 0, index) + 1)
    where = ""
    try:
        node = _LimitedLoader(_FORBIDDEN.sub(" ", text)).get_single_node()
        where = "".join(p if p.startswith("[") else f".{p}" for p in _path_at(node, index)).lstrip(".") if node else ""
    except yaml.YAMLError:
        pass
    problem = f"character U+{ord(text[index]):04X} is not allowed" + (f" (in {where})" if where else "")
    return yaml.MarkedYAMLError(problem=problem, problem_mark=yaml.Mark("", index, line, column, "", 0))


def _path_at(node: Node, index: int) -> list[str]:
    """The keys and list positions leading to the innermost value that spans text position `index`."""
    if isinstance(node, MappingNode):
        for key, value in node.value:
            if key.start_mark.index <= index < value.end_mark.index:
                return [str(key.value), *_path_at(value, index)] if isinstance(key.value, str) else []
    if isinstance(node, SequenceNode):
        for i, item in enumerate(node.value):
            if item.start_mark.index <= index < item.end_mark.index:
                return [f"[{i}]", *_path_at(item, index)]
    return []


def _check_flow_depth(text: str) -> None:
    """Refuse `[[[[...` / `{{{{...` deeper than MAX_DEPTH before PyYAML's scanner, whose work grows with the square
    of the flow depth, reads them. Brackets inside quotes count too: no real file has 64 of them open at once."""
    depth = 0
    for m in _FLOW.finditer(text):
        depth = depth + 1 if m.group() in "[{" else max(depth - 1, 0)
        if depth > MAX_DEPTH:
            line = text.count("\n", 0, m.start())
            column = m.start() - (text.rfind("\n", 0, m.start()) + 1)
            mark = yaml.Mark("", m.start(), line, column, "", 0)
            raise yaml.MarkedYAMLError(problem=f"nested deeper than {MAX_DEPTH} levels", problem_mark=mark)


_FLOW = re.compile(r"[\[\]{}]")


def read_yaml(path: Path, missing: str) -> Any:
    """Read and parse a YAML file; every problem (missing, unreadable, not UTF-8, not YAML) is a SpecError."""
    text = read_text(path, missing)
    try:
        return load_yaml(text, path)
    except yaml.YAMLError as err:
        raise SpecError([yaml_problem(path, err)]) from None


def yaml_problem(source: Path | str, err: yaml.YAMLError) -> str:
    """The one message for a file PyYAML cannot parse: `file: not valid YAML (line L, column C): problem`."""
    mark = getattr(err, "problem_mark", None)
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
    problem = str(getattr(err, "problem", None) or err).replace("\n", " ")
    return f"{source}: not valid YAML{where}: {problem}"


STACK_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")  # Pulumi's rule for a stack name


def check_stack_name(stack: str) -> None:
    """A stack name Pulumi accepts: letters, digits, `-`, `_`, `.`; at most 100 characters."""
    if not STACK_NAME.fullmatch(stack):
        shown = stack if len(stack) <= 60 else stack[:60] + "..."
        raise SpecError([f"--stack {shown!r}: not a stack name (letters, digits, '-', '_', '.'; 100 at most)"])


def read_project(project_dir: Path) -> dict[str, Any]:
    path = project_dir / "Pulumi.yaml"
    if not project_dir.is_dir():
        raise SpecError([f"{project_dir}: --project must be a directory holding Pulumi.yaml"])
    try:
        doc = load_yaml(read_text(path, "not found; run gpufleet from the project directory"), path)
    except yaml.YAMLError as err:
        raise SpecError([yaml_problem(path, err)]) from None
    if not isinstance(doc, dict) or "name" not in doc:
        raise SpecError([f"{path}: name: required key is missing"])
    return doc


def stack_path(project_dir: Path, stack: str) -> Path:
    check_stack_name(stack)
    project = read_project(project_dir)
    return project_dir / str(project.get("stackConfigDir", ".")) / f"Pulumi.{stack}.yaml"


def read_stack(project_dir: Path, stack: str, path: Path | None = None) -> StackFile:
    """Read `Pulumi.<stack>.yaml` from the project's stackConfigDir (or the stack's file as `path` holds it, e.g.
    at another git revision), namespacing keys like the engine."""
    project = read_project(project_dir)
    name = str(project["name"])
    path = stack_path(project_dir, stack) if path is None else path
    try:
        stacks = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in path.parent.glob("Pulumi.*.yaml"))
    except OSError:
        stacks = []
    text = read_text(path, f"stack file not found; stacks here: {', '.join(stacks) or 'none'}")
    try:
        doc = load_yaml(text, path) or {}
    except yaml.YAMLError as err:
        raise SpecError([yaml_problem(path, err)]) from None
    if not isinstance(doc, dict):
        raise SpecError([f"{path}: must be a mapping with a `config:` key"])
    config = doc.get("config") or {}
    if not isinstance(config, dict):
        raise SpecError([f"{path}: config: must be a mapping of config keys"])
    namespaced = {(k if ":" in str(k) else f"{name}:{k}"): v for k, v in config.items()}
    return StackFile(path=path, project=name, config=namespaced)


def parse_state(outputs: dict[str, object] | None, source: str) -> BurstState | None:
    """A state stack's outputs as a BurstState (None: none recorded); a problem raises SpecError naming both."""
    if not outputs:
        return None
    fmt = outputs.get("format")
    if fmt not in READABLE_FORMATS:  # outputs pass through protobuf, where every number is a float: 1.0 == 1
        raise SpecError(
            [
                f"{source}: outputs.format: {_shown_format(fmt)} is not a burst state this gpufleet reads (format {STATE_FORMAT})"
            ]
        )
    problems: list[str] = []
    window = None
    ledger: list[BurstLedgerEntry] = []
    as_of = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
    try:
        as_of = TypeAdapter(Timestamp).validate_python(outputs.get("as_of"))
    except ValidationError as err:
        problems += validation_problems(err, source, "outputs.as_of")
    if outputs.get("window") is not None:
        try:
            window = BurstWindow.model_validate(outputs["window"])
        except ValidationError as err:
            problems += validation_problems(err, source, "outputs.window")
    raw_ledger = outputs.get("ledger") or []
    if not isinstance(raw_ledger, list):
        problems.append(f"{source}: outputs.ledger: must be a list of past windows")
        raw_ledger = []
    for i, entry in enumerate(raw_ledger):
        try:
            ledger.append(BurstLedgerEntry.model_validate(entry))
        except ValidationError as err:
            problems += validation_problems(err, source, f"outputs.ledger[{i}]")
    settled = outputs.get("settled", True)
    if not isinstance(settled, bool):
        problems.append(f"{source}: outputs.settled: must be true or false")
    generation = outputs.get("generation", 0)  # a float after protobuf, like `format`
    if not isinstance(generation, int | float) or isinstance(generation, bool) or generation != int(generation):
        problems.append(f"{source}: outputs.generation: must be a whole number")
        generation = 0
    if problems:
        raise SpecError(problems)
    return BurstState(window, tuple(ledger), as_of, bool(settled), int(generation))


def _shown_format(fmt: object) -> str:
    """An unknown state format as a message shows it: never a huge number or a long text in full."""
    if fmt is None or isinstance(fmt, bool):
        return repr(fmt)
    if isinstance(fmt, float):
        return f"{fmt:g}"
    if isinstance(fmt, int):
        return str(fmt) if fmt.bit_length() <= 64 else "an integer of more than 64 bits"
    return repr(fmt[:40]) if isinstance(fmt, str) else f"a {type(fmt).__name__}"


def check_state(spec: EstateSpec, state: BurstState | None, source: str) -> None:
    """A recorded window must grow an existing burst pool with that pool's instance type, in its AZ (SpecError
    naming `source` and `outputs.window.<field>`)."""
    if state is None or state.window is None:
        return
    lines = [problem_line(source, "outputs.window", p.path, p.message) for p in window_problems(spec, state.window)]
    at = judged_at(state.as_of, now())
    lines += [problem_line(source, ESTATE_KEY, p.path, p.message) for p in replaced(spec, state.window, at)]
    if lines:
        raise SpecError(lines)
