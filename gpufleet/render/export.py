"""Export a plan's Kubernetes objects and Helm releases as YAML files for review or scanning."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from gpufleet.engine.plan import Plan, PlanResource


def _slug(value: str) -> str:
    return re.sub(r"[^a-z0-9.-]+", "-", value.lower()).strip("-") or "x"


def manifest(r: PlanResource) -> dict[str, Any]:
    """The object as it would be applied: apiVersion, kind, metadata, then the rest of its inputs."""
    ordered: dict[str, Any] = {k: r.inputs[k] for k in ("apiVersion", "kind", "metadata") if k in r.inputs}
    ordered.update({k: v for k, v in r.inputs.items() if k not in ordered})
    return ordered


def release(r: PlanResource) -> dict[str, Any]:
    i = r.inputs
    return {
        "name": i.get("name", r.name),
        "namespace": i.get("namespace"),
        "chart": i.get("chart"),
        "version": i.get("version"),
        "repository": (i.get("repositoryOpts") or {}).get("repo"),
        "values": i.get("values", {}),
    }


def export(plan: Plan, out: Path) -> list[Path]:
    """Write one YAML file per Kubernetes object under `out/<site>/` and one per Helm release; return them."""
    written: list[Path] = []
    files: dict[Path, dict[str, Any]] = {}
    for r in plan.kubernetes_objects():
        m = manifest(r)
        meta = m.get("metadata") or {}
        ns = meta.get("namespace") or "cluster"
        name = meta.get("name") or r.name
        path = out / _site(plan, r) / f"{_slug(str(m.get('kind')))}-{_slug(str(ns))}-{_slug(str(name))}.yaml"
        files[path] = m
    for r in plan.helm_releases():
        rel = release(r)
        files[out / _site(plan, r) / "helm" / f"{_slug(str(rel['name']))}.yaml"] = rel
    for path, doc in sorted(files.items()):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False))
        written.append(path)
    return written


def _site(plan: Plan, r: PlanResource) -> str:
    """The site a resource belongs to: the name of its nearest `gpufleet:*:Site` ancestor."""
    for a in plan.ancestors(r.key):
        if a.type.endswith(":Site"):
            return _slug(a.name)
    return "estate"
