"""The chart cache and real Helm rendering, against the upstream charts at the pinned tags."""

from __future__ import annotations

import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.charts.cache import ENV_VAR, ChartCache, ChartCacheError, chart_for, default_root, pinned_charts
from gpufleet.charts.pull import PullError, install_archive, pull
from gpufleet.charts.render import render_chart
from model import versions
from tests.charts import chart_dir, require_built


@pytest.mark.parametrize("chart", pinned_charts(), ids=lambda c: c.name)
def test_every_pinned_chart_is_cached_and_renders_with_its_defaults(
    chart: versions.Chart, chart_cache: ChartCache
) -> None:
    chart_dir(chart)  # skipped, naming the folder, where the cache lacks it (cluster-autoscaler 9.54.0 may be absent)
    require_built(chart)
    # Kueue as the other tests install it, so the (slow) render is shared through the process memo.
    namespace = "kueue-system" if chart == versions.KUEUE else chart.name
    # The DRA driver's defaults refuse to render: GPU allocation is on, and its templates/validation.yaml fails
    # unless the device plugin is known to be off (gpuResourcesEnabledOverride). gpufleet turns GPUs off.
    values = {"resources": {"gpus": {"enabled": False}}} if chart == versions.NVIDIA_DRA_DRIVER else {}
    rendered = render_chart(chart_cache.locate(chart), values, name=chart.name, namespace=namespace)
    assert rendered.objects, f"{chart.name} {chart.version} rendered nothing"
    assert all(o.kind and o.api_version for o in rendered.all_objects())


def test_gpu_operator_source_folder_is_taken_as_the_pinned_release_with_a_note(
    chart_cache: ChartCache, tmp_path: Path
) -> None:
    # deployments/gpu-operator/Chart.yaml at tag v26.7.0 says v1.0.0-devel; the published chart is v26.7.0.
    # A cache filled by `charts pull` holds the published chart; the source folder is made here from it.
    cached = chart_cache.locate(versions.GPU_OPERATOR)
    source = tmp_path / cached.path.name
    shutil.copytree(cached.path, source)
    meta = yaml.safe_load((source / "Chart.yaml").read_text())
    (source / "Chart.yaml").write_text(yaml.safe_dump({**meta, "version": "v1.0.0-devel"}))
    from_source = ChartCache(tmp_path).locate(versions.GPU_OPERATOR)
    assert "v1.0.0-devel" in from_source.note and versions.GPU_OPERATOR.version in from_source.note
    if meta["version"] == versions.GPU_OPERATOR.version:  # the published chart: taken as it is
        assert cached.note == ""


def test_cache_refuses_a_folder_holding_another_version(tmp_path: Path, chart_cache: ChartCache) -> None:
    shutil.copytree(chart_cache.locate(versions.KUEUE).path, tmp_path / "kueue-0.19.2")
    meta = tmp_path / "kueue-0.19.2" / "Chart.yaml"
    meta.write_text(meta.read_text().replace("version: 0.19.2", "version: 0.18.0"))
    with pytest.raises(ChartCacheError, match=r"chart version is '0.18.0', pinned '0.19.2'"):
        ChartCache(tmp_path).locate(versions.KUEUE)
    with pytest.raises(ChartCacheError, match=r"not in the chart cache .*gpufleet charts pull"):
        ChartCache(tmp_path).locate(versions.GPU_OPERATOR)


def test_cache_location_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert default_root() == tmp_path
    monkeypatch.delenv(ENV_VAR)
    assert default_root() == Path.home() / ".cache" / "gpufleet" / "charts"


def test_a_release_names_its_pinned_chart_by_name_or_oci_reference() -> None:
    assert chart_for("gpu-operator", "v26.7.0") == versions.GPU_OPERATOR
    assert chart_for("oci://registry.k8s.io/kueue/charts/kueue", "0.19.2") == versions.KUEUE
    assert chart_for("kueue", "0.18.0") is None


def test_kueue_renders_a_servicemonitor_only_with_prometheus_enabled(chart_cache: ChartCache) -> None:
    # kubernetes-sigs/kueue at the pinned tag, charts/kueue/templates/prometheus/monitor.yaml:
    # `{{- if .Values.enablePrometheus }}`
    cached = chart_cache.locate(versions.KUEUE)

    def monitors(values: dict[str, object]) -> list[tuple[str, str]]:
        rendered = render_chart(cached, values, name="kueue", namespace="kueue-system")
        return [(o.api_version, o.source) for o in rendered.objects if o.kind == "ServiceMonitor"]

    assert monitors({"enablePrometheus": True}) == [
        ("monitoring.coreos.com/v1", "kueue/templates/prometheus/monitor.yaml")
    ]
    assert monitors({"enablePrometheus": False}) == []


