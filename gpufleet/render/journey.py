"""`gpufleet journey`: each workload's journey as text (a line per workload, then its stages) or JSON."""

from __future__ import annotations

import json

from gpufleet.review.reality.journeys.core import Journey


def _lands(j: Journey) -> str:
    p = j.placement
    if p is None:
        queued = next((s for s in j.stages if s.name == "queueing"), None)
        return queued.detail if queued is not None else "no placement walked"
    flavor = f", flavor {p.flavor}" if p.flavor else ""
    return f"site {p.site}, pool {p.pool}, {p.nodes} node{'s' if p.nodes != 1 else ''}{flavor}"


def journey_text(journeys: list[Journey]) -> str:
    lines = []
    for j in journeys:
        stop = j.blocked_at
        if stop is None:
            lines.append(f"runs     {j.workload.id}: {_lands(j)}")
        else:
            lines.append(f"blocked  {j.workload.id} at {stop.name}: {stop.detail}")
            if stop.blocker:
                lines.append(f"         blocker: {stop.blocker}")
            if stop.unblock:
                lines.append(f"         unblock: {stop.unblock}")
        lines.append(f"         ({j.workload.source})")
        for s in j.stages:
            detail = s.detail if s.ok else "refuses it (above)"
            lines.append(f"         {'ok' if s.ok else 'NO':<3}{s.name:<10} {detail}")
    runs = sum(j.verdict == "runs" for j in journeys)
    lines.append(f"{runs} of {len(journeys)} workload{'s' if len(journeys) != 1 else ''} run")
    return "\n".join(lines) + "\n"


def journey_json(journeys: list[Journey]) -> str:
    return json.dumps({"journeys": [j.to_dict() for j in journeys]}, indent=2)


def _outcome(j: Journey) -> str:
    stop = j.blocked_at
    if stop is None:
        return _lands(j)
    blocker = f" by {stop.blocker}" if stop.blocker else ""
    return f"blocked at {stop.name}{blocker}: {stop.detail}"


def promised_verdict(journeys: list[Journey]) -> str:
    """One line: how many canonical journeys answer as the estate promises."""
    failed = [j for j in journeys if not j.as_expected]
    if not journeys:
        return "Journeys: none promised (no tenant has GPU quota on a pool)"
    if not failed:
        return f"Journeys: all {len(journeys)} answer as promised"
    return f"Journeys: {len(failed)} of {len(journeys)} do not answer as promised"


def promised_text(journeys: list[Journey]) -> str:
    """The canonical journeys, one line each: as promised or not, what it proves, where it lands or stops."""
    lines = [promised_verdict(journeys)]
    for j in journeys:
        mark = "ok " if j.as_expected else "NO "
        lines.append(f"  {mark} {j.verdict:<7} (promised {j.promise}) {j.title}")
        lines.append(f"              {_outcome(j)}")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def promised_markdown(journeys: list[Journey]) -> str:
    rows = ["| | journey | promised | verdict | where it lands or stops |", "|---|---|---|---|---|"]
    for j in journeys:
        mark = "✅" if j.as_expected else "❌"
        rows.append(f"| {mark} | {_cell(j.title)} | {j.promise} | {j.verdict} | {_cell(_outcome(j))} |")
    return "\n".join(rows)
