"""A policy finding: the shared shape between `gpufleet.review.check` and the renderers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Enforcement = Literal["mandatory", "advisory"]


@dataclass(frozen=True)
class Finding:
    pack: str  # e.g. "tenancy"
    rule: str  # rule id, e.g. "tenant-quota-requests-only"
    enforcement: Enforcement
    message: str
    resource: str | None = None  # logical key of the resource; None for stack-level findings
    remediation: str = ""  # what to change in the stack file


def mandatory(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.enforcement == "mandatory"]
