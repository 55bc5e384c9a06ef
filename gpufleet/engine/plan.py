"""Plan: what a stack would register, with stable logical keys and normalised inputs.

The logical key of a resource is what the engine identifies it by inside a stack: the qualified type chain
of its parents, its type and its name (`gpufleet:index:Estate$gpufleet:aws:Site$aws:ec2/vpc:Vpc::train-vpc`).
It is stable across runs and changes exactly when the engine would replace the resource (unless aliased).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from model.conventions import HELM_RELEASE

SECRET = "[secret]"
UNKNOWN = "[unknown]"


@dataclass
class PlanResource:
    key: str
    type: str
    name: str
    parent: str | None  # logical key of the parent (None at the stack root)
    custom: bool
    inputs: dict[str, Any]
    protect: bool = False
    retain_on_delete: bool = False
    dependencies: list[str] = field(default_factory=list)
    provider: str | None = None  # logical key of the explicit provider, if any
    aliases: list[str] = field(default_factory=list)  # logical keys of earlier identities (engine-completed)
    ignore_changes: list[str] = field(default_factory=list)
    replace_on_changes: list[str] = field(default_factory=list)  # input paths whose change replaces it
    delete_before_replace: bool = False
    replace_with: list[str] = field(default_factory=list)  # logical keys whose replacement replaces it too
    delete_timeout: str = ""  # customTimeouts.delete ("" for the provider's default)

    @property
    def is_kubernetes_object(self) -> bool:
        return (
            self.custom and self.type.startswith("kubernetes:") and self.type != HELM_RELEASE and "kind" in self.inputs
        )

    @property
    def tags(self) -> dict[str, str]:
        tags = self.inputs.get("tags")
        return dict(tags) if isinstance(tags, dict) else {}


@dataclass
class Plan:
    project: str
    stack: str
    resources: list[PlanResource]
    outputs: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._by_key = {r.key: r for r in self.resources}
        self._children: dict[str | None, list[PlanResource]] = {}
        for r in self.resources:
            self._children.setdefault(r.parent, []).append(r)

    # -- queries -----------------------------------------------------------------------------------
    def get(self, key: str) -> PlanResource:
        return self._by_key[key]

    def find(self, type_: str, name: str | None = None) -> list[PlanResource]:
        return [r for r in self.resources if r.type == type_ and (name is None or r.name == name)]

    def one(self, type_: str, name: str) -> PlanResource:
        found = self.find(type_, name)
        if len(found) != 1:
            raise KeyError(f"expected one {type_} named {name}, found {len(found)}")
        return found[0]

    def children(self, key: str | None) -> list[PlanResource]:
        return list(self._children.get(key, []))

    def descendants(self, key: str) -> Iterator[PlanResource]:
        for child in self.children(key):
            yield child
            yield from self.descendants(child.key)

    def ancestors(self, key: str) -> Iterator[PlanResource]:
        parent = self._by_key[key].parent
        while parent is not None:
            r = self._by_key[parent]
            yield r
            parent = r.parent

    def type_counts(self) -> Counter[str]:
        return Counter(r.type for r in self.resources if r.custom)

    def kubernetes_objects(self) -> list[PlanResource]:
        return [r for r in self.resources if r.is_kubernetes_object]

    def helm_releases(self) -> list[PlanResource]:
        return self.find(HELM_RELEASE)

    # -- serialisation -------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "stack": self.stack,
            "outputs": self.outputs,
            "warnings": self.warnings,
            "resources": [asdict(r) for r in self.resources],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=True)

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Plan:
        return cls(
            project=doc["project"],
            stack=doc["stack"],
            outputs=doc.get("outputs", {}),
            warnings=doc.get("warnings", []),
            resources=[PlanResource(**r) for r in doc["resources"]],
        )


# Pulumi's wire signatures (sdk/python/lib/pulumi/runtime/rpc.py).
_SIG = "4dabf18193072939515e22adb298388d"
_SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270"
_RESOURCE_SIG = "5cf8f73096256a8f31e491e813e4eb8e"
_OUTPUT_SIG = "d0e6a833031e9bbcd3f4e8bde6ca49a4"
_UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"


def normalise(value: Any, urn_to_key: dict[str, str] | None = None) -> Any:
    """Plain JSON: secrets masked, unknowns marked, integral floats as ints, resource refs as logical keys."""
    if isinstance(value, dict):
        sig = value.get(_SIG)
        if sig == _SECRET_SIG:
            return SECRET
        if sig == _RESOURCE_SIG:
            urn = str(value.get("urn", ""))
            return {"$ref": (urn_to_key or {}).get(urn, urn)}
        if sig == _OUTPUT_SIG:
            if value.get("secret"):
                return SECRET
            return normalise(value.get("value", UNKNOWN), urn_to_key) if "value" in value else UNKNOWN
        return {str(k): normalise(v, urn_to_key) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normalise(v, urn_to_key) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if value == _UNKNOWN:
        return UNKNOWN
    return value
