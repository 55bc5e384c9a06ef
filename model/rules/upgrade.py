"""The Kubernetes upgrade rule between two versions of one stack: each EKS cluster moves one minor at a time.

A schema rule sees one stack file, not the state it replaces, so `gpufleet diff` runs this one: it sees the base
and the head. It reads the raw estates, before either is validated, so a skip is named even to a minor the head's
schema refuses.
"""

from __future__ import annotations

from typing import Any

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
    (`v1.21.1-eksbuild.7` -> `v1.23.1-eksbuild.1`)."""
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
