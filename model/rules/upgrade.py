"""The upgrade rules between two versions of one stack: each EKS cluster moves one minor at a time, and an
UltraServer node group is at desired 0 when a change replaces its nodes.

A schema rule sees one stack file, not the state it replaces, so `gpufleet diff` runs this one: it sees the base
and the head. It reads the raw estates, before either is validated, so a skip is named even to a minor the head's
schema refuses.
"""

from __future__ import annotations

from typing import Any

from model import catalog

# EKS updates a control plane one minor at a time and never downgrades one (EKS API reference,
# UpdateClusterVersion; https://docs.aws.amazon.com/eks/latest/userguide/update-cluster.html).
RULE = "one-minor-at-a-time"


def _minor(value: object) -> tuple[int, int] | None:
    parts = str(value).split(".")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1])


def cluster_versions(estate: Any) -> dict[str, tuple[int, str]]:
    """AWS site name -> (index in `sites`, `cluster.version`) of every cluster the estate creates (an adopted cluster
    is someone else's to upgrade)."""
    sites = estate.get("sites") if isinstance(estate, dict) else None
    out: dict[str, tuple[int, str]] = {}
    for i, site in enumerate(sites if isinstance(sites, list) else []):
        if not isinstance(site, dict) or site.get("kind") != "aws":
            continue
        cluster = site.get("cluster")
        cluster = cluster if isinstance(cluster, dict) else {}
        if cluster.get("adopt_name"):
            continue
        out[str(site.get("name"))] = (i, str(cluster.get("version", "1.34")))
    return out


def minor_step_problems(base: Any, head: Any, source: str) -> list[str]:
    """One message per AWS site whose cluster would skip a minor or go back one, from `base` to `head`."""
    before = cluster_versions(base)
    problems = []
    for name, (i, version) in cluster_versions(head).items():
        if name not in before:
            continue
        old, new = _minor(before[name][1]), _minor(version)
        if old is None or new is None or old == new:
            continue
        where = f"{source}: config.gpufleet:estate.sites[{i}].cluster.version"
        if new < old:
            problems.append(
                f"{where}: {before[name][1]} -> {version} goes back a minor ({RULE}): EKS never downgrades a "
                "control plane (UpdateClusterVersion); keep "
                f"{before[name][1]}"
            )
        elif new[0] != old[0] or new[1] - old[1] > 1:
            step = f"{old[0]}.{old[1] + 1}"
            problems.append(
                f"{where}: {before[name][1]} -> {version} skips a Kubernetes minor ({RULE}): EKS upgrades a control "
                f"plane one minor at a time (UpdateClusterVersion); bump to {step}, `up`, then on from there"
            )
    return problems


# "We recommend that you update one minor version at a time" for the Amazon VPC CNI add-on: from 1.8 to 1.10 through
# the latest patch of 1.9 (EKS user guide, managing-vpc-cni.html and vpc-add-on-update.html).
ONE_MINOR_ADDONS = ("vpc-cni",)


def addon_step_problems(base: dict[tuple[str, str], str], head: dict[tuple[str, str], str]) -> list[str]:
    """One message per (cluster, add-on) of ONE_MINOR_ADDONS whose version skips a minor from `base` to `head`
    (v1.21 to v1.23, say)."""
    problems = []
    for (cluster, addon), new in sorted(head.items()):
        old = base.get((cluster, addon))
        if addon not in ONE_MINOR_ADDONS or old is None:
            continue
        a, b = (
            _minor(".".join(old.removeprefix("v").split(".")[:2])),
            _minor(".".join(new.removeprefix("v").split(".")[:2])),
        )
        if a is None or b is None or a[0] != b[0] or b[1] - a[1] <= 1:
            continue
        problems.append(
            f"cluster {cluster}: add-on {addon} {old} -> {new} skips a minor ({RULE}): EKS recommends updating it one "
            f"minor version at a time (EKS user guide, vpc-add-on-update.html); update it to the latest "
            f"v{a[0]}.{a[1] + 1} build for the cluster's Kubernetes minor first (`aws eks update-addon`), then `up`. "
            f"This check compares the two revisions' pins, not the live add-on, so it stays: once the live add-on "
            f"runs v{a[0]}.{a[1] + 1} (`aws eks describe-addon`), the `up` moves it one minor; review the change "
            "with `gpufleet preview` instead of this diff"
        )
    return problems


# EKS user guide ml-eks-nvidia-ultraserver: "When upgrading EKS managed node groups with P6e-GB200 UltraServers, you
# must set the desired size of the node group to 0 before upgrading."
ULTRASERVER_RULE = "ultraserver-upgrade-at-zero"


def _rack_scale(instance_type: object) -> bool:
    try:
        return catalog.instance_type(str(instance_type)).rack_scale
    except catalog.CatalogError:  # an unknown type: the head's schema names it
        return False


def _pools(site: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    pools = site.get("node_pools")
    return [(j, p) for j, p in enumerate(pools if isinstance(pools, list) else []) if isinstance(p, dict)]


def ultraserver_upgrade_problems(base: Any, head: Any, source: str) -> list[str]:
    """One message per UltraServer pool whose nodes a change from `base` to `head` replaces (a new cluster minor or
    `ami_release`) while the stack gives it a desired size above 0 (`scaling.desired`, else `min`). gpufleet cannot
    see the group's live size, which the autoscaler sets: the rule holds the stack to what EKS asks."""
    sites = [s for s in (head.get("sites") if isinstance(head, dict) else None) or [] if isinstance(s, dict)]
    old_sites = {
        str(s.get("name")): s
        for s in (base.get("sites") if isinstance(base, dict) else None) or []
        if isinstance(s, dict)
    }
    problems = []
    for i, site in enumerate(sites):
        old = old_sites.get(str(site.get("name")))
        if old is None or site.get("kind") != "aws":
            continue
        minor_moves = (old.get("cluster") or {}).get("version") != (site.get("cluster") or {}).get("version")
        old_pools = {str(p.get("name")): p for _, p in _pools(old)}
        for j, pool in _pools(site):
            before = old_pools.get(str(pool.get("name")))
            if before is None or not _rack_scale(pool.get("instance_type")):
                continue
            if not minor_moves and before.get("ami_release") == pool.get("ami_release"):
                continue
            scaling = pool.get("scaling")
            scaling = scaling if isinstance(scaling, dict) else {}
            desired = scaling.get("desired", scaling.get("min", 0))
            if isinstance(desired, int) and desired > 0:
                problems.append(
                    f"{source}: config.gpufleet:estate.sites[{i}].node_pools[{j}].scaling.desired: pool "
                    f"{pool.get('name')} is an UltraServer node group and this change replaces its nodes, but it "
                    f"is at desired {desired} ({ULTRASERVER_RULE}): EKS requires desired 0 before upgrading one "
                    "(https://docs.aws.amazon.com/eks/latest/userguide/ml-eks-nvidia-ultraserver.html). Drain its "
                    "jobs, scale the group to 0 (aws eks update-nodegroup-config --scaling-config "
                    "minSize=0,desiredSize=0), set scaling.min and scaling.desired to 0, then bump"
                )
    return problems
