"""The upstream Helm chart sources at the versions model/versions.py pins, for tests that check
gpufleet against the charts themselves (values keys, templates, CRDs).

A chart cache is a folder of unmodified chart folders, one per chart at its release tag
(`<name>-<version>/`, e.g. `git archive` of the chart path at the tag, or `helm pull --untar`), plus
`operator-crds/` for CRDs an operator applies at run time (nv-ipam's IPPool and CIDRPool, from
Mellanox/network-operator manifests/state-nv-ipam-cni at the pinned tag). GPUFLEET_CHART_CACHE names it; CI lays one
beside the checkout. A test that needs a chart is skipped, naming the folder, where it is absent.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from model.versions import Chart

CACHE = Path(
    os.environ.get("GPUFLEET_CHART_CACHE") or Path(__file__).resolve().parent.parent.parent / "shared" / "charts"
)


def chart_dir(chart: Chart) -> Path:
    path = CACHE / f"{chart.name}-{chart.version}"
    if not path.is_dir():
        pytest.skip(f"chart source {path.name} is not in the chart cache {CACHE}")
    return path


def unbuilt(chart: Chart) -> list[str]:
    """The dependencies (Chart.yaml `dependencies`) a cached chart's charts/ folder lacks. `helm dependency build`
    puts them there, and Helm renders no chart that lacks one, enabled or not."""
    path = CACHE / f"{chart.name}-{chart.version}"
    if not (path / "Chart.yaml").is_file():
        return []  # the chart itself is absent: chart_dir says so
    deps = (yaml.safe_load((path / "Chart.yaml").read_text()) or {}).get("dependencies") or []
    have = {p.name for p in (path / "charts").glob("*")} if (path / "charts").is_dir() else set()
    return [d["name"] for d in deps if d["name"] not in have and not any(h.startswith(f"{d['name']}-") for h in have)]


def require_built(chart: Chart) -> None:
    """Skip, naming what is missing, where the chart cache holds `chart` without its dependencies."""
    missing = unbuilt(chart)
    if missing:
        pytest.skip(
            f"chart source {chart.name}-{chart.version} in the chart cache {CACHE} lacks its dependencies "
            f"{', '.join(missing)} in charts/ (`helm dependency build` puts them there)"
        )


def crd(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    assert doc["kind"] == "CustomResourceDefinition", path
    return doc


def crd_kinds(folder: Path) -> set[tuple[str, str]]:
    """(group, kind) of every CRD under a chart's crds/ folders (its own and its subcharts')."""
    kinds = set()
    for path in sorted(folder.glob("**/crds/*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                kinds.add((doc["spec"]["group"], doc["spec"]["names"]["kind"]))
    return kinds


def operator_crd_kinds() -> set[tuple[str, str]]:
    """(group, kind) of the CRDs an operator applies at run time (nv-ipam's, by the Network Operator)."""
    folder = CACHE / "operator-crds"
    if not folder.is_dir():
        pytest.skip(f"operator CRDs are not in the chart cache {CACHE}")
    return {(d["spec"]["group"], d["spec"]["names"]["kind"]) for d in map(crd, sorted(folder.glob("*.yaml")))}
