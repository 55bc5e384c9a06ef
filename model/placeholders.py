"""Placeholder values `gpufleet init` writes where only the user knows the answer, and their refusal.

- A stack file that still holds one fails a real `up`, so every command refuses it (StackFile.contents).
- A placeholder is a text value holding the token PLACEHOLDER, in any case, not inside a longer word (so
  `exchange-metrics-team` is no placeholder). The message names the field and the fix.
- Some values must be the user's own. S3 bucket names derive from `metadata.name` and are global across all AWS
  accounts. An admin role ARN must name a role in the user's account. The deployer's egress CIDRs must be its own.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

PLACEHOLDER = "change-me"
# The token alone: not a part of a longer name (`exchange-metrics`, `change-mediator`); `-` joins words in a name.
_TOKEN = re.compile(rf"(?<![a-z0-9]){re.escape(PLACEHOLDER)}(?![a-z0-9])")

# What each placeholder field needs instead, by YAML path (list positions as [*]); any other field: your own value.
FIXES = {
    "metadata.name": (
        "S3 bucket names derive from it (<name>-<environment>-datasets) and are global across every AWS account, "
        "so `up` fails on a name another account's bucket holds: choose the estate's own short name"
    ),
    "sites[*].cluster.admin_role_arns[*]": (
        "EKS gives this IAM role cluster-admin, and a role that does not exist fails the access entry: give your "
        "platform admins' role in your account (`aws iam get-role --role-name <name>` prints its ARN)"
    ),
    "deployer.cidrs[*]": (
        "the fixed public egress of the runner doing `pulumi up`, which the cluster's public endpoint admits: give "
        "its CIDR (an RFC 5737 documentation range is on no network)"
    ),
    "sites[*].cluster.endpoint_public_cidrs[*]": (
        "the only addresses the EKS public endpoint admits: give the deployer's egress CIDR (deployer.cidrs)"
    ),
}


def placeholder_problems(estate: Any) -> list[tuple[str, str]]:
    """(YAML path under the estate, message) for each value of the raw estate that is still a placeholder."""
    out = []
    for path, value in _strings(estate, ""):
        if _TOKEN.search(value.lower()):
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
