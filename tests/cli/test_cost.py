"""`gpufleet cost`: json totals with dated prices, text and markdown naming every pool, a bad --at exits 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app
from tests.conftest import ROOT, write_project
from tests.review.estates import small


def test_cost_cli_json_carries_totals_and_dated_prices(tmp_path: Path) -> None:
    project = write_project(tmp_path, {"gpufleet:estate": small()}, stack="small")
    result = CliRunner().invoke(app, ["cost", "-s", "small", "-C", str(project), "-f", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["total"]["hourly"]["max"] == pytest.approx(184.7342, abs=1e-3)
    assert {p["date"] for p in doc["prices"]} == {"2026-07-20", "stack file", "2026-11-29"}
    assert doc["budget_usd_per_hour"] == 200


def test_cost_cli_text_and_markdown_name_every_pool() -> None:
    for fmt in ("text", "markdown"):
        result = CliRunner().invoke(app, ["cost", "-s", "aws-train", "-C", str(ROOT), "-f", fmt])
        assert result.exit_code == 0, result.output
        for pool in ("h100", "l40s", "agents-l40s"):
            assert pool in result.stdout


def test_cost_cli_bad_time_exits_2() -> None:
    result = CliRunner().invoke(app, ["cost", "-s", "aws-train", "-C", str(ROOT), "--at", "tomorrow"])
    assert result.exit_code == 2
    assert "--at" in result.stderr
