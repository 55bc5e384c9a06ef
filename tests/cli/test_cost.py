"""`gpufleet cost`: json totals with dated prices, text and markdown naming every pool, a bad --at exits 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app
from tests.conftest import ROOT, write_project
from tests.review.estates import small
from tests.review.repos import stack_config


def test_cost_cli_json_carries_totals_and_dated_prices(tmp_path: Path) -> None:
    project = write_project(tmp_path, stack_config(small()), stack="small")
    result = CliRunner().invoke(app, ["cost", "-s", "small", "-C", str(project), "-f", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    # pools + FSx + the rest of use1's bill (tests/review/cost/test_cost.py works it: 185.89955, its 4 KMS keys
    # included), with the control plane of 1.34 at the extended rate from 2026-12-02 (+$0.50)
    assert doc["total"]["hourly"]["max"] == pytest.approx(186.39955, abs=1e-3)
    assert {p["date"] for p in doc["prices"]} == {"2026-07-20", "stack file", "2026-11-29", "2026-11-30", "2026-12-02"}
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


def test_cost_table_keeps_instance_names_and_figures_whole_on_an_80_column_terminal() -> None:
    import io

    from rich.console import Console

    from gpufleet.render.cost import cost_text
    from gpufleet.review.cost.envelope import estate_cost
    from model.load import read_stack

    buf = io.StringIO()
    envelope = estate_cost(read_stack(ROOT, "aws-train").estate())
    cost_text(envelope, Console(file=buf, width=80, no_color=True))
    rows = {line.split()[0]: line.split() for line in buf.getvalue().splitlines() if line.strip().startswith("use1/")}
    # aws-train's pools: p5.48xlarge 0/2/4 at $55.04 -> max 4 × 55.04 = 220.16 (it was cut to "$220.…" before)
    assert rows["use1/h100"][1:3] == ["p5.48xlarge", "0/2/4"] and rows["use1/h100"][-1] == "220.16"
    assert rows["use1/l40s"][1] == "g6e.12xlarge"  # was folded into "g6e.12xla" / "rge"
    assert rows["use1/agents-l40s"][1] == "g6e.xlarge"
