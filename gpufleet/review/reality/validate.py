"""Validate Kubernetes objects against the real schemas: the Kubernetes OpenAPI of the pinned version and the CRDs.

- Built-in kinds: the strict JSON schemas `kubernetes-validate` (PyPI) bundles per Kubernetes minor
  (`builtin_issues`). Every error is reported, not only the first.
- Custom resources: the served version's `openAPIV3Schema` of the CRD at the pinned tag, checked as the API
  server checks a structural schema (`crd_issues`).
- A field the schema does not define is reported as unknown, though the API server would prune it silently: the
  setting would be lost.
- `x-kubernetes-validations` CEL rules are evaluated as on create (`cel_issues`).
- A rule that cannot be evaluated offline is reported as unchecked, never as passed.
- The checks are pure, so a result is kept by the value checked (`_memo`): a fleet holds many alike objects.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import re
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from gpufleet.engine.plan import SECRET, UNKNOWN

if TYPE_CHECKING:  # the `render` extra; imported where used so a base install still loads this module
    import jsonschema
    from referencing import Registry

MARKERS = {SECRET, UNKNOWN}  # values the offline plan cannot know: never judged


@dataclass(frozen=True)
class SchemaIssue:
    path: str  # dotted path in the object, e.g. spec.template.spec.containers[0].image
    message: str
    unchecked: bool = False  # a rule that could not be evaluated offline (not a failure)


def _path(parts: Any) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(object)"


def _judgeable(err: jsonschema.ValidationError) -> bool:
    return not (isinstance(err.instance, str) and err.instance in MARKERS)


# -- results kept by value ----------------------------------------------------------------------------------------

_SCALARS = (str, int, float, bool, type(None))
_MEMO: dict[Any, Any] = {}
MEMO_LIMIT = 50_000  # results kept before the memo starts over


def _plain(value: Any) -> bool:
    """Whether `value` is made of dicts with string keys, lists and scalars of exactly the JSON types: then two
    values with the same repr are equal, and check alike."""
    t = type(value)
    if t is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if t is list:
        return all(_plain(v) for v in value)
    return t in _SCALARS


def _digest(value: Any) -> bytes | None:
    """A key for a plain value (`_plain`), None for any other."""
    return hashlib.blake2b(repr(value).encode(), digest_size=16).digest() if _plain(value) else None


def _memo(key: tuple[Any, ...], compute: Any) -> Any:
    """`compute()`, kept under `key`; computed every time when the key holds None (a value not plain)."""
    if None in key:
        return compute()
    if key in _MEMO:
        return _MEMO[key]
    if len(_MEMO) >= MEMO_LIMIT:
        _MEMO.clear()
    _MEMO[key] = value = compute()
    return value


# -- built-in kinds -----------------------------------------------------------------------------------------------


@functools.cache
def bundled_versions() -> tuple[str, ...]:
    """Kubernetes minors kubernetes-validate bundles schemas for, e.g. ('1.25', ..., '1.37')."""
    from kubernetes_validate.utils import all_versions

    return tuple(sorted({".".join(v.split(".")[:2]) for v in all_versions()}, key=lambda v: int(v.split(".")[1])))


def _schema_dir(version: str) -> Any:
    return resources.files("kubernetes_validate").joinpath("kubernetes-json-schema", f"v{version}.0-local-strict")


@functools.cache
def _registry(version: str) -> Registry:
    from referencing import Registry, Resource

    defs = json.loads(_schema_dir(version).joinpath("_definitions.json").read_text())
    return Resource.from_contents(defs) @ Registry()


def _api_file(api_version: str, kind: str) -> str:
    group_version = api_version.split("/")
    if len(group_version) == 1:
        return f"{kind.lower()}-{group_version[0]}.json"
    group = group_version[0].split(".")[0]
    return f"{kind.lower()}-{group}-{group_version[1]}.json"


@functools.cache
def _core_validator(version: str, api_version: str, kind: str) -> jsonschema.Draft202012Validator | None:
    import jsonschema

    f = _schema_dir(version).joinpath(_api_file(api_version, kind))
    if not f.is_file():
        return None
    return jsonschema.Draft202012Validator(json.loads(f.read_text()), registry=_registry(version))


def is_builtin(api_version: str, kind: str, version: str) -> bool:
    return _core_validator(version, api_version, kind) is not None


def builtin_issues(obj: dict[str, Any], version: str, *, partial: bool = False) -> list[SchemaIssue] | None:
    """Every schema error of a built-in object for Kubernetes `version`; None when the kind is not built in.

    The schemas are generated from the upstream OpenAPI. Their strict variants make a field the API does not define
    an error, as `kubectl apply --validate=strict` reports it.

    `partial` (a server-side-apply patch): required fields are not demanded.
    """
    if version not in bundled_versions():
        raise ValueError(
            f"no bundled OpenAPI schemas for Kubernetes {version} "
            f"(kubernetes-validate has {bundled_versions()[0]} to {bundled_versions()[-1]})"
        )
    validator = _core_validator(version, str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
    if validator is None:
        return None

    def check() -> tuple[SchemaIssue, ...]:
        return tuple(
            SchemaIssue(_path(err.absolute_path), _message(err))
            for err in sorted(validator.iter_errors(obj), key=lambda e: list(e.absolute_path))
            if _judgeable(err) and not (partial and err.validator == "required")
        )

    return list(_memo(("builtin", version, partial, _digest(obj)), check))


def _message(err: jsonschema.ValidationError) -> str:
    if err.validator == "additionalProperties":
        return f"unknown field: {err.message.split('(')[-1].rstrip(')')}"
    return err.message if len(err.message) < 300 else err.message[:297] + "..."


# -- custom resources ---------------------------------------------------------------------------------------------


def served_schema(crd: dict[str, Any], api_version: str) -> dict[str, Any] | None:
    """The openAPIV3Schema of the CRD version `api_version` names, if the CRD serves it."""
    version = api_version.split("/")[-1]
    for v in (crd.get("spec") or {}).get("versions") or []:
        if v.get("name") == version and v.get("served", True):
            return dict(((v.get("schema") or {}).get("openAPIV3Schema")) or {"type": "object"})
    return None


def _structural(schema: Any, root: bool = False) -> Any:
    """A JSON schema that rejects what a structural schema would prune (unknown fields), nullable as null."""
    if not isinstance(schema, dict):
        return schema
    out = {k: _structural(v) for k, v in schema.items() if k not in ("properties", "items", "x-kubernetes-validations")}
    if "items" in schema:
        out["items"] = _structural(schema["items"])
    if isinstance(schema.get("pattern"), str):
        out["pattern"] = python_pattern(schema["pattern"])
    if "properties" in schema:
        out["properties"] = {k: _structural(v) for k, v in schema["properties"].items()}
    if root:
        props = out.setdefault("properties", {})
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        props.setdefault("metadata", {"type": "object"})
    if schema.get("nullable") and isinstance(schema.get("type"), str):
        out["type"] = [schema["type"], "null"]
    if (
        schema.get("type") == "object"
        and "properties" in out
        and "additionalProperties" not in schema
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


def python_pattern(pattern: str) -> str:
    """A Go (RE2) pattern as Python `re` accepts it: inline flags such as `^(?i)` moved to the front."""
    m = re.match(r"^\^\(\?([a-zA-Z]+)\)", pattern)
    return f"(?{m.group(1)})^{pattern[m.end() :]}" if m else pattern


def _defaulted(value: Any, schema: dict[str, Any]) -> Any:
    """`value` with the schema's defaults applied, as the API server does before validation."""
    if isinstance(value, dict) and "properties" in schema:
        out = dict(value)
        for key, sub in schema["properties"].items():
            if key not in out and "default" in sub:
                out[key] = copy.deepcopy(sub["default"])
            if key in out:
                out[key] = _defaulted(out[key], sub)
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_defaulted(v, schema["items"]) for v in value]
    return value


