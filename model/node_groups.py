"""EKS managed node groups: the stack-file fields whose change replaces a group, and the rule that refuses one on a
burst pool while its window holds capacity.

- A burst node group is named after its pool, so a replacement deletes it before it creates the new one
  (components/aws/node_pool.py): every node of a live window stops at once, running work with it.
- The window records the fields it was opened with, so the rule needs no earlier revision: validate, preview,
  diff and the program judge it alike.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

from model.burst import cloud_site, drain_ends, pool_zone, window_phase
from model.spec import AwsNodePool, AwsSite, BurstWindow, EfaFabric, EstateSpec, Problem

# A node group update replaces nodes rolling: EKS launches new nodes, cordons and drains old ones honouring
# PodDisruptionBudgets (evicting by force after 15 minutes), at most this many unavailable at a time
# (https://docs.aws.amazon.com/eks/latest/userguide/managed-node-update-behavior.html).
MAX_UNAVAILABLE = 1


def update_surge(site: AwsSite, pool: AwsNodePool) -> int:
    """The nodes an update of the pool's group launches beyond its size: EKS raises the group's maximum and desired
    size by the larger of up to twice its Availability Zones and maxUnavailable (managed-node-update-behavior,
    "Scale up phase")."""
    zones = 1 if pool_zone(site, pool) else max(1, len(site.availability_zones))
    return max(2 * zones, MAX_UNAVAILABLE)


# `capacity.type` as the node group's `capacityType` (EKS API reference, CreateNodegroup `capacityType`).
CAPACITY_TYPES = {
    "on-demand": "ON_DEMAND",
    "spot": "SPOT",
    "capacity-reservation": "ON_DEMAND",  # an ODCR is on-demand capacity targeted by the launch template
    "capacity-block": "CAPACITY_BLOCK",  # EKS user guide, capacity-blocks-mng
}

# The node group inputs a pool's fields feed that force a new group. pulumi-aws bridges the Terraform resource, whose
# schema marks them ForceNew: hashicorp/terraform-provider-aws internal/service/eks/node_group.go (commit 012e0a32):
# `subnet_ids`, `capacity_type` (also `ami_type`, `cluster_name`, `node_role_arn`, `node_group_name`,
# `launch_template.id`, which no pool field changes). `instance_types` is ForceNew too, but the instance type is in
# the launch template, whose new version updates the group in place (`launch_template.version` is not ForceNew).
REPLACING_INPUTS = {"availability_zone": "subnetIds", "capacity.type": "capacityType"}


def replacement_problems(spec: EstateSpec, window: BurstWindow, now: dt.datetime) -> Iterator[Problem]:
    """A change to the window's pool that replaces its node group while the window is open or draining at `now`
    (paths relative to the estate)."""
    if spec.burst is None or window_phase(spec, window, now) == "idle":
        return
    site = cloud_site(spec)
    i = next(i for i, s in enumerate(spec.sites) if s.name == site.name)
    found = next(((j, p) for j, p in enumerate(site.node_pools) if p.name == window.pool), None)
    if found is None:
        return  # the window's own check names the missing pool
    j, pool = found
    zone, capacity = pool_zone(site, pool), window.capacity_type
    changed = {
        "availability_zone": (window.availability_zone, zone) if zone not in (None, window.availability_zone) else None,
        "capacity.type": (capacity, pool.capacity.type)
        if capacity is not None and CAPACITY_TYPES[capacity] != CAPACITY_TYPES[pool.capacity.type]
        else None,
    }
    for field, change in changed.items():
        if change is None:
            continue
        yield Problem(
            f"sites[{i}].{_where(site, pool, j, field)}",
            f"pool {pool.name} has a burst window {window_phase(spec, window, now)} until "
            f"{drain_ends(spec, window):%Y-%m-%d %H:%M} UTC, and changing {field} ({change[0]} to {change[1]}) "
            f"replaces its node group (input {REPLACING_INPUTS[field]} forces a new group, deleted first as its name "
            "is fixed), stopping the window's nodes and their work. Keep the old value until the window is over: "
            "close it (`gpufleet burst close`), wait until its drain ends and `gpufleet burst reconcile` has booked "
            "it, then make the change and run `up`",
        )


def _where(site: AwsSite, pool: AwsNodePool, j: int, field: str) -> str:
    """Where the stack file sets the field: an EFA pool's zone is its fabric's."""
    k = next((k for k, f in enumerate(site.fabrics) if f.name == pool.fabric and isinstance(f, EfaFabric)), None)
    if field == "availability_zone" and pool.availability_zone is None and k is not None:
        return f"fabrics[{k}].availability_zone"
    return f"node_pools[{j}].{field}"
