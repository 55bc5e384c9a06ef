"""Reading YAML text: PyYAML's safe loader, on libyaml's parser when PyYAML was built with it.

`yaml.CSafeLoader` has the same resolver and constructor as `yaml.SafeLoader` (PyYAML `cyaml.py`), so it builds the
same values; only the parser is C. A stack file with a 1,250-server inventory takes seconds in the pure-Python
parser. Error messages differ in wording, but both loaders mark the line and column of a problem.

For YAML that gpufleet ships, generates or has Helm render (the GPU catalog, a kubeconfig it builds, Kueue's config,
a pinned chart's manifests and CRDs).
Files a user writes (stack, workload, usage, Pulumi.yaml, kubeconfigs handed to `verify`) go through
`model.load.read_yaml`, which bounds size, depth, aliases and numbers.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import yaml
from yaml.constructor import BaseConstructor, ConstructorError
from yaml.nodes import MappingNode

SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str) -> Any:
    """`yaml.safe_load(text)` on the fastest safe loader available."""
    return yaml.load(text, Loader=SAFE_LOADER)


def safe_load_all(text: str) -> list[Any]:
    """`yaml.safe_load_all(text)` on the fastest safe loader available, as a list."""
    return list(yaml.load_all(text, Loader=SAFE_LOADER))


class _ManifestLoader(SAFE_LOADER):
    """The safe loader, reading a plain `=` as the string Kubernetes' YAML reads (prometheus-operator's CRDs list
    the matcher `=` in enums). PyYAML resolves it to YAML 1.1's `value` type and has no constructor for it."""


_ManifestLoader.add_constructor("tag:yaml.org,2002:value", yaml.SafeLoader.construct_yaml_str)


def manifests(text: str) -> list[Any]:
    """The documents of rendered Kubernetes YAML (a chart's manifests and CRDs), as Kubernetes reads them."""
    return list(yaml.load_all(text, Loader=_ManifestLoader))


def check_unique_keys(constructor: BaseConstructor, node: MappingNode) -> None:
    """Refuse a key written twice in one mapping, naming both lines.

    YAML 1.2 section 3.2.1.1 requires unique keys; PyYAML keeps the last silently, so a review would read a value
    that is not the one used. Keys a merge (`<<: *anchor`) brings in may still be overridden: that is a merge.
    """
    lines: dict[Hashable, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = constructor.construct_object(key_node)
        if not isinstance(key, Hashable):
            continue  # the constructor refuses an unhashable key itself
        if key in lines:
            problem = f"duplicate key {key!r} (first on line {lines[key] + 1}); each key may appear once"
            raise ConstructorError("while constructing a mapping", node.start_mark, problem, key_node.start_mark)
        lines[key] = key_node.start_mark.line


def over_limit(path: Sequence[Any], limits: Mapping[tuple[Any, ...], int]) -> tuple[str, int] | None:
    """When `path` (keys and list positions from the root) reaches item `limit` of a list that `limits` bounds:
    that list's YAML path and its limit. A bound's key has `*` for any list position.

    A reader checks this while it composes a document, so a list far over its bound stops at the bound, before
    the rest of the file is parsed."""
    if not path or not isinstance(path[-1], int):
        return None
    *where, position = path
    limit = limits.get(tuple("*" if isinstance(p, int) else p for p in where))
    if limit is None or position < limit:
        return None
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in where).lstrip("."), limit
