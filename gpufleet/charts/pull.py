"""`gpufleet charts pull`: fill the chart cache from the chart repositories pinned in versions.py.

Each chart is downloaded by Helm's own client (`helm-python-sdk`'s `pull`: an HTTP chart repository by name and
version, or an `oci://` reference), then checked before it is unpacked into `<cache>/<name>-<version>/`:
- HTTP repositories: the archive's sha256 must equal the `digest` the repository's index.yaml lists for that
  version (Helm's repository index format, https://helm.sh/docs/topics/chart_repository/#the-index-file);
- OCI registries: the registry serves content by digest and Helm verifies the layer it pulls; the manifest
  digest Helm resolved for the tag is recorded;
- both: the unpacked Chart.yaml must name the chart and the pinned version.
A chart that fails a check is not left in the cache.
"""

from __future__ import annotations

import hashlib
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpufleet.charts.cache import ChartCache, ChartCacheError, folder_name
from gpufleet.charts.render import RenderError, _helm
from model.versions import Chart


class PullError(Exception):
    """A chart could not be downloaded, or what arrived is not the pinned chart."""


@dataclass(frozen=True)
class Pulled:
    chart: Chart
    path: Path
    sha256: str  # of the downloaded archive
    verified: str  # what the archive was checked against


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _index_digest(helm: Any, chart: Chart) -> str:
    index = helm.repo_index(chart.repository)
    for entry in (index.get("entries") or {}).get(chart.name, []):
        if str(entry.get("version")) == chart.version:
            return str(entry.get("digest") or "")
    raise PullError(f"{chart.repository}/index.yaml lists no {chart.name} {chart.version}")


def pull(chart: Chart, cache: ChartCache) -> Pulled:
    """Download `chart` at its pinned version into `cache`, verified; raise PullError on any mismatch."""
    try:
        helm = _helm()
    except RenderError as e:
        raise PullError(str(e)) from None
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        try:
            if chart.repository.startswith("oci://"):
                ref = f"{chart.repository}/{chart.name}"
                resolved = helm.RegistryClient().resolve(f"{ref}:{chart.version}")
                expected, verified = "", f"OCI manifest {resolved.get('digest', '?')} (layer verified by Helm)"
                helm.pull(ref, version=chart.version, destination=str(work))
            else:
                expected = _index_digest(helm, chart)
                verified = f"index.yaml digest sha256:{expected}"
                helm.pull(chart.name, repo_url=chart.repository, version=chart.version, destination=str(work))
        except helm.HelmError as e:
            raise PullError(f"{chart.name} {chart.version} from {chart.repository}: {e}") from None
        archives = sorted(work.glob("*.tgz"))
        if len(archives) != 1:
            raise PullError(f"{chart.name} {chart.version}: expected one chart archive, got {len(archives)}")
        return install_archive(chart, archives[0], cache, expected_sha256=expected, verified=verified)


def install_archive(
    chart: Chart, archive: Path, cache: ChartCache, *, expected_sha256: str = "", verified: str = ""
) -> Pulled:
    """Check a downloaded archive and unpack it as `<cache>/<name>-<version>/` (replacing an older copy)."""
    digest = _sha256(archive)
    if expected_sha256 and digest != expected_sha256:
        raise PullError(
            f"{chart.name} {chart.version}: archive sha256 {digest} does not match the repository's {expected_sha256}"
        )
    cache.root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache.root) as tmp:
        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")
        unpacked = Path(tmp) / chart.name
        staged = Path(tmp) / folder_name(chart)
        unpacked.rename(staged)
        try:
            note = ChartCache(tmp).locate(chart).note
        except ChartCacheError as e:
            raise PullError(f"downloaded archive is not the pinned chart: {e}") from None
        if note:  # a published package carries its real version, never a source placeholder
            raise PullError(f"downloaded archive is not the pinned chart: {note}")
        target = cache.path(chart)
        if target.exists():
            shutil.rmtree(target)
        staged.rename(target)
    return Pulled(chart, target, digest, verified or "Chart.yaml name and version")
