"""The nodes a first `up` can count on: those the plan starts (EKS node groups, bare-metal GPU servers through
their NodePatch) and those the stack states an existing cluster already has (`system_nodes`).

gpufleet creates no system nodes on an existing cluster (a bare-metal site, the MultiKueue manager) and taints
every GPU node it joins, so the controllers it installs run only where the stack says nodes exist.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpufleet.engine.plan import PlanResource
from gpufleet.review.reality.scheduling import Node
from model import kinds
from model.conventions import NODE_GROUP, Taint
from model.spec import EstateSpec, SystemNodes

NODE_PATCH = "kubernetes:core/v1:NodePatch"


@dataclass(frozen=True)
class StatedNodes:
    """The nodes the stack states for an existing cluster, where gpufleet creates no system nodes."""

    where: str  # e.g. "site dc1", "MultiKueue manager kueue-manager"
    field: str  # the YAML path that states them, e.g. "sites[0].system_nodes"
    groups: tuple[SystemNodes, ...]

    def nodes(self) -> list[Node]:
        return [
            Node(
                "existing cluster",
                f"{self.where} {g.name} (stated)",
                {"kubernetes.io/os": "linux", **g.labels},
                tuple(Taint(t.key, t.value, t.effect) for t in g.taints),
            )
            for g in self.groups
        ]

    def hint(self) -> str:
        """What a node problem on this cluster adds: where its nodes are stated, or that they are not."""
        if not self.field:
            return ""
        if self.groups:
            return f"; the nodes of {self.where} besides its GPU servers are those {self.field} states"
        return (
            f"; {self.where} is an existing cluster whose nodes besides its GPU servers the stack does not state: "
            f"set {self.field} (its CPU or control-plane nodes, with their labels and taints)"
        )


def stated_nodes(spec: EstateSpec, site_name: str, cluster_name: str) -> StatedNodes | None:
    """The nodes of an existing cluster (a bare-metal site, or the MultiKueue manager: no site) as the stack states
    them; None for a cluster the stack creates, whose node groups are in the plan."""
    site = spec.site(site_name) if site_name else None
    if site is not None:
        groups = kinds.of(site).system_nodes
        if groups is None:
            return None
        return StatedNodes(f"site {site.name}", f"sites[{spec.sites.index(site)}].system_nodes", groups)
    manager = spec.burst.manager if spec.burst else None
    if manager is None:
        return StatedNodes(cluster_name, "", ())
    return StatedNodes(f"MultiKueue manager {manager.name}", "burst.manager.system_nodes", tuple(manager.system_nodes))


def plan_node(r: PlanResource) -> Node | None:
    """The node a plan resource starts or shapes: a node group with nodes, a GPU server's NodePatch; else None.

    An autoscaled group (AwsNodePool.autoscaled) at desired size 0 counts for nothing: its first node starts only
    once the autoscaler runs and sees a pending pod, which nothing orders before a release's wait."""
    if r.type == NODE_GROUP and int((r.inputs.get("scalingConfig") or {}).get("desiredSize") or 0) > 0:
        return node_group_node(r)
    if r.type == NODE_PATCH:
        meta = r.inputs.get("metadata") or {}
        taints = tuple(Taint.of(t) for t in (r.inputs.get("spec") or {}).get("taints") or [])
        labels = {"kubernetes.io/os": "linux", **(meta.get("labels") or {})}
        return Node(r.key, str(meta.get("name")), labels, taints)
    return None


def _arch(instance_types: list[str]) -> str:
    return "arm64" if any(re.match(r"^[a-z]+\d+g", t) for t in instance_types) else "amd64"


def node_group_node(r: PlanResource) -> Node:
    """The node an EKS node group's plan starts: its labels (with those EKS adds) and taints."""
    i = r.inputs
    types = [str(t) for t in i.get("instanceTypes") or []]
    labels = {
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": _arch(types),
        "eks.amazonaws.com/nodegroup": str(i.get("nodeGroupName") or r.name),
        **(i.get("labels") or {}),
    }
    if len(types) == 1:
        labels["node.kubernetes.io/instance-type"] = types[0]
    taints = tuple(Taint.of(t) for t in i.get("taints") or [])
    return Node(r.key, f"node group {r.name}", labels, taints)
