"""`gpufleet burst migrate` (the stack file's window and ledger into the state stack, once) and
`gpufleet burst open --dry-run --offline` (the budget arithmetic without AWS)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpufleet.burst.targets import burst_targets
from gpufleet.cli import burst as burst_cli
from gpufleet.cli.app import app
from model.load import ESTATE_KEY
from tests.burst.helpers import NOW, STACK, FakeDriver, burst_state, hybrid_config, project, recorded, window

runner = CliRunner()
SPENT = {"pool": "burst-h100", "instance_type": "p5.48xlarge", "nodes": 4, "start": "2026-11-02T00:00:00Z",
         "end": "2026-11-03T00:00:00Z", "usd": 19800.0}  # fmt: skip


def invoke(proj: Path, *args: str) -> Any:
    return runner.invoke(app, ["burst", *args, "--stack", STACK, "--project", str(proj)])


def test_migrate_moves_the_stack_files_window_and_ledger_into_the_state_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = window(NOW - dt.timedelta(hours=1), 8, nodes=2, usd_per_hour=55.04)
    proj = project(tmp_path, hybrid_config(w, ledger=[SPENT]), recorded=False)
    driver = FakeDriver(proj)
    monkeypatch.setattr(burst_cli, "make_driver", lambda p: driver)
    monkeypatch.setattr(burst_cli, "clock", lambda region: NOW)
    result = invoke(proj, "open", "--gpus", "8", "--hours", "1")  # refused until migrated: which is the truth?
    assert result.exit_code == 2
    assert "config.gpufleet:burstWindow: burst state is kept in the state stack test-burst now" in result.output

    result = invoke(proj, "migrate")
    assert result.exit_code == 0, result.output
    state = burst_state(proj)
    assert state is not None and state.window is not None and state.window.nodes == 2 and len(state.ledger) == 1
    assert state.as_of == NOW and recorded(proj)["settled"] is False  # the next reconcile applies it
    assert "delete gpufleet:burstWindow, gpufleet:burstLedger from" in " ".join(result.output.split())

    again = invoke(proj, "migrate")
    assert again.exit_code == 0 and "exists already; nothing migrated" in again.output
    assert burst_state(proj) == state


def test_offline_dry_run_prices_the_window_against_the_ledger_without_aws(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = dt.datetime.now(dt.UTC)
    spent = {**SPENT, "start": now.replace(day=1, hour=0).isoformat(), "end": now.replace(day=1, hour=1).isoformat()}
    proj = project(tmp_path, hybrid_config(ledger=[spent]))
    driver = FakeDriver(proj)
    monkeypatch.setattr(burst_cli, "make_driver", lambda p: driver)
    monkeypatch.setattr(burst_cli, "make_aws", lambda region: pytest.fail("--offline must not call AWS"))
    result = invoke(proj, "open", "--gpus", "8", "--hours", "2", "--dry-run", "--offline")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert (  # 1 x $55.04/h x (2 h + the grace + the stop lag); 19,800 booked
        "worst case $152.28 at worst (1 x $55.04/h x (2 h + 0.5 h grace + 16 min stop lag)) within $200.00 left"
    ) in text
    assert "not checked offline" in text and "quota (192 vCPUs more)" in text and "capacity" in text
    assert "spend so far from the ledger of stack test-burst" in text
    assert driver.names() == ["read_state"]

    result = invoke(proj, "open", "--gpus", "8", "--hours", "4", "--dry-run", "--offline")
    assert result.exit_code == 0, (
        result.output
    )  # $200 holds 3 h 38 min of one node: 2 h 52 min, the grace and the stop lag
    text = " ".join(result.output.split())
    assert "window shortened to 2 h 52 min: 1 x p5.48xlarge for 4 h cost $262.36 at worst" in text
    assert "but only $200.00 left in" in text


def test_offline_without_a_pulumi_backend_uses_the_stack_files_ledger_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = project(tmp_path, hybrid_config(), recorded=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no Pulumi CLI
    monkeypatch.setattr(burst_cli, "make_aws", lambda region: pytest.fail("--offline must not call AWS"))
    result = invoke(proj, "open", "--gpus", "8", "--hours", "2", "--dry-run", "--offline")
    assert result.exit_code == 0, result.output
    assert "the state stack could not be read: the Pulumi CLI was not found" in " ".join(result.output.split())


def test_offline_is_only_a_dry_run(tmp_path: Path) -> None:
    proj = project(tmp_path, hybrid_config())
    result = invoke(proj, "open", "--gpus", "8", "--hours", "2", "--offline")
    assert result.exit_code == 2 and "only goes with --dry-run" in result.output


def test_extend_moves_an_open_windows_expiry_and_its_backstop_within_policy_and_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = project(tmp_path, hybrid_config(window(NOW - dt.timedelta(hours=1), 4, nodes=1, usd_per_hour=55.04)))
    driver = FakeDriver(proj)
    monkeypatch.setattr(burst_cli, "make_driver", lambda p: driver)
    monkeypatch.setattr(burst_cli, "clock", lambda region: NOW)
    result = invoke(proj, "extend", "--hours", "2")
    assert result.exit_code == 0, result.output
    assert "extended to 2026-11-20 17:00 UTC (about $110.08 more)" in result.output
    # The backstop (schedule, CronJobs) stops at the expiry: the targeted `up` moves it to the new one.
    assert driver.names() == ["read_state", "select", "write_state", "up", "write_state"]
    assert [c[1] for c in driver.calls if c[0] == "up"] == [burst_targets(proj, STACK)]
    state = burst_state(proj)
    assert state is not None and state.window is not None and state.window.expires == NOW + dt.timedelta(hours=5)
    assert state.settled

    result = invoke(proj, "extend", "--hours", "44")  # 49 h from its start: over max_window_hours (48)
    assert result.exit_code == 1 and "more than the burst policy's max_window_hours (48)" in result.output


def test_extend_refused_over_the_budget_and_without_an_open_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = window(NOW - dt.timedelta(hours=1), 2, nodes=1, usd_per_hour=55.04)
    proj = project(tmp_path, hybrid_config(w, ledger=[{**SPENT, "usd": 19700.0}]))  # $300 left, $110.08 committed
    driver = FakeDriver(proj)
    monkeypatch.setattr(burst_cli, "make_driver", lambda p: driver)
    monkeypatch.setattr(burst_cli, "clock", lambda region: NOW)
    result = invoke(proj, "extend", "--hours", "4")
    assert result.exit_code == 1
    assert (  # $300 holds 5 h 27 min of one node: 4 h 41 min from its start, the grace and the stop lag
        "extended, the window (1 x p5.48xlarge for 6 h from its start) costs $372.44 at worst (1 x $55.04/h x (6 h + "
        "0.5 h grace + 16 min stop lag)), but only $300.00 left in November 2026 ($19,700.00 spent) of the "
        "$20,000.00 monthly burst budget; it fits until 2026-11-20 15:41 UTC"
    ) in " ".join(result.output.split())
    assert driver.names() == ["read_state"]

    monkeypatch.setattr(burst_cli, "clock", lambda region: NOW + dt.timedelta(hours=2))  # expired
    result = invoke(proj, "extend", "--hours", "1")
    assert result.exit_code == 1
    assert (
        "expired at 2026-11-20 13:00 UTC, so it cannot be extended; `gpufleet burst reconcile` books it at $152.28"
    ) in " ".join(result.output.split())


def test_open_and_extend_accept_a_short_window_its_aws_stop_being_kept_far_enough_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A window whose expiry + grace falls within minutes of its recording is no longer refused: its AWS stop is
    model.burst.AWS_STOP_LEAD after the expiry, so the schedule is never sent a time about to pass."""
    config = hybrid_config(window(NOW - dt.timedelta(hours=1), 1 + 1 / 60, nodes=1, usd_per_hour=55.04))
    config[ESTATE_KEY]["burst"]["grace_minutes"] = 0
    proj = project(tmp_path, config)
    driver = FakeDriver(proj)
    monkeypatch.setattr(burst_cli, "make_driver", lambda p: driver)
    monkeypatch.setattr(burst_cli, "clock", lambda region: NOW)
    result = invoke(proj, "extend", "--hours", "0.05")  # expires in 1 min, then 3 more
    assert result.exit_code == 0, result.output

    fresh = hybrid_config()
    fresh[ESTATE_KEY]["burst"]["grace_minutes"] = 0
    (tmp_path / "open").mkdir()
    proj = project(tmp_path / "open", fresh)
    monkeypatch.setattr(burst_cli, "make_aws", lambda region: pytest.fail("--offline must not call AWS"))
    result = invoke(proj, "open", "--gpus", "8", "--hours", "0.05", "--dry-run", "--offline")
    assert result.exit_code == 0, result.output
