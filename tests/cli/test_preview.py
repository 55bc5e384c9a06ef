"""`gpufleet preview`: output formats, exit codes, bad input without tracebacks."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app
from tests.conftest import ROOT, example_config, write_project

runner = CliRunner()


def test_preview_text_shows_the_component_tree_and_type_counts() -> None:
    result = runner.invoke(app, ["preview", "--stack", "hybrid", "--project", str(ROOT)])
    assert result.exit_code == 0, result.output
    assert "Estate hyb" in result.output
    assert "Site onprem" in result.output and "Site cloud" in result.output
    assert "Resources by type" in result.output


def test_preview_json_carries_every_resource_with_key_type_name_parent_inputs_protect() -> None:
    result = runner.invoke(app, ["preview", "-s", "onprem", "-f", "json", "-C", str(ROOT)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["stack"] == "onprem"
    assert doc["resources"]
    for r in doc["resources"]:
        assert {"key", "type", "name", "parent", "inputs", "protect"} <= set(r)


def test_preview_markdown_renders() -> None:
    result = runner.invoke(app, ["preview", "-s", "aws-train", "-f", "markdown", "-C", str(ROOT)])
    assert result.exit_code == 0, result.output
    assert "aws-train" in result.stdout


def test_missing_stack_exits_2_and_lists_stacks() -> None:
    result = runner.invoke(app, ["preview", "-s", "nope", "-C", str(ROOT)])
    assert result.exit_code == 2
    assert "Pulumi.nope.yaml: stack file not found" in result.stderr
    assert "aws-train" in result.stderr
    assert "Traceback" not in result.output


def test_broken_yaml_exits_2_with_the_line(tmp_path: Path) -> None:
    write_project(tmp_path, example_config("aws-train"))
    (tmp_path / "stacks" / "Pulumi.test.yaml").write_text("config:\n  gpufleet:estate: {metadata: [\n")
    result = runner.invoke(app, ["preview", "-s", "test", "-C", str(tmp_path)])
    assert result.exit_code == 2
    assert "not valid YAML (line" in result.stderr
    assert "Traceback" not in result.output


def test_bad_field_exits_2_naming_file_and_path(tmp_path: Path) -> None:
    config = example_config("aws-train")
    config["gpufleet:estate"]["sites"][0]["node_pools"][0]["instance_type"] = "p9.96xlarge"
    write_project(tmp_path, config)
    result = runner.invoke(app, ["preview", "-s", "test", "-C", str(tmp_path)])
    assert result.exit_code == 2
    assert "Pulumi.test.yaml: config.gpufleet:estate.sites[0].node_pools[0].instance_type" in result.stderr


def test_preview_exits_1_on_a_mandatory_violation_and_shows_it(tmp_path: Path) -> None:
    from tests.policies.broken_stack import broken_config

    write_project(tmp_path, broken_config())
    result = runner.invoke(app, ["preview", "-s", "test", "-C", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert "budget-cap" in result.stdout and "mandatory" in result.stdout


def test_preview_json_carries_cost_and_findings() -> None:
    result = runner.invoke(app, ["preview", "-s", "aws-train", "-f", "json", "-C", str(ROOT)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["cost"]["estate"] == "train"
    assert "findings" in doc


def test_preview_markdown_cli_uses_the_same_renderer() -> None:
    result = runner.invoke(app, ["preview", "-s", "aws-train", "-C", str(ROOT), "-f", "markdown"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("<!-- gpufleet:plan:gpufleet/aws-train -->")


def test_preview_of_a_burst_window_shows_its_backstop_and_writes_nothing() -> None:
    """`--burst-window GPUS:HOURS`: the estate as if `burst open` opened that window now, offline, with the time the
    capacity stops by itself (text) and the backstop's resources (json)."""
    stack_file = ROOT / "stacks" / "Pulumi.hybrid.yaml"
    before = stack_file.read_bytes()
    text = runner.invoke(app, ["preview", "-s", "hybrid", "--burst-window", "16:8", "--summary", "-C", str(ROOT)])
    assert text.exit_code == 0, text.output
    (line,) = [x for x in text.stdout.splitlines() if x.startswith("Backstop:")]
    assert "burst-h100" in line and "queues hold at" in line and "scales the node group to zero" in line
    result = runner.invoke(app, ["preview", "-s", "hybrid", "--burst-window", "16:8", "-f", "json", "-C", str(ROOT)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    stop = dt.datetime.fromisoformat(doc["backstop"]["stop_at"])
    assert stop - dt.datetime.fromisoformat(doc["backstop"]["hold_at"]) == dt.timedelta(minutes=30)  # the grace
    (schedule,) = [r for r in doc["resources"] if r["type"] == "aws:scheduler/schedule:Schedule"]
    assert schedule["inputs"]["scheduleExpression"] == f"at({stop:%Y-%m-%dT%H:%M:%S})"
    (ng,) = [r for r in doc["resources"] if r["type"] == "aws:eks/nodeGroup:NodeGroup" and "burst" in r["name"]]
    assert ng["inputs"]["scalingConfig"]["maxSize"] == 2  # 16 GPUs = 2 x p5.48xlarge
    assert stack_file.read_bytes() == before


def test_the_what_if_window_is_the_one_open_would_record_offline_shortened_by_the_budget(tmp_path: Path) -> None:
    """`preview --burst-window` and `burst open --dry-run --offline` build one window (gpufleet/burst/preflight.py
    offline_check): with $500 of the month's $20,000 left, 16 GPUs (2 x p5.48xlarge at $55.04/h) for 8 h are cut
    to the minutes whose worst case (cap x (hours + 30 min grace)) fits, as `open` would cut them."""
    from gpufleet.burst.preflight import BurstRequest, offline_check
    from model.burst_spend import month_start
    from model.load import read_stack

    now = dt.datetime.now(dt.UTC)
    start = month_start(now)
    config = example_config("hybrid")
    config["gpufleet:burstLedger"] = [
        {"pool": "burst-h100", "instance_type": "p5.48xlarge", "nodes": 1, "start": start.isoformat(),
         "end": (start + dt.timedelta(seconds=1)).isoformat(), "usd": 19_500.0}
    ]  # fmt: skip
    project = write_project(tmp_path, config)
    result = runner.invoke(app, ["preview", "-s", "test", "--burst-window", "16:8", "-f", "json", "-C", str(project)])
    assert result.exit_code == 0, result.output
    stop = dt.datetime.fromisoformat(json.loads(result.stdout)["backstop"]["stop_at"])
    sf = read_stack(project, "test")
    check = offline_check(sf.estate(), sf.ledger(), BurstRequest(gpus=16, hours=8), now)
    assert check.checks[1].startswith("window shortened to 3 h 46 min")
    assert stop - check.window.expires <= dt.timedelta(minutes=31)  # the grace, on the next whole minute
    assert stop - now < dt.timedelta(hours=5)  # not the 8.5 h asked for


def test_preview_without_a_window_has_no_backstop() -> None:
    result = runner.invoke(app, ["preview", "-s", "hybrid", "-f", "json", "-C", str(ROOT)])
    doc = json.loads(result.stdout)
    # The pool's dead-letter queue, schedule group and alarm stay between windows; a schedule exists only in one.
    assert doc["backstop"] is None and not [
        r for r in doc["resources"] if r["type"] == "aws:scheduler/schedule:Schedule"
    ]


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("16", "is not GPUS:HOURS"),
        ("0:8", "is not GPUS:HOURS"),
        ("16:-1", "is not GPUS:HOURS"),
        ("sixteen:8", "is not GPUS:HOURS"),
        ("16:nan", "is not GPUS:HOURS"),
        (
            "16:1000",
            "--burst-window 16:1000: --hours must be at least a minute",
        ),
        ("4000:2", "more than pool burst-h100's max of 4 nodes"),
    ],
)
def test_a_bad_burst_window_exits_2_without_a_traceback(value: str, says: str) -> None:
    result = runner.invoke(app, ["preview", "-s", "hybrid", "--burst-window", value, "-C", str(ROOT)])
    assert result.exit_code == 2, result.output
    assert says in result.stderr and "Traceback" not in result.output


def test_a_burst_window_on_an_estate_without_burst_exits_2() -> None:
    result = runner.invoke(app, ["preview", "-s", "aws-train", "--burst-window", "8:2", "-C", str(ROOT)])
    assert result.exit_code == 2 and "has no burst policy" in result.stderr
