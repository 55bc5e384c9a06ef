"""`gpufleet export`: one YAML file per Kubernetes object and Helm release; nothing written on bad input."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from gpufleet.cli.app import app
from tests.conftest import ROOT, example_config, write_project

runner = CliRunner()


def test_export_writes_kubernetes_objects_and_helm_releases(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = runner.invoke(app, ["export", "-s", "aws-train", "--out", str(out), "-C", str(ROOT)])
    assert result.exit_code == 0, result.output
    files = sorted(out.rglob("*.yaml"))
    assert files
    for f in files:
        doc = yaml.safe_load(f.read_text())
        if f.parent.name == "helm":
            assert {"chart", "version", "repository", "values"} <= set(doc)
        else:
            assert {"apiVersion", "kind", "metadata"} <= set(doc)


def test_export_writes_nothing_on_bad_input(tmp_path: Path) -> None:
    config = example_config("aws-train")
    config["gpufleet:estate"]["metadata"]["owner"] = ""
    write_project(tmp_path, config)
    out = tmp_path / "out"
    result = runner.invoke(app, ["export", "-s", "test", "--out", str(out), "-C", str(tmp_path)])
    assert result.exit_code == 2
    assert not out.exists()


def test_a_release_that_cannot_be_rendered_is_exit_1_naming_it(tmp_path: Path) -> None:
    # Before: exit 0 and "wrote N files", with the failure only inside <cluster>/rendered/<release>/ERROR.txt.
    out, empty = tmp_path / "out", tmp_path / "no-charts"
    empty.mkdir()
    args = ["export", "-s", "onprem", "--out", str(out), "--render", "--chart-cache", str(empty), "-C", str(ROOT)]
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert "Helm release(s) could not be rendered: dc1/rendered/" in result.stderr
    assert "gpu-operator" in result.stderr and "is not in the chart cache" in result.stderr
    assert (out / "dc1" / "rendered" / "gpu-operator" / "ERROR.txt").is_file()
    assert "Traceback" not in result.output


def test_export_render_with_every_chart_is_exit_0(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = runner.invoke(app, ["export", "-s", "onprem", "--out", str(out), "--render", "-C", str(ROOT)])
    assert result.exit_code == 0, result.output
    assert not list(out.rglob("ERROR.txt")) and list((out / "dc1" / "rendered").rglob("*.yaml"))


def test_export_render_into_a_reused_out_leaves_no_stale_file(tmp_path: Path) -> None:
    """Issue 29: an earlier run's ERROR.txt (or rendered objects) stayed beside this run's rendered YAML."""
    out = tmp_path / "out"
    stale = out / "dc1" / "rendered" / "gpu-operator"
    stale.mkdir(parents=True)
    (stale / "ERROR.txt").write_text("gpu-operator is not in the chart cache\n")
    (stale / "999-old-object.yaml").write_text("kind: Old\n")
    result = runner.invoke(app, ["export", "-s", "onprem", "--out", str(out), "--render", "-C", str(ROOT)])
    assert result.exit_code == 0, result.output
    assert not list(out.rglob("ERROR.txt")) and not (stale / "999-old-object.yaml").exists()
    assert list(stale.glob("*.yaml"))