def test_crds_of_a_disabled_subchart_are_not_installed(chart_cache: ChartCache) -> None:
    # gpu-operator v26.7.0 Chart.yaml: node-feature-discovery 0.19.0, `condition: nfd.enabled`; its crds/ holds
    # the NodeFeatureRule CRD (charts/node-feature-discovery/crds/nfd-api-crds.yaml).
    cached = chart_cache.locate(versions.GPU_OPERATOR)

    def crd_kinds(values: dict[str, object]) -> set[str]:
        rendered = render_chart(cached, values, name="gpu-operator", namespace="gpu-operator")
        return {c.manifest["spec"]["names"]["kind"] for c in rendered.crds}

    assert "NodeFeatureRule" in crd_kinds({"nfd": {"enabled": True}})
    assert "NodeFeatureRule" not in crd_kinds({"nfd": {"enabled": False}})
    assert "ClusterPolicy" in crd_kinds({"nfd": {"enabled": False}})


def test_the_plan_values_reach_the_rendered_objects(checked_examples: dict) -> None:
    # gpu-operator at the pinned tag, templates/nvidiadriver.yaml: with driver.nvidiaDriverCRD.deployDefaultCR the
    # chart renders the default NVIDIADriver carrying `driver.version`.
    onprem = checked_examples["onprem"]
    (release,) = [r for r in onprem.plan.helm_releases() if r.inputs["chart"] == "gpu-operator"]
    values = release.inputs["values"]["driver"]
    assert values["nvidiaDriverCRD"]["deployDefaultCR"] is True
    rendered = onprem.releases[release.key]
    (driver,) = [o for o in rendered.objects if o.kind == "NVIDIADriver"]
    assert driver.manifest["spec"]["version"] == values["version"]
    assert driver.source == "gpu-operator/templates/nvidiadriver.yaml"
    assert rendered.namespace == release.inputs["namespace"]


# -- pull -------------------------------------------------------------------------------------------------------


