"""Looking things up in a synthesized hybrid plan: which cluster an object lands on, Kueue objects by kind."""

from __future__ import annotations

from typing import Any

import yaml

from gpufleet.engine.plan import Plan, PlanResource

KUEUE = "kubernetes:kueue.x-k8s.io/v1beta2"
RELEASE = "kubernetes:helm.sh/v3:Release"
PROVIDERS = {"manager": "kueue-manager-k8s", "onprem": "onprem-k8s", "cloud": "cloud-k8s"}


def cluster(r: PlanResource) -> str:
    """The cluster an object is applied to: manager, onprem or cloud (from its provider)."""
    provider = (r.provider or "").rsplit("::", 1)[-1]
    return next((c for c, p in PROVIDERS.items() if p == provider), "?")


def kueue_objects(plan: Plan, kind: str, on: str | None = None) -> list[PlanResource]:
    return [r for r in plan.find(f"{KUEUE}:{kind}") if on is None or cluster(r) == on]


def named(plan: Plan, kind: str, name: str, on: str) -> PlanResource:
    (r,) = [x for x in kueue_objects(plan, kind, on) if x.inputs["metadata"]["name"] == name]
    return r


def releases(plan: Plan, release_name: str) -> dict[str, PlanResource]:
    """cluster -> the Helm release named `release_name` there."""
    return {cluster(r): r for r in plan.find(RELEASE) if r.inputs.get("name") == release_name}


def kueue_config(release: PlanResource) -> dict[str, Any]:
    """The Configuration a Kueue release mounts."""
    text = release.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"]
    config: dict[str, Any] = yaml.safe_load(text)
    return config


def quota(groups: list[dict[str, Any]], resource: str, flavor: int = 0) -> Any:
    (group,) = groups
    return next(r["nominalQuota"] for r in group["flavors"][flavor]["resources"] if r["name"] == resource)


def depends_on(plan: Plan, r: PlanResource, other: PlanResource) -> bool:
    """`r` waits for `other`: directly, or through a component `other` belongs to, or through its dependencies."""
    seen: set[str] = set()
    todo = list(r.dependencies)
    while todo:
        key = todo.pop()
        if key in seen:
            continue
        seen.add(key)
        if key == other.key or other.key in {d.key for d in plan.descendants(key)}:
            return True
        todo += plan.get(key).dependencies
    return False
