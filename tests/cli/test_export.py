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
