"""The one-line headline of `gpufleet size`: what the recommendation uses, what it buys and why.

Owned servers first, then the stack's cloud pools (scaled up), new pools and the stack's burst pools. A class no
placement takes is named, and "owned servers take it all" is said only when owned servers take every class.
"""

from __future__ import annotations

from gpufleet.render.common import usd
from gpufleet.render.sizing_record import num
from gpufleet.sizing.pools import Demand
from gpufleet.sizing.report import SizingReport


def work_cost(d: Demand) -> str:
    return "-" if d.work_usd is None else usd(d.work_usd)


def scaling_words(d: Demand) -> str:
    """How a cloud pool of the stack takes its demand: "raise desired from 2 to 3 and max from 4 to 5", or "no
    change: its max of 4 nodes holds it"."""
    s, to = d.placement.scale, d.raised
    assert s is not None and to is not None
    steps = (("min", s.min, to.min), ("desired", s.desired, to.desired), ("max", s.max, to.max))
    changes = [f"{k} from {a} to {b}" for k, a, b in steps if a != b]
    if not changes:
        return f"no change: its max of {s.max} node{'s' if s.max != 1 else ''} holds it"
    return "raise " + (f"{', '.join(changes[:-1])} and {changes[-1]}" if len(changes) > 1 else changes[0])


def _buys(r: SizingReport) -> str:
    """What is bought: new pools, else none (the stack's pools take it), else nothing, and what is left out."""
    period = r.workloads.planning.period
    bought = [rec for rec in r.pools if rec.demand.placement.instance_type and not rec.demand.placement.pool]
    burst = any(rec.demand.placement.instance_type and rec.demand.placement.pool for rec in r.pools)
    owned = any(rec.demand.placement.instance_type is None for rec in r.pools)
    unplaced = f"Not placed: {', '.join(r.unplaced)}." if r.unplaced else ""
    if bought:
        buys = "; ".join(
            f"{rec.name} ({rec.demand.scale_min_nodes}-{rec.demand.scale_max_nodes} × "
            f"{rec.demand.placement.instance_type}, {work_cost(rec.demand)} of work a {period}) for "
            f"{', '.join(rec.demand.classes)}"
            for rec in bought
        )
        return f"Buys: {buys}, where no owned server has room or fits. {unplaced}".rstrip()
    if burst:
        return f"Buys no new pool. {unplaced}".rstrip()
    if r.unplaced:
        return f"Buys nothing; not placed: {', '.join(r.unplaced)}."
    return "Buys nothing: owned servers take it all." if owned else "Buys nothing."


def headline(r: SizingReport) -> str:
    """What the recommendation uses, what it buys and why, in one line."""
    owned = [rec for rec in r.pools if rec.demand.placement.instance_type is None]
    cloud = [rec for rec in r.pools if rec.demand.placement.scale is not None]
    burst = [rec for rec in r.pools if rec.demand.placement.instance_type and rec.demand.placement.pool
             and rec.demand.placement.scale is None]  # fmt: skip
    used = "; ".join(f"{rec.name} for {', '.join(rec.demand.classes)}" for rec in owned)
    parts = [f"Uses owned servers (already paid for): {used}." if owned else "Uses no owned servers."]
    if cloud:
        period = r.workloads.planning.period
        parts.append(
            "Uses existing pools of the stack: "
            + "; ".join(
                f"{rec.name} ({rec.demand.placement.instance_type}; {scaling_words(rec.demand)}; "
                f"{work_cost(rec.demand)} of work a {period}) for {', '.join(rec.demand.classes)}"
                for rec in cloud
            )
            + "."
        )
    parts.append(_buys(r))
    late = [f"{ch.placement.name} for {cs.cls.name} misses its deadline after +{num(ch.penalty_hours)} h ring penalty"
            for cs in r.classes for ch in cs.choices
            if ch.owned and ch.status == "misses deadline" and ch.penalty_hours and cs.chosen is not None
            and not cs.chosen.owned]  # fmt: skip
    if late:
        parts.append(f"Owned servers passed over: {'; '.join(late)}.")
    if burst:
        parts.append(
            "Bursts to the stack's pools: "
            + "; ".join(
                f"{rec.name} ({work_cost(rec.demand)} of work) for {', '.join(rec.demand.classes)}" for rec in burst
            )
            + "."
        )
    small = [f"{cs.cls.name} ({'; '.join(cs.too_small)})" for cs in r.classes if cs.too_small]
    if small:
        parts.append(f"Stack pools too small for one run at their max: {'; '.join(small)}.")
    over = [f"{cs.cls.name} ({cs.overflow})" for cs in r.classes if cs.overflow]
    if over:
        parts.append(f"Overflow beyond the stack's pools: {'; '.join(over)}.")
    return " ".join(parts)
