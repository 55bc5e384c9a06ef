"""The offline engine: run the real Pulumi program under recording mocks and return a Plan.

No Pulumi CLI, no credentials. Config is set the way the engine sets it (namespaced keys, structured values
as JSON, `secure:` values as secrets whose plaintext is not known here). Each synth gets a fresh event loop
and fresh runtime settings, so two synths in one process do not see each other. Invokes are answered from
the catalog; an invoke nobody can answer offline is an error naming its token, never an empty answer.

The engine only synthesizes: pricing, policy checks and diffs are assembled from its Plan in gpufleet/review/.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import gc
import json
import logging
import runpy
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import known_types, mocks, rpc, settings
from pulumi.runtime import resource as sdk_resource
from pulumi.runtime.proto import source_pb2

from gpufleet.engine.plan import Plan, PlanResource, normalise
from model import catalog, clock
from model.burst_state import BurstState, state_stack_name
from model.load import LEDGER_KEY, WINDOW_KEY, StackFile, read_stack

SECRET_PLACEHOLDER = "[secret: not decrypted offline]"
Invoke = Callable[[dict[str, Any]], dict[str, Any]]


class SynthError(Exception):
    """The program could not be synthesized offline (not a user-input error)."""


def _instance_type(args: dict[str, Any]) -> dict[str, Any]:
    it = catalog.instance_type(str(args.get("instanceType")))
    return {"instanceType": it.name, "defaultVcpus": it.vcpus, "memorySize": it.memory_mib, "gpuses": []}


# What a bare-metal server's join-attempt probe answers offline (components/baremetal/bootstrap.py): a constant,
# so plans are deterministic; only a real preview or up asks the cluster whether the server has joined.
OFFLINE_JOIN_ATTEMPT = "offline"


def _local_run(args: dict[str, Any]) -> dict[str, Any]:
    """pulumi-command's `local.run`, answered only for the join-attempt probe: any other command is an error."""
    header = str(args.get("command") or "").splitlines()[1:2]  # the line after the shebang names the script
    if not header or not header[0].startswith("# gpufleet join-attempt "):
        raise ValueError("only the join-attempt probe of a bare-metal server can be answered offline")
    return {**args, "stdout": OFFLINE_JOIN_ATTEMPT + "\n", "stderr": ""}


# Invokes answered offline. Add a token here only with an answer derived from the catalog or the spec.
INVOKES: dict[str, Invoke] = {
    "aws:ec2/getInstanceType:getInstanceType": _instance_type,
    "command:local:run": _local_run,
}


@dataclass(slots=True)
class _Registration:
    type: str
    name: str
    parent_urn: str
    custom: bool
    inputs: dict[str, Any]
    protect: bool
    retain_on_delete: bool
    dependencies: list[str]
    provider: str
    aliases: list[Any]  # alias_pb2.Alias: a URN, or a spec the engine completes from the resource
    ignore_changes: list[str]
    replace_on_changes: list[str]
    delete_before_replace: bool
    replace_with: list[str]
    delete_timeout: str


STACK_REFERENCE = "pulumi:pulumi:StackReference"


def burst_state_outputs(stack_file: StackFile, now: dt.datetime) -> dict[str, Any]:
    """What the burst state stack answers offline: the window and ledger the stack file names (a what-if for
    preview, cost and review; a real `up` reads only the state stack), judged at `now`."""
    state = BurstState(stack_file.window(), tuple(stack_file.ledger()), now)
    return state.outputs() if state.window is not None or state.ledger else {}


