"""The local chart cache: one unpacked chart folder per pinned chart, `<cache>/<name>-<version>/`.

`gpufleet charts pull` fills it from the repositories in `model/versions.py`; the location is
`--chart-cache DIR`, else `$GPUFLEET_CHART_CACHE`, else `~/.cache/gpufleet/charts`.

A folder is the pinned chart when its `Chart.yaml` names the chart and carries the pinned version. One known
exception is accepted and reported: a chart taken from its source repository at the release tag whose
`Chart.yaml` still says a development placeholder (`*-devel`), because the project sets the version only
when it packages the chart for release: NVIDIA/gpu-operator at the pinned tag (versions.GPU_OPERATOR) keeps
`version: v1.0.0-devel` in deployments/gpu-operator/Chart.yaml, while the chart it publishes at
https://helm.ngc.nvidia.com/nvidia carries the tag as its version.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from model import versions
from model.versions import Chart

ENV_VAR = "GPUFLEET_CHART_CACHE"
DEV_VERSION_SUFFIX = "-devel"


class ChartCacheError(Exception):
    """A pinned chart is missing from the cache or is not the version pinned."""


@dataclass(frozen=True)
class CachedChart:
    chart: Chart
    path: Path
    note: str = ""  # e.g. why a source folder with a placeholder version is accepted


def default_root() -> Path:
    env = os.environ.get(ENV_VAR)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "gpufleet" / "charts"


def pinned_charts() -> list[Chart]:
    """Every chart versions.py pins (the one source of chart names, versions and repositories)."""
    return [v for v in vars(versions).values() if isinstance(v, Chart)]


def chart_for(reference: str, version: str) -> Chart | None:
    """The pinned chart a Release names (`name` in a repository, or a full `oci://.../name` reference)."""
    for c in pinned_charts():
        if c.version == version and reference in (c.name, f"{c.repository}/{c.name}"):
            return c
    return None


def folder_name(chart: Chart) -> str:
    return f"{chart.name}-{chart.version}"


class ChartCache:
    def __init__(self, root: Path | str | None = None) -> None:
        self.root = Path(root).expanduser() if root is not None else default_root()

    def path(self, chart: Chart) -> Path:
        return self.root / folder_name(chart)

    def locate(self, chart: Chart) -> CachedChart:
        """The cached folder of `chart`, checked against its Chart.yaml; ChartCacheError says what is wrong."""
        folder = self.path(chart)
        meta_file = folder / "Chart.yaml"
        if not meta_file.is_file():
            raise ChartCacheError(
                f"chart {chart.name} {chart.version} is not in the chart cache {self.root} "
                f"(expected {folder}/Chart.yaml); run `gpufleet charts pull` or set {ENV_VAR}"
            )
        try:
            meta = yaml.safe_load(meta_file.read_text())
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
            raise ChartCacheError(f"{meta_file}: cannot be read as a Chart.yaml ({str(e).splitlines()[0]})") from None
        if not isinstance(meta, dict):
            raise ChartCacheError(f"{meta_file}: not a Chart.yaml (a mapping with name and version)")
        name, version = str(meta.get("name", "")), str(meta.get("version", ""))
        if name != chart.name:
            raise ChartCacheError(f"{meta_file}: chart name is {name!r}, expected {chart.name!r}")
        if version == chart.version:
            return CachedChart(chart, folder)
        if version.endswith(DEV_VERSION_SUFFIX):
            return CachedChart(
                chart,
                folder,
                note=f"source chart at the release tag (Chart.yaml says {version}; the chart published for that tag "
                f"is {chart.version})",
            )
        raise ChartCacheError(f"{meta_file}: chart version is {version!r}, pinned {chart.version!r}")
