"""`gpufleet validate` on a bursting estate: a burst pool whose failures would tell nobody is warned about."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from gpufleet.cli.app import app
from tests.conftest import example_config, write_project

runner = CliRunner()


def test_a_burst_estate_without_alert_emails_is_warned_that_failures_tell_nobody(tmp_path: Path) -> None:
    # Review of L, defect 5: with no burst.alert_emails the backstop's alarm has no actions and the budget emails
    # nobody; validate says so (it stays valid: the budget and the alarm still show in the console).
    config = example_config("hybrid")
    config["gpufleet:estate"]["burst"]["alert_emails"] = []
    result = runner.invoke(app, ["validate", "-s", "hybrid", "-C", str(write_project(tmp_path, config, "hybrid"))])
    assert result.exit_code == 0, result.output
    assert "warning: burst.alert_emails is empty" in result.output
    (tmp_path / "b").mkdir()
    told = runner.invoke(
        app, ["validate", "-s", "hybrid", "-C", str(write_project(tmp_path / "b", example_config("hybrid"), "hybrid"))]
    )
    assert told.exit_code == 0 and "warning" not in told.output
