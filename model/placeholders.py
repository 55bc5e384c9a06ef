"""Placeholder values `gpufleet init` writes where only the user knows the answer, and their refusal.

- A stack file that still holds one fails a real `up`, so every command refuses it (StackFile.contents).
- A placeholder is any text value that contains PLACEHOLDER, in any case. The message names the field and the fix.
- Two values must be the user's own. S3 bucket names derive from `metadata.name` and are global across all AWS
  accounts. An admin role ARN must name a role in the user's account.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

PLACEHOLDER = "change-me"

# What each placeholder field needs instead, by YAML path (list positions as [*]); any other field: your own value.
FIXES = {
    "metadata.name": (
        "S3 bucket names derive from it (<name>-<environment>-datasets) and are global across every AWS account, "
        "so `up` fails on a name another account's bucket holds: choose the estate's own short name"
    ),
    "sites[*].cluster.admin_role_arns[*]": (
        "EKS gives this IAM role cluster-admin, and a role that does not exist fails the access entry: give your "
        "platform admins' role (`aws iam get-role --role-name <name>` prints its ARN)"
    ),
}


def placeholder_problems(estate: Any) -> list[tuple[str, str]]:
    """(YAML path under the estate, message) for each value of the raw estate that is still a placeholder."""
    out = []
    for path, value in _strings(estate, ""):
        if PLACEHOLDER in value.lower():
            fix = FIXES.get(re.sub(r"\[\d+\]", "[*]", path), "replace it with your own value")
            out.append((path, f"{value[:80]!r} is a placeholder `gpufleet init` wrote; {fix}"))
    return out


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{path}[{i}]")
