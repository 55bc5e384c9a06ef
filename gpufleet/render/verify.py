"""`gpufleet verify`: the plan (checks, marks, sources) and the run (figures, verdicts) as text, Markdown or JSON."""

from __future__ import annotations

import json
from typing import Any

from gpufleet.verify.results import Report, Status, planned
from gpufleet.verify.suite import Check, Suite
from model import versions

MARK = {Status.passed: "PASS", Status.failed: "FAIL", Status.info: "INFO", Status.skipped: "SKIP",
        Status.error: "ERROR", Status.planned: "PLAN"}  # fmt: skip


def _threshold(c: Check) -> str:
    if c.threshold is not None:
        return f">= {c.threshold.value:g} {c.threshold.unit}"
    return c.criterion or "shown, not judged"


def _source(c: Check) -> str:
    if c.threshold is not None:
        return c.threshold.source
    return c.no_threshold_reason if not c.criterion else ""


def _images() -> list[tuple[str, str]]:
    return [(i.reference, "digest" if i.digest else "tag only (no published digest found)")
            for i in versions.ACCEPTANCE_IMAGES]  # fmt: skip


def where(c: Check) -> str:
    """Where a probe is submitted: a tenant's namespace and LocalQueue, or the run's own namespace."""
    if c.namespace is None:
        return "the run's own namespace (gpufleet-verify-<id>), no queue"
    here = f"namespace {c.namespace}, LocalQueue {c.queue or '-'}"
    if c.manager:
        return f"{here} on the MultiKueue manager {c.manager}, dispatched to worker {c.site}"
    return here


def plan_text(suite: Suite) -> str:
    lines = [f"gpufleet verify --plan: stack {suite.stack}, {len(suite.checks)} checks (no cluster contacted)", ""]
    for c in suite.checks:
        flag = "mandatory" if c.mandatory else "optional"
        lines.append(f"[{c.category}] {c.id} ({flag})")
        lines.append(f"    {c.title}")
        lines.append(f"    pass: {_threshold(c)}")
        lines.append(f"    runs in: {where(c)}")
        if c.journey:
            lines.append(f"    journey: {c.journey}")
        if _source(c):
            lines.append(f"    from: {_source(c)}")
        if c.skip_reason:
            lines.append(f"    not run: {c.skip_reason}")
    lines += ["", "images:"] + [f"    {ref}  [{how}]" for ref, how in _images()]
    return "\n".join(lines) + "\n"


def results_text(report: Report) -> str:
    lines = []
    for r in report.results:
        c = r.check
        lines.append(f"{MARK[r.status]:5} {c.id}  {r.measured or '-'}  (pass: {_threshold(c)})")
        if c.journey:
            lines.append(f"      journey: {c.journey}")
        if r.detail:
            lines.append(f"      {r.detail}")
        if c.threshold is not None and r.status in (Status.passed, Status.failed):
            lines.append(f"      mark from: {c.threshold.source}")
    lines.append("")
    lines.append("ACCEPTED" if report.accepted else "NOT ACCEPTED: a mandatory check failed or did not finish")
    for q in report.quarantined:
        lines.append(f"quarantined: {q}; {RETURN_HINT}")
    for p in report.cleanup_problems:
        lines.append(f"cleanup: {p}")
    return "\n".join(lines) + "\n"


RETURN_HINT = "return a repaired node with `gpufleet verify --stack STACK --return NODE` (docs/verify.md)"


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(report: Report) -> str:
    s = report.suite
    verdict = "accepted" if report.accepted else "**not accepted**: a mandatory check failed or did not finish"
    out = [f"# Acceptance report: stack `{s.stack}` ({s.spec.metadata.name}, {s.spec.metadata.environment})", ""]
    out.append(f"Verdict: {verdict}.")
    if report.started and report.finished:
        out.append(f"Run: {report.started:%Y-%m-%d %H:%M} to {report.finished:%H:%M} UTC.")
    out += ["", "## Versions", "", "| component | version |", "|---|---|"]
    for site_name, v in sorted(report.cluster_versions.items()):
        out.append(f"| Kubernetes on site `{site_name}` | {v} |")
    for chart in (versions.GPU_OPERATOR, versions.KUEUE, versions.NETWORK_OPERATOR, versions.AWS_EFA_DEVICE_PLUGIN):
        out.append(f"| chart {chart.name} | {chart.version} |")
    for ref, how in _images():
        out.append(f"| image `{ref}` | {how} |")
    out += ["", "## Topology", "", "| site | kind | pool | role | GPUs/node | fabric |", "|---|---|---|---|---|---|"]
    for site, pool in s.spec.pools():
        gpus = f"{s.spec.pool_gpus_per_node(pool.name)} x {s.spec.pool_gpu_model(pool.name).id}"
        out.append(f"| {site.name} | {site.kind} | {pool.name} | {pool.role} | {gpus} | {pool.fabric or '-'} |")
    out += ["", "## Checks", "", "| result | check | measured | pass mark | where the mark comes from |",
            "|---|---|---|---|---|"]  # fmt: skip
    for r in report.results:
        c = r.check
        name = f"{c.id}{'' if c.mandatory else ' (optional)'}<br>{c.title}<br>runs in {where(c)}"
        if c.journey:
            name += f"<br>journey: {c.journey}"
        measured = r.measured or "-"
        if r.detail:
            measured += f"<br>{r.detail}"
        out.append(f"| {MARK[r.status]} | {_md_cell(name)} | {_md_cell(measured)} | {_md_cell(_threshold(c))} | "
                   f"{_md_cell(_source(c))} |")  # fmt: skip
    out += ["", "## Not tested", ""] + [f"- {_md_cell(x)}" for x in report.not_tested]
    if report.quarantined:
        out += ["", "## Quarantined", "", RETURN_HINT, ""] + [f"- {_md_cell(q)}" for q in report.quarantined]
    if report.cleanup_problems:
        out += ["", "## Left behind by cleanup", ""] + [f"- {p}" for p in report.cleanup_problems]
    return "\n".join(out) + "\n"


def plan_dict(suite: Suite) -> dict[str, Any]:
    return {
        "stack": suite.stack,
        "checks": [planned(c).to_dict() for c in suite.checks],
        "images": [{"reference": ref, "pinned": how} for ref, how in _images()],
    }


def to_json(report: Report) -> str:
    doc = {
        "stack": report.suite.stack,
        "accepted": report.accepted,
        "versions": report.cluster_versions,
        "results": [r.to_dict() for r in report.results],
        "not_tested": report.not_tested,
        "cleanup_problems": report.cleanup_problems,
        "quarantined": report.quarantined,
    }
    return json.dumps(doc, indent=1, default=str)
