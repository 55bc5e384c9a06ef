"""One booking rule (model.burst_spend.booking) whichever command books a window, re-opening over draining nodes, and
`burst status` without AWS or a Pulumi backend."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from botocore.stub import Stubber
from typer.testing import CliRunner

from gpufleet.burst.errors import BurstError
from gpufleet.cli import burst as burst_cli
from gpufleet.cli.app import app
from model.burst_spend import booking, spend_in_month
from model.load import parse_estate
from tests.burst.helpers import NOW, STACK, FakeDriver, allow, burst_state, hybrid_config, project, window

runner = CliRunner()


def invoke(proj: Path, *args: str) -> Any:
    return runner.invoke(app, ["burst", *args, "--stack", STACK, "--project", str(proj)])


@pytest.mark.parametrize(
    "command",
    [("open", "--gpus", "8", "--hours", "4"), ("close",), ("reconcile",), ("extend", "--hours", "1")],
    ids=lambda c: c[0],
)
def test_every_path_books_a_long_expired_window_at_the_same_figure(
    tmp_path: Path, quota: Stubber, monkeypatch: pytest.MonkeyPatch, command: tuple[str, ...]
) -> None:
    """1 x p5.48xlarge opened 30 h ago for 8 h and never reconciled: nothing measured it here, so every command
    books it at the cap until the backstop time, expiry + 30 min grace + 16 min stop lag: $55.04 x 8 h 46 min =
    $482.52 (not until expiry, $440.32, nor until whenever the command runs, $1,651.20)."""
    allow(quota, 768)
    expired = window(NOW - dt.timedelta(hours=30), 8, nodes=1, usd_per_hour=55.04)
    proj = project(tmp_path, hybrid_config(expired, ledger=[]))
    monkeypatch.setattr(burst_cli, "make_driver", lambda p: FakeDriver(p))
    result = invoke(proj, *command)
    text = " ".join(result.output.split())
    if command[0] == "extend":  # nothing to extend: it says what the window will be booked at
        assert result.exit_code == 1 and "books it at $482.52" in text
        return
    assert result.exit_code == 0, result.output
    state = burst_state(proj)
    assert state is not None
    (entry,) = state.ledger
    assert (entry.usd, entry.end) == (482.52, NOW - dt.timedelta(hours=22) + dt.timedelta(minutes=46))


def test_open_over_a_window_still_draining_keeps_room_for_its_nodes(
    tmp_path: Path, quota: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    """closed at 11:50 (2 nodes drain until 12:20, stopped by 12:36 with the stop lag), open 2 nodes at 12:00: the
    new window records the 2 nodes and their stop time, so the program keeps them (model.burst.burst_group_size); the old window is booked at its cap
    to its backstop, since its nodes cannot be measured before they stop. A smaller window is refused
    (tests/burst/test_day2.py)."""
    allow(quota, 768)
    closed = window(NOW - dt.timedelta(hours=3, minutes=10), 3, nodes=2, usd_per_hour=55.04)
    proj = project(tmp_path, hybrid_config(closed, ledger=[]))
    monkeypatch.setattr(burst_cli, "make_driver", lambda p: FakeDriver(p))
    result = invoke(proj, "open", "--gpus", "16", "--hours", "4")
    assert result.exit_code == 0, result.output
    state = burst_state(proj)
    assert state is not None and state.window is not None
    assert (state.window.nodes, state.window.draining_nodes) == (2, 2)
    assert state.window.draining_until == NOW + dt.timedelta(minutes=36)
    (entry,) = state.ledger
    assert entry.usd == round(2 * 55.04 * (3.5 + 16 / 60), 2) and "cannot be measured yet" in entry.closed_by


def test_status_works_offline_and_says_what_it_could_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No AWS, no Pulumi CLI: the window comes from the stack file's what-if keys, the time from this machine."""
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    proj = project(tmp_path, hybrid_config(window(now - dt.timedelta(hours=1), 4, nodes=1)), recorded=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no Pulumi CLI

    def no_aws(region: str) -> dt.datetime:
        raise BurstError(f"could not reach AWS for DescribeAvailabilityZones in {region}")

    monkeypatch.setattr(burst_cli, "clock", no_aws)
    result = invoke(proj, "status")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "open: 1 x p5.48xlarge on pool burst-h100" in text and "time left │ 3.0 h" in text
    assert "AWS's clock could not be read (could not reach AWS" in text and "this machine's clock" in text
    assert "the state stack test-burst could not be read (the Pulumi CLI was not found" in text


def test_with_440_32_left_the_month_ends_within_the_budget_even_at_the_cap(
    tmp_path: Path, quota: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's case end to end: $440.32 left, 1 x p5.48xlarge asked for 8 h ($440.32 exactly). It opens for
    7 h 14 min; booked at its worst (every node until expiry + grace + stop lag, nothing measured), the month ends
    at $20,000.00, not $20,042.20 (nor the $20,108.25 of a window that also ran until the next reconcile)."""
    allow(quota, 768)
    spent = {"pool": "burst-h100", "instance_type": "p5.48xlarge", "nodes": 4, "start": "2026-11-02T00:00:00Z",
             "end": "2026-11-03T00:00:00Z", "usd": 19559.68}  # fmt: skip
    proj = project(tmp_path, hybrid_config(ledger=[spent]))
    monkeypatch.setattr(burst_cli, "make_driver", lambda p: FakeDriver(p))
    result = invoke(proj, "open", "--gpus", "8", "--hours", "8")
    assert result.exit_code == 0, result.output
    assert "window shortened to 7 h 14 min" in " ".join(result.output.split())
    monkeypatch.setattr(burst_cli, "clock", lambda region: NOW + dt.timedelta(hours=12))  # long after the backstop
    result = invoke(proj, "reconcile")
    assert result.exit_code == 0, result.output
    state = burst_state(proj)
    assert state is not None and state.window is None
    assert spend_in_month(state.ledger, NOW) == 20_000.00


def test_reconcile_moves_the_backstop_of_an_open_window_a_lowered_budget_shortened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """2 x p5.48xlarge opened 1 h ago for 8 h, budget lowered to $500: the window fits only until 3 h 46 min from its
    start, still ahead. The estate's stops (the AWS schedule, the CronJobs) name the old expiry until an `up` moves
    them, so reconcile records the earlier expiry and runs its targeted `up` now, not at the old one."""
    start = NOW - dt.timedelta(hours=1)
    config = hybrid_config(window(start, 8, nodes=2, usd_per_hour=55.04), ledger=[])
    config["gpufleet:estate"]["burst"]["budget_usd"] = 500
    proj = project(tmp_path, config)
    drivers: list[FakeDriver] = []
    monkeypatch.setattr(burst_cli, "make_driver", lambda p: drivers.append(FakeDriver(p)) or drivers[-1])
    monkeypatch.setattr(burst_cli, "clock", lambda region: NOW)
    result = invoke(proj, "reconcile")
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "the burst budget was lowered" in said and "now expires at 2026-11-20 14:46 UTC" in said
    assert "up" in drivers[-1].names()
    state = burst_state(proj)
    assert state is not None and state.window is not None
    assert state.window.expires == start + dt.timedelta(hours=3, minutes=46)
    result = invoke(proj, "reconcile")  # recorded: nothing more to do
    assert "nothing to do" in result.output


def test_a_lowered_budget_closes_the_open_window_for_the_commands_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same rule as the program's (model.burst_spend.within_budget): 2 x p5.48xlarge opened 4 h 10 min ago for 8 h,
    budget lowered to $500. Its worst case fits only until 3 h 46 min from its start, 24 minutes ago; but its stops
    still named the old expiry until now, so the expiry moves to now, never into the past, and the window is booked
    to now + grace + lag (a past expiry would book the cap to a stop that never happened, under what ran)."""
    start = NOW - dt.timedelta(hours=4, minutes=10)
    config = hybrid_config(window(start, 8, nodes=2, usd_per_hour=55.04), ledger=[])
    config["gpufleet:estate"]["burst"]["budget_usd"] = 500
    proj = project(tmp_path, config)
    monkeypatch.setattr(burst_cli, "make_driver", lambda p: FakeDriver(p))
    monkeypatch.setattr(burst_cli, "clock", lambda region: NOW)
    result = invoke(proj, "reconcile")
    assert result.exit_code == 0, result.output
    assert "expired at 2026-11-20 12:00 UTC; admission stopped" in " ".join(result.output.split())
    state = burst_state(proj)
    assert state is not None and state.window is not None
    assert state.window.expires == NOW
    assert booking(parse_estate(config["gpufleet:estate"], "test"), state.window, "cap").end == NOW + dt.timedelta(
        minutes=46
    )