@pytest.fixture
def chart_repo(tmp_path: Path, chart_cache: ChartCache) -> Iterator[tuple[str, Path]]:
    """A Helm HTTP repository on the loopback address serving the pinned Kueue chart, packaged by Helm."""
    import helm_python as helm

    repo = tmp_path / "repo"
    repo.mkdir()
    helm.package(str(chart_cache.locate(versions.KUEUE).path), destination=str(repo))
    helm.repo_index_generate(str(repo))  # relative URLs: resolved against the repository

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a: object, **k: object) -> None:
            super().__init__(*a, directory=str(repo), **k)  # type: ignore[arg-type]

        def log_message(self, *a: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", repo
    finally:
        server.shutdown()
        server.server_close()


def test_pull_downloads_checks_the_index_digest_and_unpacks_into_the_cache(
    chart_repo: tuple[str, Path], tmp_path: Path
) -> None:
    url, _ = chart_repo
    chart = versions.Chart("kueue", "0.19.2", url)
    cache = ChartCache(tmp_path / "cache")
    pulled = pull(chart, cache)
    assert pulled.path == tmp_path / "cache" / "kueue-0.19.2"
    assert pulled.verified.startswith("index.yaml digest sha256:") and pulled.sha256 in pulled.verified
    assert cache.locate(chart).note == ""


def test_pull_refuses_an_archive_whose_digest_differs_from_the_index(
    chart_repo: tuple[str, Path], tmp_path: Path
) -> None:
    _, repo = chart_repo
    (archive,) = repo.glob("*.tgz")
    with pytest.raises(PullError, match="does not match the repository's"):
        install_archive(versions.KUEUE, archive, ChartCache(tmp_path / "c"), expected_sha256="0" * 64)
    assert not (tmp_path / "c" / "kueue-0.19.2").exists()


def test_pull_refuses_a_version_the_repository_does_not_list(chart_repo: tuple[str, Path], tmp_path: Path) -> None:
    url, _ = chart_repo
    with pytest.raises(PullError, match=r"lists no kueue 0\.18\.0"):
        pull(versions.Chart("kueue", "0.18.0", url), ChartCache(tmp_path / "c"))


def test_a_fresh_clone_pulls_the_missing_charts_once_into_its_own_cache(
    chart_repo: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `.ci/run` does in a clone with no chart cache: `charts pull --missing` into `.cache/charts`, here from
    a local repository serving the pinned Kueue chart; a second run finds it there and downloads nothing."""
    from typer.testing import CliRunner

    import gpufleet.charts.cache as cache_module
    from gpufleet.cli.app import app
    from tests.conftest import ROOT, TEST_CHART_CACHE

    assert TEST_CHART_CACHE.is_relative_to(ROOT)  # tests never need a folder outside the clone
    url, repo = chart_repo
    monkeypatch.setattr(cache_module, "pinned_charts", lambda: [versions.Chart("kueue", "0.19.2", url)])
    target = tmp_path / "clone" / ".cache" / "charts"
    first = CliRunner().invoke(app, ["charts", "pull", "--missing", "--chart-cache", str(target)])
    assert first.exit_code == 0, first.output
    assert "checked against index.yaml digest sha256:" in first.output
    assert ChartCache(target).locate(versions.KUEUE).path == target / "kueue-0.19.2"
    for archive in repo.glob("*.tgz"):
        archive.unlink()  # a second download would now fail
    again = CliRunner().invoke(app, ["charts", "pull", "--missing", "--chart-cache", str(target)])
    assert again.exit_code == 0, again.output
    assert "already in the cache" in again.output


# -- the bare-metal storage charts at their pins -------------------------------------------------------------------


def _unknown_keys(ours: dict[str, Any], defaults: dict[str, Any], path: str = "") -> list[str]:
    """Keys of `ours` that the chart's values.yaml does not have (nested where the default is a non-empty map)."""
    out = []
    for key, value in ours.items():
        if key not in defaults:
            out.append(f"{path}{key}")
        elif isinstance(value, dict) and isinstance(defaults[key], dict) and defaults[key]:
            out += _unknown_keys(value, defaults[key], f"{path}{key}.")
    return out


def _containers(checked: Any, release_name: str, kind: str, name: str) -> dict[str, dict[str, Any]]:
    (release,) = [r for r in checked.plan.helm_releases() if r.name == release_name]
    (obj,) = [o for o in checked.releases[release.key].objects if (o.kind, o.name) == (kind, name)]
    return {c["name"]: c for c in obj.manifest["spec"]["template"]["spec"]["containers"]}


def test_bare_metal_storage_charts_render_at_their_new_pins(checked_examples: dict, chart_cache: ChartCache) -> None:
    """csi-driver-nfs 4.13.4 and local-static-provisioner 2.9.0, rendered from the cache with gpufleet's values.
    What only these versions render: the NFS plugin and csi-provisioner v6.3.0 images (csi-driver-nfs
    charts/v4.13.4 values.yaml, `image.baseRepo` + `image.*.repository`), the node-driver-registrar's liveness
    probe on its healthz port (templates/csi-nfs-node.yaml, `nodeDriverRegistrar.livenessProbe`), and the local
    provisioner's tcpSocket liveness probe on its metrics port (sig-storage-local-static-provisioner tag
    local-static-provisioner-2.9.0, helm/provisioner/values.yaml `livenessProbe`). Every value gpufleet sets is a
    key of the pinned chart's values.yaml (Helm ignores an unknown key without a word)."""
    onprem = checked_examples["onprem"]
    controller = _containers(onprem, "dc1-storage-nfs-csi", "Deployment", "csi-nfs-controller")
    assert controller["nfs"]["image"] == "registry.k8s.io/sig-storage/nfsplugin:v4.13.4"
    assert controller["csi-provisioner"]["image"] == "registry.k8s.io/sig-storage/csi-provisioner:v6.3.0"
    registrar = _containers(onprem, "dc1-storage-nfs-csi", "DaemonSet", "csi-nfs-node")["node-driver-registrar"]
    assert registrar["livenessProbe"]["httpGet"]["port"] == "healthz"
    (provisioner,) = _containers(
        onprem, "dc1-storage-nvme-local", "DaemonSet", "nvme-local-local-static-provisioner"
    ).values()
    assert provisioner["livenessProbe"]["tcpSocket"] == {"port": "metrics"}
    for chart in (versions.NFS_CSI_DRIVER, versions.LOCAL_STATIC_PROVISIONER):
        defaults = yaml.safe_load((chart_cache.locate(chart).path / "values.yaml").read_text())
        for r in onprem.plan.helm_releases():
            if r.inputs["chart"] == chart.name:
                assert r.inputs["version"] == chart.version
                assert _unknown_keys(r.inputs["values"], defaults) == [], r.name
