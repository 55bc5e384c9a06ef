"""`gpufleet catalog show`: the catalog's GPU instance types with prices."""

from __future__ import annotations

from typer.testing import CliRunner

from gpufleet.cli.app import app

runner = CliRunner()


def test_catalog_show_lists_priced_gpu_types() -> None:
    result = runner.invoke(app, ["catalog", "show"])
    assert result.exit_code == 0
    assert "p5.48xlarge" in result.stdout and "55.04" in result.stdout
