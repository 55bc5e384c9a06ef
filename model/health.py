"""Each pool's health loop as data: its detectors, its remediator and EKS node repair's settings.

The AWS node group and `gpufleet preview` both read `eks_node_repair`, so what preview shows is what `up` sets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from model.spec import EKS_NODE_REPAIR, AwsHealth, AwsNodePool, EksNodeRepair, EstateSpec, NodePool, Site


@dataclass(frozen=True)
class PoolHealth:
    """One pool's detectors and remediator, and EKS node repair's settings where it is the remediator."""

    site: str
    pool: str
    detectors: tuple[str, ...]
    remediator: str
    repair: dict[str, Any] | None
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "site": self.site,
            "pool": self.pool,
            "detectors": list(self.detectors),
            "remediator": self.remediator,
            "repair": self.repair,
            "warnings": list(self.warnings),
        }


def _limit(value: int | str | None, count_field: str, percent_field: str) -> dict[str, int]:
    if value is None:
        return {}
    if isinstance(value, int):
        return {count_field: value}
    return {percent_field: int(value.removesuffix("%"))}


def eks_node_repair(health: AwsHealth) -> dict[str, Any]:
    """The node group's node_repair_config (pulumi-aws NodeGroupNodeRepairConfigArgs fields): enabled only with
    remediator eks-node-repair, and then with gpufleet's limits and the pool's overrides."""
    if health.remediator != EKS_NODE_REPAIR:
        return {"enabled": False}
    return {"enabled": True, **_repair_limits(health.repair)}


def _repair_limits(r: EksNodeRepair) -> dict[str, Any]:
    out: dict[str, Any] = {
        **_limit(r.max_unhealthy, "max_unhealthy_node_threshold_count", "max_unhealthy_node_threshold_percentage"),
        **_limit(r.max_parallel, "max_parallel_nodes_repaired_count", "max_parallel_nodes_repaired_percentage"),
    }
    if r.overrides:
        out["node_repair_config_overrides"] = [
            {
                "node_monitoring_condition": o.condition,
                "node_unhealthy_reason": o.reason,
                "repair_action": o.action,
                "min_repair_wait_time_mins": o.wait_minutes,
            }
            for o in r.overrides
        ]
    return out


def _threshold_warnings(health: AwsHealth, max_nodes: int) -> tuple[str, ...]:
    """NodeRepairConfig: "a percentage threshold of unhealthy nodes, above which node auto repair actions will
    stop" (https://docs.aws.amazon.com/eks/latest/APIReference/API_NodeRepairConfig.html). Below one node of
    the pool's maximum, the first unhealthy node is already above it."""
    limit = health.repair.max_unhealthy
    if not isinstance(limit, str):
        return ()
    percent = int(limit.removesuffix("%"))
    if percent * max_nodes >= 100:
        return ()
    return (
        f"max_unhealthy {limit} of at most {max_nodes} nodes is under one node: EKS node repair stops at "
        "the first unhealthy node; set a count such as 1",
    )


def pool_health(site: Site, pool: NodePool) -> PoolHealth:
    h = pool.health
    repair = eks_node_repair(h) if isinstance(h, AwsHealth) and h.remediator == EKS_NODE_REPAIR else None
    return PoolHealth(
        site=site.name,
        pool=pool.name,
        detectors=tuple(h.detectors_with(site.kubernetes.gpu_stack == "gpu-operator")),
        remediator=h.remediator,
        repair=repair,
        warnings=_threshold_warnings(h, pool.scaling.max)
        if repair is not None and isinstance(h, AwsHealth) and isinstance(pool, AwsNodePool)
        else (),
    )


def estate_health(spec: EstateSpec) -> list[PoolHealth]:
    return [pool_health(site, pool) for site, pool in spec.pools()]
