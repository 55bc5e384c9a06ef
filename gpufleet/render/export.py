"""Export a plan's Kubernetes objects and Helm releases as YAML files for review or scanning.

One folder per cluster: a resource lands in the folder of the site whose Kubernetes provider applies it (in a
hybrid estate the MultiKueue wiring puts objects of the same name on the manager's and the worker's cluster, the
manager is a cluster of its own, and the worker-side tenant namespaces are built outside the worker site's tree). Nothing is lost: two
objects of one cluster never share a file; a kind that two API groups define is told apart by its group. A
ConfigFile's objects are written like ours, from the offline copy of the file its URL names (operator_crds).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from gpufleet.charts.operator_crds import CONFIG_FILE, applied_objects, operator_crds
from gpufleet.charts.render import RenderedRelease, as_applied, cluster_scoped_kinds
from gpufleet.engine.plan import Plan, PlanResource

NO_SITE = "estate"  # resources with no site (none are Kubernetes objects today)
PROVIDER_SUFFIX = "-k8s"  # every cluster's Kubernetes provider is named `<cluster>-k8s`


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


def cluster_of(plan: Plan, r: PlanResource) -> str:
    """The cluster a resource is applied to: the one its Kubernetes provider (`<cluster>-k8s`: a site, or the
    MultiKueue manager, which is no site) talks to; without a provider, its own site."""
    if r.provider is not None and r.provider in {p.key for p in plan.resources}:
        provider = plan.get(r.provider)
        return (
            _slug(provider.name.removesuffix(PROVIDER_SUFFIX))
            if provider.name.endswith(PROVIDER_SUFFIX)
            else _site(plan, provider)
        )
    return _site(plan, r)


def export(plan: Plan, out: Path) -> list[Path]:
    """Write one YAML file per Kubernetes object (ours and those a ConfigFile applies) under `out/<cluster>/` and
    one per Helm release under `out/<cluster>/helm/`; return the files written (one per object and release)."""
    files: dict[Path, tuple[PlanResource, dict[str, Any]]] = {}

    def place(r: PlanResource, doc: dict[str, Any], folder: Path, stems: list[str]) -> None:
        for stem in stems:
            path = folder / f"{stem}.yaml"
            if path not in files:
                files[path] = (r, doc)
                return
        other = files[folder / f"{stems[-1]}.yaml"][0]
        raise ValueError(f"{r.key} and {other.key} would write the same object to {folder / stems[-1]}.yaml")

    def place_object(r: PlanResource, m: dict[str, Any]) -> None:
        meta = m.get("metadata") or {}
        kind, group = str(m.get("kind")), str(m.get("apiVersion", "")).rpartition("/")[0] or "core"
        rest = f"{_slug(str(meta.get('namespace') or 'cluster'))}-{_slug(str(meta.get('name') or r.name))}"
        place(r, m, out / cluster_of(plan, r), [f"{_slug(kind)}-{rest}", f"{_slug(kind)}.{_slug(group)}-{rest}"])

    for r in plan.kubernetes_objects():
        place_object(r, manifest(r))
    for r in plan.find(CONFIG_FILE):
        for m in applied_objects(str(r.inputs.get("file"))):
            place_object(r, m)
    for r in plan.helm_releases():
        rel = release(r)
        name = _slug(str(rel["name"]))
        place(r, rel, out / cluster_of(plan, r) / "helm", [name, f"{_slug(str(rel['namespace']))}-{name}"])
    written: list[Path] = []
    for path, (_, doc) in sorted(files.items()):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False))
        written.append(path)
    return written


ERROR_FILE = "ERROR.txt"


def export_rendered(plan: Plan, releases: dict[str, RenderedRelease], out: Path) -> list[Path]:
    """Write what each Helm release renders to (CRDs and templates, as Helm would apply them), one object a file
    under `out/<cluster>/rendered/<release>/`; a release that could not be rendered gets an ERROR_FILE saying why."""
    written: list[Path] = []
    cleared: set[Path] = set()
    cluster_scoped = cluster_scoped_kinds(releases.values(), [c.crd for c in operator_crds()])
    for r in plan.helm_releases():
        rel = releases.get(r.key)
        folder = out / cluster_of(plan, r) / "rendered" / _slug(str(r.inputs.get("name", r.name)))
        folder.mkdir(parents=True, exist_ok=True)
        if folder not in cleared:  # a reused -o: an earlier export's ERROR_FILE or objects are not this one's
            cleared.add(folder)
            for stale in folder.iterdir():
                if stale.is_file() or stale.is_symlink():
                    stale.unlink()
        if rel is None or not rel.rendered:
            (folder / ERROR_FILE).write_text((rel.error if rel else "not rendered") + "\n")
            written.append(folder / ERROR_FILE)
            continue
        for i, obj in enumerate(rel.all_objects()):
            manifest = as_applied(obj, rel.namespace, cluster_scoped)
            ns = (manifest.get("metadata") or {}).get("namespace") or "cluster"
            path = folder / f"{i:03d}-{_slug(obj.kind)}-{_slug(str(ns))}-{_slug(obj.name)}.yaml"
            path.write_text(f"# Source: {obj.source}\n" + yaml.safe_dump(manifest, sort_keys=False))
            written.append(path)
    return written


def _site(plan: Plan, r: PlanResource) -> str:
    """The site a resource belongs to: the name of its nearest `gpufleet:*:Site` ancestor."""
    for a in plan.ancestors(r.key):
        if a.type.endswith(":Site"):
            return _slug(a.name)
    return NO_SITE
