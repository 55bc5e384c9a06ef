"""The fair floor: the synthesized plan's own registrations replayed through the same SDK under the same mocks.

`recording()` keeps, while the real program runs under `gpufleet.engine.synth`, every request the program sent
to the mock monitor (RegisterResource, RegisterResourceOutputs, Invoke) in the order the monitor received them,
decoded into plain values, and for each resource type the SDK class and input type that registered it.

`replay()` is a Pulumi program that sends the same requests again with the least code the SDK allows: for each
one, the recorded class's own `Resource` constructor with the recorded type, name, input values, parent, provider,
dependencies and options. Dependencies that came from an input stay property dependencies (the value is an Output
of the replayed resources), the rest are `depends_on`; secrets stay secret Outputs; component outputs and stack
exports are registered as recorded. The recording is decoded before the replay is timed, so the floor is only
what the SDK does per registration.

What the replay does not repeat is ours: the components' Python, the spec, the Outputs and applies the components
build. `differences()` shows the replay is the same work: recorded in turn, it sent the same requests (type, name,
parent, input values, property dependencies, depends_on, provider, options, aliases) through the same classes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import json
import pickle
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import pulumi.resource
from pulumi import _types
from pulumi.runtime import rpc

from gpufleet.engine import synth as engine

_SIG = rpc._special_sig_key
_SECRET = rpc._special_secret_sig
STACK_TYPE = "pulumi:pulumi:Stack"

# Request fields the replay does not reproduce; a program that starts using one fails the recording loudly.
_NOT_REPLAYED = (
    "importId",
    "deletedWith",
    "replacement_trigger",
    "transforms",
    "hooks",
    "aliasURNs",
    "packageRef",
)


@dataclass(frozen=True)
class ClassRef:
    """The SDK class that registered a type, its input type (if any) and the keys of its untranslated props."""

    module: str
    name: str
    input_module: str | None
    input_name: str | None
    keys: tuple[str, ...]


@dataclass
class Registration:
    """One RegisterResource request, decoded."""

    urn: str
    type: str
    name: str
    custom: bool
    remote: bool  # a multi-language component: one opaque registration under the mocks
    values: dict[str, Any]  # deserialized inputs, wire names
    secret_keys: frozenset[str]  # inputs holding a secret somewhere inside
    property_deps: dict[str, list[str]]
    options: dict[str, Any]  # ResourceOptions fields that are plain values
    parent: str
    depends_on: list[str]
    replace_with: list[str]  # URNs of the resources whose replacement replaces this one
    provider: str | None
    providers: dict[str, str]  # package -> provider URN, as the request's providers map
    aliases: list[str | dict[str, Any]]
    timeouts: tuple[str, str, str] = ("", "", "")  # customTimeouts create, update, delete ("" for none)


@dataclass
class Outputs:
    urn: str
    values: dict[str, Any]


@dataclass
class Invoke:
    token: str
    args: dict[str, Any]
    provider: str | None


@dataclass
class Recording:
    calls: list[Registration | Outputs | Invoke] = field(default_factory=list)
    classes: dict[str, ClassRef] = field(default_factory=dict)
    exports: dict[str, Any] = field(default_factory=dict)

    def save(self, path: Path) -> None:
        path.write_bytes(pickle.dumps(self))

    @staticmethod
    def load(path: Path) -> Recording:
        recording = pickle.loads(path.read_bytes())
        assert isinstance(recording, Recording)
        return recording


def _has_secret(value: Any) -> bool:
    if isinstance(value, dict):
        return value.get(_SIG) == _SECRET or any(_has_secret(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_secret(v) for v in value)
    return False


def _urn(ref: str) -> str:
    """The URN of a provider reference (`urn::id`)."""
    return ref.rsplit("::", 1)[0]


def _alias(alias: Any) -> str | dict[str, Any]:
    if alias.WhichOneof("alias") == "urn":
        return str(alias.urn)
    spec = alias.spec  # an empty field was not given (`...` in pulumi.Alias); noParent is `parent=None`
    fields = {"name": spec.name, "type_": spec.type, "stack": spec.stack, "project": spec.project}
    kwargs: dict[str, Any] = {k: v for k, v in fields.items() if v}
    if spec.noParent:
        kwargs["parent"] = None
    elif spec.parentUrn:
        kwargs["parent"] = spec.parentUrn
    return kwargs


def _decode(request: Any, urn: str) -> Registration:
    for name in _NOT_REPLAYED:
        value = getattr(request, name)
        if value.ListFields() if hasattr(value, "ListFields") else value:
            raise NotImplementedError(f"the fair floor does not replay {name} ({request.type} {request.name})")
    values = rpc.deserialize_properties(request.object)
    property_deps = {k: list(v.urns) for k, v in request.propertyDependencies.items()}
    implicit = {u for urns in property_deps.values() for u in urns}
    options = {
        "protect": request.protect if request.HasField("protect") else None,
        "retain_on_delete": request.retainOnDelete if request.HasField("retainOnDelete") else None,
        "ignore_changes": list(request.ignoreChanges) or None,
        "additional_secret_outputs": list(request.additionalSecretOutputs) or None,
        "delete_before_replace": request.deleteBeforeReplace if request.deleteBeforeReplaceDefined else None,
        "replace_on_changes": list(request.replaceOnChanges) or None,
        "version": request.version or None,
        "plugin_download_url": request.pluginDownloadURL or None,
    }
    return Registration(
        urn=urn,
        type=request.type,
        name=request.name,
        custom=bool(request.custom),
        remote=bool(request.remote),
        values=values,
        secret_keys=frozenset(k for k, v in values.items() if _has_secret(v)),
        property_deps=property_deps,
        options={k: v for k, v in options.items() if v is not None},
        parent=request.parent,
        depends_on=[u for u in request.dependencies if u not in implicit],
        replace_with=list(request.replace_with),
        provider=_urn(request.provider) if request.provider and (request.custom or request.remote) else None,
        providers={pkg: _urn(r) for pkg, r in request.providers.items()},
        aliases=[_alias(a) for a in request.aliases],
        timeouts=(request.customTimeouts.create, request.customTimeouts.update, request.customTimeouts.delete),
    )


@contextlib.contextmanager
def recording() -> Iterator[Recording]:
    """Record what every synth run inside the block sends to the mock monitor (benchmark use only)."""
    rec = Recording()
    monitor = engine._RecordingMonitor
    register, outputs, invoke = monitor.RegisterResource, monitor.RegisterResourceOutputs, monitor.Invoke
    sdk_register = pulumi.resource.register_resource

    def on_register(self: engine._RecordingMonitor, request: Any) -> Any:
        response = register(self, request)
        if request.type != STACK_TYPE:
            rec.calls.append(_decode(request, response.urn))
        return response

    def on_outputs(self: engine._RecordingMonitor, request: Any) -> Any:
        if f"::{STACK_TYPE}::" not in request.urn:  # the replay's own stack sends its outputs itself
            rec.calls.append(Outputs(request.urn, rpc.deserialize_properties(request.outputs)))
        return outputs(self, request)

    def on_invoke(self: engine._RecordingMonitor, request: Any) -> Any:
        provider = _urn(request.provider) if request.provider else None
        rec.calls.append(Invoke(request.tok, rpc.deserialize_properties(request.args), provider))
        return invoke(self, request)

    def on_sdk_register(res: pulumi.Resource, t: str, name: str, custom: bool, *args: Any, **kwargs: Any) -> None:
        # Resource.__init__ calls register_resource(res, t, name, custom, remote, new_dependency, props, opts, typ, …)
        if custom or args[0]:
            props, typ = args[2], (args[4] if len(args) > 4 else kwargs.get("typ"))
            cls = type(res)
            ref = ClassRef(
                cls.__module__,
                cls.__qualname__,
                typ.__module__ if typ else None,
                typ.__qualname__ if typ else None,
                tuple(props),
            )
            if rec.classes.setdefault(t, ref) != ref:
                raise AssertionError(f"{t} registered by two classes or prop sets: {rec.classes[t]} and {ref}")
        sdk_register(res, t, name, custom, *args, **kwargs)

    monitor.RegisterResource = on_register  # type: ignore[method-assign]
    monitor.RegisterResourceOutputs = on_outputs  # type: ignore[method-assign,assignment]
    monitor.Invoke = on_invoke  # type: ignore[method-assign,assignment]
    pulumi.resource.register_resource = on_sdk_register  # type: ignore[assignment]
    try:
        yield rec
    finally:
        monitor.RegisterResource = register  # type: ignore[method-assign]
        monitor.RegisterResourceOutputs = outputs  # type: ignore[method-assign]
        monitor.Invoke = invoke  # type: ignore[method-assign]
        pulumi.resource.register_resource = sdk_register


# -- replay --------------------------------------------------------------------------------------------------


def _done(value: Any) -> asyncio.Future[Any]:
    future: asyncio.Future[Any] = asyncio.get_event_loop().create_future()
    future.set_result(value)
    return future


def _secrets(wire: Any) -> Any:
    """A deserialized wire value back as a program input: wire secrets become secret Outputs."""
    if isinstance(wire, dict):
        if wire.get(_SIG) == _SECRET:
            return pulumi.Output.secret(_secrets(wire["value"]))
        return {k: _secrets(v) for k, v in wire.items()}
    if isinstance(wire, list):
        return [_secrets(v) for v in wire]
    return wire


@dataclass
class _Replay:
    made: dict[str, pulumi.Resource] = field(default_factory=dict)  # URN -> replayed resource
    known: asyncio.Future[Any] = field(default_factory=lambda: _done(True))  # shared by every dependency Output
    plain: asyncio.Future[Any] = field(default_factory=lambda: _done(False))

    def inputs(self, reg: Registration) -> dict[str, Any]:
        """Wire name -> input as a program gives it: an Output of the replayed resources where a property had
        dependencies (so the SDK sends the same property dependencies)."""
        inputs = dict(reg.values)
        for key in reg.secret_keys:
            inputs[key] = _secrets(inputs[key])
        for key, urns in reg.property_deps.items():
            if key in inputs:
                deps = {self.made[u] for u in urns}
                inputs[key] = pulumi.Output(deps, _done(inputs[key]), self.known, self.plain)
        return inputs


@functools.cache
def _sdk_class(ref: ClassRef) -> tuple[type[pulumi.Resource], type | None, dict[str, str]]:
    """The class, its input type and each untranslated prop key's wire name (as the SDK translates it)."""
    cls = getattr(importlib.import_module(ref.module), ref.name)
    typ = getattr(importlib.import_module(ref.input_module), ref.input_name) if ref.input_module else None  # type: ignore[arg-type]
    names = _types.input_type_py_to_pulumi_names(typ) if typ else {}
    return cls, typ, {k: names.get(k) or k for k in ref.keys}


