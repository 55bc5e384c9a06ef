"""Each pool's health loop in the preview: what watches its nodes and the one remediator that repairs them."""

from __future__ import annotations

from typing import Any

from model.health import PoolHealth, estate_health
from model.spec import EstateSpec


def _limit(repair: dict[str, Any], count: str, percent: str) -> str:
    if count in repair:
        return f"{repair[count]}"
    return f"{repair[percent]}%" if percent in repair else ""


def repair_text(h: PoolHealth) -> str:
    """The remediator with EKS node repair's limits and overrides, as they go into the node group."""
    if h.repair is None:
        return h.remediator
    r = h.repair
    unhealthy = _limit(r, "max_unhealthy_node_threshold_count", "max_unhealthy_node_threshold_percentage")
    parallel = _limit(r, "max_parallel_nodes_repaired_count", "max_parallel_nodes_repaired_percentage")
    stops = f"stops above {unhealthy} unhealthy" if unhealthy else "EKS's default unhealthy threshold"
    text = f"{h.remediator} ({stops}, {parallel} at a time"
    overrides = [
        f"{o['node_monitoring_condition']}/{o['node_unhealthy_reason']}: {o['repair_action']} after "
        f"{o['min_repair_wait_time_mins']} min"
        for o in r.get("node_repair_config_overrides", [])
    ]
    text += f"; {', '.join(overrides)})" if overrides else ")"
    return text + "".join(f"; warning: {w}" for w in h.warnings)


def health_lines(spec: EstateSpec) -> list[str]:
    return [
        f"  {h.pool} ({h.site}): detectors {', '.join(h.detectors) or 'none'}; remediator {repair_text(h)}"
        for h in estate_health(spec)
    ]


def health_markdown(spec: EstateSpec) -> str:
    rows = [
        f"| `{h.pool}` | {h.site} | {', '.join(h.detectors) or 'none'} | {repair_text(h)} |"
        for h in estate_health(spec)
    ]
    return "\n".join(["| pool | site | detectors | remediator |", "|---|---|---|---|", *rows])


def health_json(spec: EstateSpec) -> list[dict[str, Any]]:
    return [h.to_dict() for h in estate_health(spec)]
