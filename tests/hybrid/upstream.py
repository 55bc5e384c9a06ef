"""Upstream artifacts at the pinned versions, from the local chart cache: Kueue's CRDs (to validate the objects
gpufleet writes) and the cluster-autoscaler and JobSet charts (to check the values gpufleet sets exist there).

The chart cache is tests/charts.py's; a test that needs a chart the cache lacks is skipped, naming the folder.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import jsonschema
import yaml

from model import versions
from tests.charts import chart_dir


def _untemplated(text: str) -> str:
    """A CRD file of the Kueue chart without its Helm directives (labels, annotations, comment blocks)."""
    out, comment = [], False
    for line in text.splitlines():
        if "{{-" in line and "/*" in line:
            comment = "*/" not in line
            continue
        if comment:
            comment = "*/" not in line
            continue
        if "{{" not in line:
            out.append(line)
    return "\n".join(out)


@cache
def kueue_crds() -> dict[str, dict[str, Any]]:
    """kind -> openAPIV3Schema of its kueue.x-k8s.io/v1beta2 version, from the Kueue chart's CRDs."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted((chart_dir(versions.KUEUE) / "templates" / "crd").glob("*.yaml")):
        crd = yaml.safe_load(_untemplated(path.read_text()))
        kind = crd["spec"]["names"]["kind"]
        version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1beta2")
        out[kind] = version["schema"]["openAPIV3Schema"]
    return out


def _strict(schema: Any) -> Any:
    """The schema with unknown fields refused where the API server prunes them (no preserve-unknown-fields)."""
    if isinstance(schema, list):
        return [_strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _strict(v) for k, v in schema.items()}
    if isinstance(out.get("pattern"), str) and not _compiles(out["pattern"]):
        del out["pattern"]  # an RE2 construct Python's re lacks; the rest of the schema still applies
    if "properties" in out and not schema.get("x-kubernetes-preserve-unknown-fields"):
        out.setdefault("additionalProperties", False)
    return out


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


def kueue_problems(obj: dict[str, Any]) -> list[str]:
    """What the Kueue CRD of `obj`'s kind refuses or would drop in `obj` (metadata aside)."""
    schema = _strict(kueue_crds()[obj["kind"]])
    schema["properties"].pop("metadata", None)
    body = {k: v for k, v in obj.items() if k != "metadata"}
    validator = jsonschema.Draft7Validator(schema)
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(body)]