def _register(reg: Registration, ref: ClassRef | None, run: _Replay) -> pulumi.Resource:
    made = run.made
    opts = pulumi.ResourceOptions(
        parent=made.get(reg.parent),
        depends_on=[made[u] for u in reg.depends_on] or None,
        replace_with=[made[u] for u in reg.replace_with] or None,
        provider=made[reg.provider] if reg.provider else None,  # type: ignore[arg-type]
        # The SDK folds `provider` into a component's providers map itself; passing it twice only warns.
        providers=[made[u] for u in reg.providers.values() if u != reg.provider] or None,  # type: ignore[misc]
        aliases=[a if isinstance(a, str) else pulumi.Alias(**a) for a in reg.aliases] or None,
        custom_timeouts=pulumi.CustomTimeouts(*(t or None for t in reg.timeouts)) if any(reg.timeouts) else None,
        **reg.options,
    )
    inputs = run.inputs(reg)
    if not reg.custom and not reg.remote:
        return pulumi.ComponentResource(reg.type, reg.name, inputs, opts)
    assert ref is not None, f"no SDK class recorded for {reg.type}"
    cls, typ, wire_names = _sdk_class(ref)
    res = cls.__new__(cls)  # the class's own constructor minus its argument handling: its Resource constructor
    untranslated = {k: inputs.get(w) for k, w in wire_names.items()}
    props: Any = untranslated
    if typ is not None:
        props = object.__new__(typ)  # as the generated class builds its input type
        props.__dict__.update(untranslated)
    if isinstance(res, pulumi.ComponentResource):  # a remote (multi-language) component
        pulumi.ComponentResource.__init__(res, reg.type, reg.name, props, opts, remote=True)
    elif isinstance(res, pulumi.ProviderResource):
        pulumi.ProviderResource.__init__(res, reg.type.split(":")[-1], reg.name, props, opts)
    else:
        assert isinstance(res, pulumi.CustomResource)
        pulumi.CustomResource.__init__(res, reg.type, reg.name, props, opts)
    return res