def crd_issues(obj: dict[str, Any], crd: dict[str, Any]) -> list[SchemaIssue]:
    """Every problem of a custom resource against its CRD: schema, unknown fields and CEL rules on create.

    `jsonschema` checks what the API server checks of a structural schema: types, enums, required fields, bounds.
    CEL rules run only on a schema-valid object, after the schema's defaults are applied, as on create.
    """
    api_version = str(obj.get("apiVersion", ""))
    # The CRD's digest is kept by its id (a CRD is not changed once checked): the entry holds the CRD, so no
    # other dict takes that id meanwhile.
    crd_digest = _memo(("crd id", id(crd)), lambda: (crd, _digest(crd)))[1]
    found = _memo(("crd", crd_digest, api_version), lambda: _crd_validator(crd, api_version))
    if found is None:
        name = (crd.get("metadata") or {}).get("name")
        return [SchemaIssue("apiVersion", f"CRD {name} does not serve {obj.get('apiVersion')}")]
    schema, validator = found

    def check() -> tuple[SchemaIssue, ...]:
        issues = [
            SchemaIssue(_path(e.absolute_path), _message(e))
            for e in sorted(validator.iter_errors(obj), key=lambda e: list(e.absolute_path))
            if _judgeable(e)
        ]
        return tuple(issues or cel_issues(_defaulted(obj, schema), schema))

    return list(_memo(("crd", crd_digest, api_version, _digest(obj)), check))


