"""The stack file's breaking changes as data: keys that became required and keys that were replaced, each with
what to write now.

The loader's error formatter (`load.validation_problems`) looks a missing or an unknown estate key up here, so a
file written for an earlier schema is told what changed and what to write, not only that a key is missing or
unknown. CHANGELOG.md records the same changes, newest first, with the rules that tightened; a test keeps the two
in step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, assert_never

Kind = Literal["required", "replaced"]

CHANGELOG = "CHANGELOG.md"


@dataclass(frozen=True)
class SchemaChange:
    key: str  # YAML path under config.gpufleet:estate; a list item is `[]` (sites[].kubernetes.prometheus)
    kind: Kind  # required: a missing key is refused; replaced: the key is refused as unknown
    since: str  # the day of the change, as CHANGELOG.md dates it
    write: str  # what to write now

    def message(self) -> str:
        when = f"(since {self.since}; see {CHANGELOG})"
        match self.kind:
            case "required":
                return f"required key is missing {when}: {self.write}"
            case "replaced":
                return f"no longer a key {when}: replaced {self.write}"
            case _:
                assert_never(self.kind)


# Newest first, as in CHANGELOG.md.
CHANGES: tuple[SchemaChange, ...] = (
    SchemaChange(
        "burst.manager",
        "required",
        "2026-11-30",
        "the MultiKueue manager tenants submit to; write `manager: {name: <its cluster, not a site>, network: <the "
        "site whose network it is in>}` and set its kubeconfig as the secret `managerKubeconfig`",
    ),
    SchemaChange(
        "sites[].kubernetes.prometheus",
        "replaced",
        "2026-11-30",
        "by `kubernetes.monitoring`: where a Prometheus Operator runs (what `prometheus: true` meant) write "
        "`monitoring: {prometheus_operator: existing, service_monitor_labels: {release: <its Helm release>}}`, "
        "else remove the key (`prometheus_operator: none` is the default)",
    ),
    SchemaChange(
        "deployer",
        "required",
        "2026-11-30",
        "where `pulumi up` runs; write `deployer: {network: <site>, cidrs: [<the runner's addresses>]}` for a "
        "runner inside a site's network, or `deployer: {cidrs: [<its fixed egress addresses>]}` for one outside "
        "every site network",
    ),
)

_INDEX = re.compile(r"\[\d+\]")


def change_at(path: str, kind: Kind) -> SchemaChange | None:
    """The change that explains a `kind` error at `path` (a YAML path under the estate), if one does."""
    key = _INDEX.sub("[]", path)
    return next((c for c in CHANGES if c.key == key and c.kind == kind), None)