def replay(rec: Recording) -> None:
    """The fair floor program: send the recorded requests again, resource by resource."""
    run = _Replay()
    for call in rec.calls:
        if isinstance(call, Registration):
            run.made[call.urn] = _register(call, rec.classes.get(call.type), run)
        elif isinstance(call, Outputs):
            run.made[call.urn].register_outputs(_secrets(call.values))  # type: ignore[attr-defined]
        else:
            provider = run.made[call.provider] if call.provider else None
            pulumi.runtime.invoke(call.token, _secrets(call.args), pulumi.InvokeOptions(provider=provider))  # type: ignore[arg-type]
    for key, value in rec.exports.items():
        pulumi.export(key, value)


LOADED: list[Recording] = []  # load_for_replay puts the recording here before the timed runs


def replay_loaded() -> None:
    replay(LOADED[-1])


def load_for_replay(path: Path, directory: Path) -> Path:
    """Load the recording (untimed) and write a `__main__.py` in `directory` that replays it."""
    LOADED[:] = [Recording.load(path)]
    program = directory / "__main__.py"
    program.write_text("from benchmarks import fair_floor\n\nfair_floor.replay_loaded()\n")
    return program


def _same_form(call: Registration | Outputs | Invoke) -> str:
    """A call as canonical JSON that ignores only what may come in another order (dict keys, dependency sets)."""
    if isinstance(call, Registration):
        deps = {k: sorted(v) for k, v in call.property_deps.items()}
        form: list[Any] = [call.urn, call.type, call.name, call.custom, call.remote, call.values, deps, sorted(call.depends_on),
                           sorted(call.replace_with), call.options, call.parent, call.provider, call.providers, call.aliases,
                           call.timeouts]  # fmt: skip
    elif isinstance(call, Outputs):
        form = ["outputs", call.urn, call.values]
    else:
        form = ["invoke", call.token, call.args, call.provider]
    return json.dumps(form, sort_keys=True, default=repr)


def differences(original: Recording, replayed: Recording) -> list[str]:
    """What the replay sent differently from the original program (empty: the same requests, same classes)."""
    a = Counter(_same_form(c) for c in original.calls)
    b = Counter(_same_form(c) for c in replayed.calls)
    problems = [f"only in the original: {x[:300]}" for x in (a - b).elements()]
    problems += [f"only in the replay: {x[:300]}" for x in (b - a).elements()]
    problems += [f"{t}: {original.classes[t]} vs {replayed.classes.get(t)}" for t in original.classes
                 if original.classes[t] != replayed.classes.get(t)]  # fmt: skip
    return problems