class _RecordingMocks(pulumi.runtime.Mocks):
    def __init__(self, references: dict[str, dict[str, Any]] | None = None) -> None:
        self.errors: list[str] = []
        self.references = references or {}  # stack name (last part of the reference) -> its outputs

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        if args.typ == STACK_REFERENCE:
            return self._stack_reference(args)
        return f"{args.name}-id", dict(args.inputs)

    def _stack_reference(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        """A StackReference is read by its `name` input, `<organization>/<project>/<stack>` (pulumi/
        stack_reference.py); its state holds `outputs` and `secretOutputNames`, as the engine's answer does."""
        name = str(args.inputs.get("name") or args.resource_id or args.name)
        stack = name.rsplit("/", 1)[-1]
        if stack not in self.references:
            msg = f"stack reference {name} cannot be answered offline (only the burst state stack can)"
            self.errors.append(msg)
            raise SynthError(msg)
        return name, {"name": name, "outputs": self.references[stack], "secretOutputNames": []}

    def call(self, args: pulumi.runtime.MockCallArgs) -> Any:
        handler = INVOKES.get(args.token)
        if handler is None:
            msg = f"invoke {args.token} cannot be answered offline (no catalog answer for it)"
            self.errors.append(msg)
            raise SynthError(msg)
        try:
            return handler(dict(args.args))
        except Exception as err:
            self.errors.append(f"invoke {args.token}: {err}")
            raise


class _RecordingMonitor(mocks.MockMonitor):
    """MockMonitor that keeps parent, options and dependencies, with engine-shaped URNs."""

    def __init__(self, m: _RecordingMocks) -> None:
        super().__init__(m)
        self.registrations: dict[str, _Registration] = {}
        self.duplicates: list[str] = []
        self.stack_outputs: dict[str, Any] = {}
        self._urns: dict[str, str] = {}  # one string per URN: parents and dependencies repeat them

    def _urn(self, urn: str) -> str:
        return self._urns.setdefault(urn, urn)

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        # The engine qualifies a type with every ancestor's type except the root stack's.
        if parent and type_ != "pulumi:pulumi:Stack":
            qualified = parent.split("::")[2]
            if qualified != "pulumi:pulumi:Stack":
                type_ = f"{qualified}${type_}"
        return "urn:pulumi:" + "::".join([pulumi.get_stack(), pulumi.get_project(), type_, name])

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        if request.type == "pulumi:pulumi:Stack":
            return response
        urn = self._urn(response.urn)
        if urn in self.registrations:
            self.duplicates.append(urn)
        self.registrations[urn] = _Registration(
            type=request.type,
            name=request.name,
            parent_urn=self._urn(request.parent),
            custom=bool(request.custom),
            inputs=self.resources[urn].state,
            protect=bool(request.protect),
            retain_on_delete=bool(request.retainOnDelete),
            dependencies=[self._urn(d) for d in request.dependencies],
            provider=request.provider,
            aliases=[_detached(a) for a in request.aliases],
            ignore_changes=list(request.ignoreChanges),
            replace_on_changes=list(request.replaceOnChanges),
            delete_before_replace=bool(request.deleteBeforeReplace),
            replace_with=[self._urn(u) for u in request.replace_with],
            delete_timeout=request.customTimeouts.delete,
        )
        return response


def _detached(alias: Any) -> Any:
    """A copy of an alias of a request: the request's own field would keep the whole request alive."""
    copy = type(alias)()
    copy.CopyFrom(alias)
    return copy


def _run_and_collect_outputs(program: Path, monitor: _RecordingMonitor) -> pulumi.Output[Any]:
    """Run the program, then resolve the root stack's exports (mocks register them before the program runs)."""
    runpy.run_path(str(program), run_name="__main__")
    root = settings.get_root_resource()
    outputs: dict[str, Any] = dict(getattr(root, "outputs", {}) or {})

    def keep(values: dict[str, Any]) -> None:
        monitor.stack_outputs = normalise(values)

    return pulumi.Output.from_input(outputs).apply(keep)


class _WarningCollector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def engine_config(stack_file: StackFile) -> tuple[dict[str, str], list[str]]:
    """Config as the engine hands it to a program: strings, structured values as JSON, secrets marked."""
    config: dict[str, str] = {}
    secret_keys: list[str] = []
    for key, value in stack_file.config.items():
        if isinstance(value, dict) and set(value) == {"secure"}:
            config[key] = SECRET_PLACEHOLDER
            secret_keys.append(key)
        elif isinstance(value, str):
            config[key] = value
        else:
            config[key] = json.dumps(_string_keys(value), default=str)
    return config, secret_keys


def _string_keys(value: Any) -> Any:
    """Mapping keys as the text the Pulumi CLI keeps (YAML may have read `2024-01-01:` as a date), recursively."""
    if isinstance(value, dict):
        return {
            k if k is None or isinstance(k, str | int | float | bool) else str(k): _string_keys(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_string_keys(v) for v in value]
    return value


def _key(urn: str) -> str:
    return urn.split("::", 2)[2]


def synth(project_dir: Path | str, stack: str) -> Plan:
    """Run the project's `__main__.py` for `stack` under mocks and return what it registered."""
    project_dir = Path(project_dir).resolve()
    stack_file = read_stack(project_dir, stack)  # raises SpecError for bad files
    # Validate up front so user errors never surface as engine failures; as the program does, prices aside.
    stack_file.estate(priced=False)
    stack_file.window()
    return synth_stack(project_dir, stack, stack_file)


def synth_stack(
    project_dir: Path,
    stack: str,
    stack_file: StackFile,
    *,
    burst_state: dict[str, Any] | None = None,
    now: dt.datetime | None = None,
) -> Plan:
    """Synthesize a stack file already read (and validated) by the caller, the program running at `now` (default:
    this machine's clock). The burst state stack answers with `burst_state` (its outputs) when given, else with
    the stack file's window and ledger judged at `now`."""
    now = now or dt.datetime.now(dt.UTC)
    config, secret_keys = engine_config(stack_file)
    for key in (WINDOW_KEY, LEDGER_KEY):  # the state stack's answer, not config the program reads
        config.pop(key, None)
    if burst_state is None:
        burst_state = burst_state_outputs(stack_file, now)
    references = {state_stack_name(stack): burst_state}
    program = Path(project_dir).resolve() / "__main__.py"
    return run_program(program, stack_file.project, stack, config, secret_keys, references, now=now)


def _no_stack_trace() -> source_pb2.StackTrace:
    return source_pb2.StackTrace()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No automatic cyclic garbage collection inside the block (resumed after it, if it was on).

    A synthesis or a policy evaluation keeps hundreds of thousands of objects (Outputs, futures, tasks, policy
    proxies) alive until it ends, and every automatic collection traverses them again: a fifth to a third of
    synthesis CPU at 2,500 to 10,000 resources, and more than half of a 10,000-resource policy evaluation
    (profiled). What little of it is cyclic garbage is collected once collection resumes (a 10,000-resource run's
    garbage: 0.6 s, peak RSS +36 %)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


@contextlib.contextmanager
def _offline_runtime() -> Iterator[None]:
    """Turn off, for one run, costs that buy nothing offline; all are restored afterwards.

    - Source positions: for every registration the SDK walks the Python stack and turns each frame below the
      resource's constructor into a file URI for the engine's diagnostics (`_get_stack_trace` in
      pulumi/runtime/resource.py); the mock monitor drops them. The deeper components nest, the more it costs.
    - Automatic garbage collection (`collector_paused`). The SDK's `contains_unknowns` (pulumi/runtime/rpc.py)
      defines a recursive closure per call, a reference cycle only the collector frees: kept until the run ends,
      those closures were ~30 % of a 10,000-GPU synthesis's traced memory. The run uses the same test without
      the closure (`_contains_unknowns`).
    """
    trace = getattr(sdk_resource, "_get_stack_trace", None)
    if trace is not None:
        sdk_resource._get_stack_trace = _no_stack_trace
    unknowns = rpc.contains_unknowns
    rpc.contains_unknowns = _contains_unknowns
    try:
        with collector_paused():
            yield
    finally:
        rpc.contains_unknowns = unknowns
        if trace is not None:
            sdk_resource._get_stack_trace = trace


def _contains_unknowns(val: Any) -> bool:
    """pulumi.runtime.rpc.contains_unknowns: whether `val` holds an unknown anywhere inside, no closure made."""
    return _unknown_in(val, set())


def _unknown_in(val: Any, seen_ids: set[int]) -> bool:
    if known_types.is_unknown(val):
        return True
    if id(val) in seen_ids:
        return False
    seen_ids.add(id(val))
    if isinstance(val, dict):
        return any(_unknown_in(val[k], seen_ids) for k in val)
    if isinstance(val, list):
        return any(_unknown_in(x, seen_ids) for x in val)
    return False


def run_program(
    program: Path,
    project: str,
    stack: str,
    config: dict[str, str],
    secret_keys: list[str],
    references: dict[str, dict[str, Any]] | None = None,
    *,
    now: dt.datetime | None = None,
) -> Plan:
    """Run `program` under mocks, its clock (model.clock) frozen at `now` (default: this machine's clock)."""
    with _offline_runtime(), clock.frozen(now or dt.datetime.now(dt.UTC)):
        return _run_program(program, project, stack, config, secret_keys, references)


def _run_program(
    program: Path,
    project: str,
    stack: str,
    config: dict[str, str],
    secret_keys: list[str],
    references: dict[str, dict[str, Any]] | None,
) -> Plan:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    settings.reset_options()
    pulumi.runtime.set_all_config(config, secret_keys=secret_keys)
    if references is None:  # the burst state stack holds no window
        references = {state_stack_name(stack): {}}
    m = _RecordingMocks(references)
    monitor = _RecordingMonitor(m)
    logger = logging.getLogger(f"gpufleet.engine.synth.{stack}")
    logger.propagate = False
    collector = _WarningCollector()
    logger.addHandler(collector)
    mocks.set_mocks(m, project=project, stack=stack, logger=logger, monitor=monitor)
    added_path = str(program.parent) not in sys.path
    if added_path:
        sys.path.insert(0, str(program.parent))
    try:
        pulumi.runtime.test(lambda: _run_and_collect_outputs(program, monitor))()
    except pulumi.RunError:
        _abandon(loop)
        raise
    except Exception as err:
        _abandon(loop)
        if m.errors:
            raise SynthError("; ".join(m.errors)) from err
        raise
    except BaseException:  # Ctrl-C (KeyboardInterrupt) or SystemExit
        _abandon(loop)
        raise
    finally:
        if added_path:
            sys.path.remove(str(program.parent))
        logger.removeHandler(collector)
        settings.reset_options()
        asyncio.set_event_loop(None)
        loop.close()
    if m.errors:
        raise SynthError("; ".join(m.errors))
    if monitor.duplicates:
        raise SynthError(
            "two resources would share one URN (the engine rejects this): "
            + ", ".join(sorted({_key(u) for u in monitor.duplicates}))
        )
    # The run's resources, Outputs and tasks are cyclic garbage now; the collector is paused (and `gpufleet` keeps it
    # off for the whole command), so they would stay until the process exits, under the plan, the policy
    # evaluation and the reality checks. One collection frees them for those to reuse.
    gc.collect()
    return _plan(project, stack, monitor, collector.messages)


ABANDON_SECONDS = 5.0  # at most this long for a cut-short run's tasks to finish once cancelled


def _abandon(loop: asyncio.AbstractEventLoop) -> None:
    """End a run that was cut short (an error, Ctrl-C) without asyncio's reports on its unfinished work.

    Such a run leaves the SDK's tasks pending (its RPCs, and `run_pulumi_func`, whose `finally` needs a running
    loop). Destroyed with the loop, each would be reported on stderr after the command has said what went wrong:
    "Task was destroyed but it is pending!", "Task exception was never retrieved" with a traceback, "Exception
    ignored in: <coroutine object run_pulumi_func>". So the tasks are cancelled and given a moment to finish, as
    `asyncio.run` does on the way out, and the loop drops what they report: the caller reports the run's one
    outcome.
    """
    loop.set_exception_handler(lambda _loop, _context: None)
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.wait(pending, timeout=ABANDON_SECONDS))


def _child_key(parent: str | None, type_: str, name: str) -> str:
    """The logical key of a resource of `type_` named `name` under the resource whose key is `parent`."""
    return f"{parent.split('::', 1)[0]}${type_}::{name}" if parent else f"{type_}::{name}"


def _alias_keys(
    reg: _Registration, parent: str | None, parent_aliases: list[str], urn_to_key: dict[str, str]
) -> list[str]:
    """The logical keys the engine would match this resource to in the stack's state, as it computes them from
    alias specs (pulumi/pulumi pkg/resource/deploy/step_generator.go, `generateAliases`, `collapseAliasToUrn`,
    `inheritedChildAlias`): each alias, completed with the resource's own type, name and parent; then, for each
    alias of its parent, the resource under that alias, its name's prefix renamed when it starts with the parent's
    name (`<parent>-ng` under an alias `old` of `<parent>` is `old-ng`)."""
    own: list[str] = []
    for alias in reg.aliases:
        if alias.HasField("urn"):
            own.append(_key(alias.urn))
            continue
        spec = alias.spec
        under = (
            None
            if spec.noParent
            else (urn_to_key.get(spec.parentUrn, _key(spec.parentUrn)) if spec.parentUrn else parent)
        )
        own.append(_child_key(under, spec.type or reg.type, spec.name or reg.name))
    out = list(own)
    parent_name = parent.rsplit("::", 1)[-1] if parent else ""
    identities = [(reg.type, reg.name), *((k.split("::")[0].rsplit("$", 1)[-1], k.rsplit("::", 1)[-1]) for k in own)]
    for alias in parent_aliases:
        alias_name = alias.rsplit("::", 1)[-1]
        for type_, name in identities:
            if parent_name and name.startswith(parent_name):
                name = alias_name + name[len(parent_name) :]
            out.append(_child_key(alias, type_, name))
    return list(dict.fromkeys(out))


def _plan(project: str, stack: str, monitor: _RecordingMonitor, warnings: list[str]) -> Plan:
    urn_to_key = {urn: _key(urn) for urn in monitor.registrations}
    aliases: dict[str, list[str]] = {}  # key -> alias keys, parents before children (registration order)
    resources = []
    for urn, reg in monitor.registrations.items():
        provider_urn = reg.provider.rsplit("::", 1)[0] if reg.provider else ""
        parent = urn_to_key.get(reg.parent_urn)
        aliases[urn_to_key[urn]] = _alias_keys(reg, parent, aliases.get(parent or "", []), urn_to_key)
        resources.append(
            PlanResource(
                key=urn_to_key[urn],
                type=reg.type,
                name=reg.name,
                parent=parent,
                custom=reg.custom,
                inputs=normalise(reg.inputs, urn_to_key),
                protect=reg.protect,
                retain_on_delete=reg.retain_on_delete,
                dependencies=sorted(urn_to_key.get(d, d) for d in reg.dependencies),
                provider=urn_to_key.get(provider_urn),
                aliases=aliases[urn_to_key[urn]],
                ignore_changes=reg.ignore_changes,
                replace_on_changes=reg.replace_on_changes,
                delete_before_replace=reg.delete_before_replace,
                replace_with=sorted(urn_to_key.get(u, u) for u in reg.replace_with),
                delete_timeout=reg.delete_timeout,
            )
        )
    resources.sort(key=lambda r: r.key)
    return Plan(project=project, stack=stack, resources=resources, outputs=monitor.stack_outputs, warnings=warnings)