def _crd_validator(crd: dict[str, Any], api_version: str) -> tuple[dict[str, Any], jsonschema.Draft4Validator] | None:
    """The served schema of `api_version` and its structural validator; None when the CRD does not serve it."""
    schema = served_schema(crd, api_version)
    if schema is None:
        return None
    import jsonschema

    return schema, jsonschema.Draft4Validator(_structural(schema, root=True))


def cel_issues(value: Any, schema: dict[str, Any], path: tuple[Any, ...] = ()) -> list[SchemaIssue]:
    """Evaluate every x-kubernetes-validations rule that applies to `value` on create, with `cel-python`.

    Transition rules (`oldSelf`) do not apply on create and are skipped. A rule cel-python cannot evaluate (it lacks
    the Kubernetes-only CEL libraries) is reported as unchecked.
    """
    issues: list[SchemaIssue] = []
    for rule in schema.get("x-kubernetes-validations") or []:
        issue = _evaluate(rule, value, path)
        if issue is not None:
            issues.append(issue)
    if isinstance(value, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if key in value:
                issues.extend(cel_issues(value[key], sub, (*path, key)))
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key, v in value.items():
                if key not in (schema.get("properties") or {}):
                    issues.extend(cel_issues(v, extra, (*path, key)))
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, v in enumerate(value):
            issues.extend(cel_issues(v, schema["items"], (*path, i)))
    return issues


def _contains_marker(value: Any) -> bool:
    if isinstance(value, str):
        return value in MARKERS
    if isinstance(value, dict):
        return any(_contains_marker(v) for v in value.values())
    if isinstance(value, list):
        return any(_contains_marker(v) for v in value)
    return False


@functools.cache
def _program(expression: str) -> Any:
    import celpy

    env = celpy.Environment()
    return env.program(env.compile(expression))


def _outcome(expression: str, value: Any) -> str | None:
    """None when the rule holds on `value`, "" when it fails, else why it could not be checked."""
    if _contains_marker(value):
        return "value unknown offline"
    from celpy import celtypes, json_to_cel

    try:
        result = _program(expression).evaluate({"self": json_to_cel(value)})
    except Exception as err:  # cel-python lacks some Kubernetes CEL libraries
        return type(err).__name__
    if isinstance(result, Exception) or not isinstance(result, bool | celtypes.BoolType):
        return "no boolean result"
    return None if bool(result) else ""


def _evaluate(rule: dict[str, Any], value: Any, path: tuple[Any, ...]) -> SchemaIssue | None:
    expression = str(rule.get("rule", ""))
    if "oldSelf" in expression and not rule.get("optionalOldSelf"):
        return None  # a transition rule: it applies on update only
    outcome = _memo(("cel", expression, _digest(value)), lambda: _outcome(expression, value))
    if outcome:
        return SchemaIssue(_path(path), f"CEL rule not checked ({outcome}): {expression}", unchecked=True)
    if outcome is None:
        return None
    where = _path((*path, *str(rule.get("fieldPath", "")).lstrip(".").split("."))) if rule.get("fieldPath") else None
    return SchemaIssue(where or _path(path), f"{rule.get('message') or 'CEL rule failed'} (rule: {expression})")
