"""Which AWS resource types are taggable: those whose pulumi-aws input schema has a `tags` property.

The list lives in `aws_taggable_types.json` beside this module, generated from the installed pulumi-aws
package (each resource module's `_internal_init` sets `__props__.__dict__["tags"]` exactly when the input
schema has `tags`). Regenerate after upgrading pulumi-aws:

    .venv/bin/python -m policies.cost_tags.taggable

A test fails when the file and the installed package disagree.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path

TAGGABLE_FILE = Path(__file__).with_name("aws_taggable_types.json")
_TOKEN = re.compile(r"super\(\w+, __self__\)\.__init__\(\s*'(aws:[^']+)'")
_TAGS_INPUT = '__props__.__dict__["tags"] = tags'


def scan(package_dir: Path) -> dict[str, object]:
    """Scan an installed pulumi_aws package for resource type tokens with a `tags` input."""
    taggable: set[str] = set()
    for path in package_dir.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        tokens = _TOKEN.findall(text)
        if tokens and _TAGS_INPUT in text:
            taggable.update(tokens)
    version = json.loads((package_dir / "pulumi-plugin.json").read_text()).get("version", "unknown")
    return {"pulumi_aws_version": version, "types": sorted(taggable)}


def installed_package_dir() -> Path:
    import pulumi_aws

    return Path(pulumi_aws.__file__).parent


@cache
def taggable_types() -> frozenset[str]:
    return frozenset(json.loads(TAGGABLE_FILE.read_text())["types"])


if __name__ == "__main__":
    doc = scan(installed_package_dir())
    TAGGABLE_FILE.write_text(json.dumps(doc, indent=1) + "\n")
    print(
        f"{len(taggable_types.__wrapped__())} taggable types (pulumi-aws {doc['pulumi_aws_version']}) -> {TAGGABLE_FILE}"
    )
