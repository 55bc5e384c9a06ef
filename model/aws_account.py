"""The EC2 vCPU quotas an estate's GPU pools launch under, and the vCPUs each pool needs of them.

- EC2 counts running On-Demand and Spot instances against per-family vCPU quotas, per account and region.
  A fresh account has 0 vCPUs for P instances, so a node group fails late with VcpuLimitExceeded
  (https://docs.aws.amazon.com/ec2/latest/instancetypes/ec2-instance-quotas.html).
- A pool needs `nodes x vCPUs` of its quota, at its desired size and at its largest (vCPUs from the catalog), and
  during a node group update its largest plus the nodes EKS launches before it drains (model.node_groups).
- A pool in a capacity reservation or block draws no quota at launch: the reservation holds the capacity. An
  On-Demand Capacity Reservation drew on the On-Demand quota when it was created.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from model import kinds
from model.node_groups import update_surge

if TYPE_CHECKING:
    from model.spec.estate import EstateSpec

# Service Quotas codes (service code `ec2`) per quota family and purchase option, as
# `aws service-quotas list-service-quotas --service-code ec2` names them.
QUOTA_CODES: dict[str, dict[str, tuple[str, str]]] = {
    "P": {
        "on-demand": ("L-417A185B", "Running On-Demand P instances"),
        "spot": ("L-7212CCBC", "All P Spot Instance Requests"),
    },
    "G": {
        "on-demand": ("L-DB2E81BA", "Running On-Demand G and VT instances"),
        "spot": ("L-3819A6DF", "All G and VT Spot Instance Requests"),
    },
}
RESERVED = ("capacity-reservation", "capacity-block")


def quota_family(instance_type: str) -> str | None:
    """The quota family of an instance type: P (p4d, p5, p6-b200, ...), G (g5, g6, g6e, vt1), else None."""
    letters = re.match(r"[a-z]*", instance_type.split(".")[0])
    prefix = letters.group(0) if letters else ""
    if prefix in ("g", "vt"):
        return "G"
    if prefix == "p":
        return "P"
    return None


@dataclass(frozen=True)
class PoolQuota:
    """What one GPU pool needs of an EC2 vCPU quota; `code` is None for a pool in a reservation or block."""

    site: str
    region: str
    pool: str
    instance_type: str
    capacity: str  # the pool's capacity type
    code: str | None
    title: str
    vcpus_per_node: int
    desired_nodes: int
    max_nodes: int
    surge_nodes: int  # launched on top during a node group update (a Kubernetes or AMI bump)

    @property
    def desired_vcpus(self) -> int:
        return self.desired_nodes * self.vcpus_per_node

    @property
    def max_vcpus(self) -> int:
        return self.max_nodes * self.vcpus_per_node

    @property
    def update_vcpus(self) -> int:
        return (self.max_nodes + self.surge_nodes) * self.vcpus_per_node

    def sentence(self) -> str:
        what = f"pool {self.pool} of site {self.site} ({self.max_nodes} x {self.instance_type} at most)"
        if self.code is None:
            return f"{what} runs in its {self.capacity}, which holds the capacity: it draws no vCPU quota at launch"
        return (
            f"{what} needs EC2 quota {self.code} ({self.title}) in {self.region}: {self.desired_vcpus} vCPUs at "
            f"desired size ({_nodes(self.desired_nodes)}), {self.max_vcpus} at most ({self.max_nodes} x "
            f"{self.vcpus_per_node}), {self.update_vcpus} while an update rolls its nodes (+{_nodes(self.surge_nodes)})"
        )


def _nodes(n: int) -> str:
    return f"{n} node" if n == 1 else f"{n} nodes"


def pool_quotas(spec: EstateSpec) -> list[PoolQuota]:
    """Every GPU pool of the estate's AWS sites with the quota it launches under and the vCPUs it needs."""
    out: list[PoolQuota] = []
    for site in spec.sites:
        aws = kinds.of(site).aws_site
        if aws is None:
            continue
        for p in aws.node_pools:
            family = quota_family(p.instance_type)
            capacity = p.capacity.type
            code, title = None, ""
            if family is not None and capacity not in RESERVED:
                code, title = QUOTA_CODES[family]["spot" if capacity == "spot" else "on-demand"]
            out.append(
                PoolQuota(aws.name, aws.region, p.name, p.instance_type, capacity, code, title,
                          p.instance.vcpus, p.scaling.desired_nodes, p.reachable_nodes, update_surge(aws, p))
            )  # fmt: skip
    return out


def quota_totals(needs: list[PoolQuota]) -> dict[tuple[str, str], tuple[str, int, int, int]]:
    """(region, quota code) -> (its title, vCPUs at desired, at most, while updates roll), summed over the pools
    drawing on it: a quota is per account and region, so pools of one region share it. One `up` of a Kubernetes
    bump updates every node group at once (they wait on the same add-ons), so their surges add up."""
    totals: dict[tuple[str, str], tuple[str, int, int, int]] = {}
    for n in needs:
        if n.code is None:
            continue
        _, desired, most, rolling = totals.get((n.region, n.code), (n.title, 0, 0, 0))
        totals[(n.region, n.code)] = (
            n.title, desired + n.desired_vcpus, most + n.max_vcpus, rolling + n.update_vcpus
        )  # fmt: skip
    return dict(sorted(totals.items()))


def quota_notes(spec: EstateSpec) -> list[str]:
    """One line per pool and one per quota the estate draws on: what the offline check says to request."""
    needs = pool_quotas(spec)
    lines = [f"quota: {n.sentence()}" for n in needs]
    for (region, code), (title, desired, most, rolling) in quota_totals(needs).items():
        lines.append(
            f"quota: {code} ({title}) in {region}: the estate needs {desired} vCPUs at desired size, {most} at "
            f"most and {rolling} while node group updates roll; a fresh account may have 0 (`gpufleet check --aws` "
            "reads the account's value)"
        )
    return lines
