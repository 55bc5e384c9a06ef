"""What a check found: a status, the measured figure next to its mark, and the evidence."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from gpufleet.verify.suite import Check, Suite, not_automated


class Status(StrEnum):
    passed = "pass"
    failed = "fail"
    info = "info"  # measured and shown, no pass mark
    skipped = "skipped"  # could not run here (the reason says why): not tested
    error = "error"  # meant to run but did not finish (timeout, unschedulable, unparseable output)
    planned = "planned"  # --plan: not run


@dataclass
class Result:
    check: Check
    status: Status
    measured: str = ""  # the figure as shown, with its unit
    detail: str = ""  # why it failed / was skipped, or what was seen
    evidence: dict[str, Any] = field(default_factory=dict)  # per-node figures and findings, for json

    @property
    def blocks_acceptance(self) -> bool:
        """A mandatory check that failed or could not finish: the deployment is not accepted."""
        return self.check.mandatory and self.status in (Status.failed, Status.error)

    def to_dict(self) -> dict[str, Any]:
        c = self.check
        return {
            "id": c.id,
            "category": str(c.category),
            "kind": str(c.kind),
            "site": c.site,
            "title": c.title,
            "namespace": c.namespace,  # None: the run's own namespace
            "queue": c.queue,
            "manager": c.manager,  # None: submitted to the site's own cluster
            "journey": c.journey or None,
            "mandatory": c.mandatory,
            "status": str(self.status),
            "measured": self.measured,
            "threshold": None
            if c.threshold is None
            else {"value": c.threshold.value, "unit": c.threshold.unit, "source": c.threshold.source},
            "criterion": c.criterion,
            "detail": self.detail,
            "evidence": self.evidence,
        }


def planned(check: Check) -> Result:
    """A check as `--plan` shows it: skipped when it cannot run on this estate, else planned."""
    return skipped(check, check.skip_reason) if check.skip_reason else Result(check, Status.planned)


def skipped(check: Check, reason: str) -> Result:
    return Result(check, Status.skipped, detail=reason)


def judged(check: Check, value: float, unit: str, detail: str = "", **evidence: Any) -> Result:
    """A figure against the check's threshold (info when it has none)."""
    shown = f"{value:.1f} {unit}"
    if check.threshold is None:
        return Result(check, Status.info, shown, detail or check.no_threshold_reason, dict(evidence))
    ok = check.threshold.passes(value)
    return Result(check, Status.passed if ok else Status.failed, shown, detail, dict(evidence))


@dataclass
class Report:
    suite: Suite
    results: list[Result] = field(default_factory=list)
    cluster_versions: dict[str, str] = field(default_factory=dict)  # site -> Kubernetes server version
    cleanup_problems: list[str] = field(default_factory=list)
    quarantined: list[str] = field(default_factory=list)  # `site: node (why)` this run took out of service
    started: dt.datetime | None = None
    finished: dt.datetime | None = None

    @property
    def accepted(self) -> bool:
        return not any(r.blocks_acceptance for r in self.results)

    @property
    def not_tested(self) -> list[str]:
        out = [f"{r.check.id}: {r.detail}" for r in self.results if r.status is Status.skipped]
        return out + not_automated()
