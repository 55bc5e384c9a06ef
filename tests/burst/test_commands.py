"""`gpufleet burst` end to end through typer's CliRunner: the driver calls it makes, the Pulumi commands the real
AutomationDriver runs (through a recording `pulumi` shim), exit codes, and the burst state (the state stack's
outputs, kept by the fake driver) after every failure."""

from __future__ import annotations

import datetime as dt
import stat
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from botocore.stub import Stubber
from typer.testing import CliRunner

from gpufleet.burst.driver import AutomationDriver, DriverError, StackDriver, StackLocked
from gpufleet.burst.targets import burst_targets
from gpufleet.cli import burst as burst_cli
from gpufleet.cli.app import app
from model.load import read_stack
from tests.burst.helpers import (
    NOW,
    STACK,
    FakeDriver,
    allow,
    burst_state,
    hybrid_config,
    project,
    recorded,
    stack_file,
    window,
)

runner = CliRunner()
AT_CAP = " (booked at the cap: no Auto Scaling group carries the burst pool's tags)"


def use_driver(monkeypatch: pytest.MonkeyPatch, driver: StackDriver | None) -> None:
    def make(project_dir: Path) -> StackDriver:
        assert driver is not None, "the command must not touch the stack"
        return driver

    monkeypatch.setattr(burst_cli, "make_driver", make)


def invoke(proj: Path, *args: str) -> Any:
    return runner.invoke(app, ["burst", *args, "--stack", STACK, "--project", str(proj)])


def config_of(proj: Path) -> dict[str, Any]:
    state = burst_state(proj)
    assert state is not None
    return {"window": state.window, "ledger": list(state.ledger), "estate": read_stack(proj, STACK).estate()}


def reader(monkeypatch: pytest.MonkeyPatch, proj: Path) -> FakeDriver:
    """A driver the command may read the burst state through, and must change nothing with."""
    driver = FakeDriver(proj)
    use_driver(monkeypatch, driver)
    return driver


def changed_nothing(driver: FakeDriver) -> bool:
    return set(driver.names()) <= {"read_state"}


# -- open ---------------------------------------------------------------------------------------------------


def test_open_checks_then_writes_the_window_and_runs_up(
    tmp_path: Path, quota: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = project(tmp_path, hybrid_config())
    driver = FakeDriver(proj)
    use_driver(monkeypatch, driver)
    allow(quota, 768)
    result = invoke(proj, "open", "--gpus", "12", "--hours", "8")
    assert result.exit_code == 0, result.output
    targets = burst_targets(proj, STACK)
    assert [c[:2] for c in driver.calls] == [
        ("read_state", STACK),
        ("select", STACK),
        ("write_state", STACK),
        ("up", targets),  # targeted: only what the window changes
        ("write_state", STACK),
    ]
    pending, settled = driver.written()
    assert (pending["settled"], settled["settled"]) == (False, True)  # unsettled until `up` finished
    assert pending["as_of"] == "2026-11-20T12:00:00Z"  # AWS's clock, which the program judges the window by
    assert (
        pending["window"]
        == settled["window"]
        == {
            "pool": "burst-h100",
            "nodes": 2,
            "instance_type": "p5.48xlarge",
            "availability_zone": "us-east-1a",
            "capacity_type": "on-demand",  # what a change that replaces the node group is judged against
            "start": "2026-11-20T12:00:00Z",
            "expires": "2026-11-20T20:00:00Z",
            "opened_by": "gpufleet burst",
            "gpus": 12,
            "usd_per_hour": 55.04,
        }
    )
    w = config_of(proj)["window"]
    assert w is not None and w.nodes == 2  # the state stack now holds the window the program reads
    assert "ok quota L-417A185B (Running On-Demand P instances): 0 + 384 of 768 vCPUs" in result.output
    assert "burst window open: 2 x p5.48xlarge in us-east-1a until 2026-11-20 20:00 UTC" in result.output


def test_dry_run_checks_and_changes_nothing(tmp_path: Path, quota: Stubber, monkeypatch: pytest.MonkeyPatch) -> None:
    proj = project(tmp_path, hybrid_config())
    before = stack_file(proj).read_bytes()
    driver = reader(monkeypatch, proj)
    allow(quota, 768)
    result = invoke(proj, "open", "--gpus", "8", "--hours", "2", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "dry run: nothing was changed" in result.output
    assert stack_file(proj).read_bytes() == before and changed_nothing(driver)


def test_quota_refusal_exits_1_without_touching_the_stack(
    tmp_path: Path, quota: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = project(tmp_path, hybrid_config())
    before = stack_file(proj).read_bytes()
    driver = reader(monkeypatch, proj)
    allow(quota, 192)
    result = invoke(proj, "open", "--gpus", "16", "--hours", "2")
    assert result.exit_code == 1
    assert "EC2 quota L-417A185B" in result.output and "Request a quota increase first" in result.output
    assert stack_file(proj).read_bytes() == before and changed_nothing(driver)


def test_budget_refusal_exits_1_with_the_numbers(
    tmp_path: Path, quota: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    spent = {"pool": "burst-h100", "instance_type": "p5.48xlarge", "nodes": 4, "start": "2026-11-02T00:00:00Z",
             "end": "2026-11-03T00:00:00Z", "usd": 19980.0}  # fmt: skip
    proj = project(tmp_path, hybrid_config(ledger=[spent]))
    before = recorded(proj)
    driver = reader(monkeypatch, proj)
    allow(quota, 768)
    result = invoke(proj, "open", "--gpus", "8", "--hours", "4")
    assert result.exit_code == 1
    assert (  # $20 left cannot hold even the grace of one node ($27.52)
        "1 x p5.48xlarge for 4 h cost $262.36 at worst (1 x $55.04/h x (4 h + 0.5 h grace + 16 min stop lag)), "
        "but only $20.00 left in November 2026 ($19,980.00 spent) of the $20,000.00 monthly burst budget; no window "
        "fits"
    ) in " ".join(result.output.split())
    assert recorded(proj) == before and changed_nothing(driver)


def test_unknown_instance_type_is_bad_input_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    proj = project(tmp_path, hybrid_config())
    reader(monkeypatch, proj)
    monkeypatch.setattr(burst_cli, "make_aws", lambda region: pytest.fail("no AWS call for bad input"))
    result = invoke(proj, "open", "--gpus", "8", "--hours", "4", "--instance-type", "p9.huge")
    assert result.exit_code == 2
    assert "instance type 'p9.huge' is not in the GPU catalog" in result.output


def test_open_refused_while_a_window_is_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(burst_cli, "clock", lambda region: NOW)
    proj = project(tmp_path, hybrid_config(window(NOW - dt.timedelta(hours=1), 4)))
    driver = reader(monkeypatch, proj)
    result = invoke(proj, "open", "--gpus", "8", "--hours", "4")
    assert result.exit_code == 1
    assert "a burst window is already open on pool burst-h100" in result.output and changed_nothing(driver)


def test_locked_stack_restores_the_burst_state_and_exits_1(
    tmp_path: Path, quota: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = project(tmp_path, hybrid_config())
    before = config_of(proj)
    driver = FakeDriver(proj, fail_up=StackLocked("pulumi up: the stack is locked by another update"))
    use_driver(monkeypatch, driver)
    allow(quota, 768)
    result = invoke(proj, "open", "--gpus", "8", "--hours", "4")
    assert result.exit_code == 1
    assert "the stack is locked by another update" in result.output
    assert "the burst state was restored to what it was before" in result.output
    assert driver.names() == ["read_state", "select", "write_state", "up", "write_state"]
    assert config_of(proj) == before


def test_failed_up_after_an_expired_window_restores_window_and_ledger(
    tmp_path: Path, quota: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = window(NOW - dt.timedelta(hours=30), 8, nodes=1, usd_per_hour=55.04)
    proj = project(tmp_path, hybrid_config(old, ledger=[]))
    before, before_state = config_of(proj), burst_state(proj)
    driver = FakeDriver(proj, fail_up=StackLocked("locked"))
    use_driver(monkeypatch, driver)
    allow(quota, 768)
    result = invoke(proj, "open", "--gpus", "8", "--hours", "4")
    assert result.exit_code == 1
    new, _back = driver.written()
    assert len(new["ledger"]) == 1 and new["window"]["start"] == "2026-11-20T12:00:00Z"  # booked, and the new one
    back = burst_state(proj)
    assert back is not None and back.generation == 2  # the pending state, then the old one recorded over it
    assert replace(back, generation=0) == before_state  # put back as a whole
    assert config_of(proj) == before


# -- close, reconcile, status -------------------------------------------------------------------------------


def test_close_stops_admission_now_and_keeps_the_nodes_for_the_grace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`close` does not skip the grace: the window's expiry moves to now (AWS's clock), admission stops, running
    work keeps its nodes until expiry + burst.grace_minutes (30 in the example); nothing is booked yet."""
    monkeypatch.setattr(burst_cli, "clock", lambda region: NOW)
    proj = project(tmp_path, hybrid_config(window(NOW - dt.timedelta(hours=3), 8, nodes=2, usd_per_hour=55.04)))
    driver = FakeDriver(proj)
    use_driver(monkeypatch, driver)
    result = invoke(proj, "close")
    assert result.exit_code == 0, result.output
    assert driver.names() == ["read_state", "select", "write_state", "up", "write_state"]
    assert driver.calls[3][1] == burst_targets(proj, STACK)
    after = config_of(proj)
    assert after["window"] is not None and after["window"].expires == NOW and after["ledger"] == []
    assert recorded(proj)["as_of"] == "2026-11-20T12:00:00Z"  # the program judges it draining from here
    assert "running work has until 2026-11-20 12:30 UTC" in result.output

    # Inside the grace, reconcile has nothing to change: the draining phase is recorded already.
    monkeypatch.setattr(burst_cli, "clock", lambda region: NOW + dt.timedelta(minutes=20))
    again = FakeDriver(proj)
    use_driver(monkeypatch, again)
    result = invoke(proj, "reconcile")
    assert result.exit_code == 0, result.output
    assert "admission stopped" in result.output and again.names() == ["read_state"]

    # After the grace and the stop lag, reconcile books the window until its backstop time and removes it.
    monkeypatch.setattr(burst_cli, "clock", lambda region: NOW + dt.timedelta(minutes=50))
    use_driver(monkeypatch, FakeDriver(proj))
    result = invoke(proj, "reconcile")
    assert result.exit_code == 0, result.output
    after = config_of(proj)
    (entry,) = after["ledger"]
    assert after["window"] is None
    assert (entry.nodes, entry.end) == (2, NOW + dt.timedelta(minutes=46))  # expiry + grace + stop lag
    assert entry.closed_by == "gpufleet burst reconcile" + AT_CAP  # nothing to measure in this account
    assert entry.usd == round(55.04 * 2 * (3.5 + 16 / 60), 2)


def test_close_of_a_window_past_its_grace_books_and_removes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(burst_cli, "clock", lambda region: NOW)
    proj = project(tmp_path, hybrid_config(window(NOW - dt.timedelta(hours=10), 8, nodes=2, usd_per_hour=55.04)))
    driver = FakeDriver(proj)
    use_driver(monkeypatch, driver)
    result = invoke(proj, "close")
    assert result.exit_code == 0, result.output
    after = config_of(proj)
    (entry,) = after["ledger"]
    backstop = NOW - dt.timedelta(hours=2) + dt.timedelta(minutes=46)  # expiry + grace + lag, not when close ran
    assert after["window"] is None and (entry.end, entry.closed_by) == (backstop, "gpufleet burst close" + AT_CAP)


def test_reconcile_closes_only_an_expired_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(burst_cli, "clock", lambda region: NOW)
    (tmp_path / "a").mkdir()
    open_proj = project(tmp_path / "a", hybrid_config(window(NOW - dt.timedelta(hours=1), 8)))
    driver = reader(monkeypatch, open_proj)
    result = invoke(open_proj, "reconcile")
    assert result.exit_code == 0 and "is open until 2026-11-20 19:00 UTC; nothing to do" in result.output
    assert changed_nothing(driver)

    expired = window(NOW - dt.timedelta(hours=10), 8, nodes=1, usd_per_hour=55.04)
    (tmp_path / "b").mkdir()
    proj = project(tmp_path / "b", hybrid_config(expired))
    driver = FakeDriver(proj)
    use_driver(monkeypatch, driver)
    result = invoke(proj, "reconcile")
    assert result.exit_code == 0, result.output
    pending, settled = driver.written()
    assert pending["ledger"] == settled["ledger"]  # one booking, never rewritten
    assert pending["ledger"][0]["end"] == "2026-11-20T10:46:00Z"  # until the backstop: expiry + grace + lag
    (entry,) = config_of(proj)["ledger"]
    # Booked from the start until the backstop stopped the capacity (expiry + grace + stop lag), however late
    # reconcile runs.
    assert entry.end == NOW - dt.timedelta(hours=1, minutes=14)
    assert (entry.usd, entry.closed_by) == (round(55.04 * (8.5 + 16 / 60), 2), "gpufleet burst reconcile" + AT_CAP)


def test_reconcile_keeps_an_expired_window_through_its_grace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After expiry the cloud queues stop admitting, but running work keeps its nodes for burst.grace_minutes
    (30 in the example): reconcile records the draining phase and runs `up` without removing the window or booking
    it; after the grace it closes."""
    draining = window(NOW - dt.timedelta(hours=8, minutes=10), 8, nodes=1, usd_per_hour=55.04)  # expired 10 min ago
    proj = project(tmp_path, hybrid_config(draining))
    driver = FakeDriver(proj)
    use_driver(monkeypatch, driver)
    monkeypatch.setattr(burst_cli, "clock", lambda region: NOW)
    result = invoke(proj, "reconcile")
    assert result.exit_code == 0, result.output
    assert "admission stopped" in result.output and "burst.grace_minutes" in result.output
    assert "up" in driver.names() and recorded(proj)["as_of"] == "2026-11-20T12:00:00Z"
    assert config_of(proj)["window"] is not None and config_of(proj)["ledger"] == []

    later = NOW + dt.timedelta(minutes=40)  # 50 min after expiry: the grace and the stop lag are over
    monkeypatch.setattr(burst_cli, "clock", lambda region: later)
    result = invoke(proj, "reconcile")
    assert result.exit_code == 0, result.output
    assert config_of(proj)["window"] is None and len(config_of(proj)["ledger"]) == 1


def test_reconcile_creates_a_missing_state_stack_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """deploy.yml runs reconcile before its `up`: the program's StackReference needs the state stack to exist."""
    monkeypatch.setattr(burst_cli, "clock", lambda region: NOW)
    proj = project(tmp_path, hybrid_config(), recorded=False)
    driver = FakeDriver(proj)
    use_driver(monkeypatch, driver)
    result = invoke(proj, "reconcile")
    assert result.exit_code == 0, result.output
    assert driver.names() == ["read_state", "write_state"]  # no `up`: nothing the estate reads changed
    assert burst_state(proj) is not None and config_of(proj)["window"] is None


def test_reconcile_of_an_estate_without_burst_policy_is_a_no_op(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = project(tmp_path, non_hybrid_config(), recorded=False)
    use_driver(monkeypatch, None)
    result = invoke(proj, "reconcile")
    assert result.exit_code == 0, result.output
    assert "has no burst policy; nothing to reconcile" in result.output


def test_status_shows_time_left_spend_and_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(burst_cli, "clock", lambda region: NOW)
    past = {"pool": "burst-h100", "instance_type": "p5.48xlarge", "nodes": 1, "start": "2026-11-02T00:00:00Z",
            "end": "2026-11-02T10:00:00Z", "usd": 550.4}  # fmt: skip
    proj = project(tmp_path, hybrid_config(window(NOW - dt.timedelta(hours=2), 8, nodes=1, usd_per_hour=55.04), [past]))
    driver = reader(monkeypatch, proj)
    result = invoke(proj, "status")
    assert changed_nothing(driver)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "time left │ 6.0 h" in text
    assert "spent this month │ $660.48" in text  # 550.40 booked + 2 h of the open window
    # 6 h + the grace + the stop lag of 1 x $55.04/h
    assert "committed (worst case, to expiry + grace + stop lag) │ $372.44" in text
    assert "budget left │ $18,967.08" in text


def non_hybrid_config() -> dict[str, Any]:
    config = hybrid_config()
    config["gpufleet:estate"].pop("burst")
    for site in config["gpufleet:estate"]["sites"]:
        for pool in site.get("node_pools", []):
            pool.pop("burst", None)
    return config


def test_status_of_a_non_hybrid_stack_is_bad_input(tmp_path: Path) -> None:
    proj = project(tmp_path, non_hybrid_config(), recorded=False)
    result = invoke(proj, "status")
    assert result.exit_code == 2
    assert "only hybrid estates burst" in result.output


# -- the real AutomationDriver ------------------------------------------------------------------------------

SHIM = """#!/bin/sh
echo "$@" >> "{log}"
case "$*" in
  version) echo "v3.200.0" ;;
  *"stack select --stack test-burst"*) echo "error: no stack named 'test-burst' found" >&2; exit 255 ;;
  *" up "*|up\\ *) echo "error: the stack is currently locked by 1 lock(s)" >&2; exit 255 ;;
esac
exit 0
"""


def test_automation_driver_records_the_state_through_an_inline_up_and_stops_when_it_fails(
    tmp_path: Path, quota: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The state stack `test-burst` does not exist: reading it finds nothing, recording creates it and runs its
    `up` (an inline program, pulumi/automation/_local_workspace.py); when that `up` fails, the estate's `up`
    never runs and nothing changed."""
    proj = project(tmp_path, hybrid_config(), recorded=False)
    log = tmp_path / "argv.log"
    shim = tmp_path / "pulumi-root"
    (shim / "bin").mkdir(parents=True)
    (shim / "bin" / "pulumi").write_text(SHIM.format(log=log))
    (shim / "bin" / "pulumi").chmod(stat.S_IRWXU)
    monkeypatch.setattr(burst_cli, "make_driver", lambda p: AutomationDriver(p, pulumi_root=shim))
    allow(quota, 768)
    result = invoke(proj, "open", "--gpus", "8", "--hours", "4")
    assert result.exit_code == 1, result.output
    assert "the stack is locked by another update" in result.output and "nothing was changed" in result.output
    argv = [a for a in log.read_text().splitlines() if a != "version"]
    (up,) = [a for a in argv if " up " in f" {a} "]
    assert argv == [
        "--non-interactive stack select --stack test-burst",  # read: no state stack yet
        "--non-interactive stack select --stack test",  # the estate stack, for its `up`
        "--non-interactive stack select --stack test-burst",
        "--non-interactive stack init test-burst",
        up,
    ]
    assert up.split()[:4] == ["--non-interactive", "up", "--yes", "--skip-preview"]
    assert "--exec-kind auto.inline" in up and up.endswith("--stack test-burst")


def test_no_pulumi_cli_is_a_clear_error_and_changes_nothing(
    tmp_path: Path, quota: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = project(tmp_path, hybrid_config(), recorded=False)
    before = stack_file(proj).read_bytes()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(burst_cli, "make_driver", AutomationDriver)
    allow(quota, 768)
    result = invoke(proj, "open", "--gpus", "8", "--hours", "4")
    assert result.exit_code == 1
    assert "the Pulumi CLI was not found" in result.output and "nothing was changed" in result.output
    assert stack_file(proj).read_bytes() == before


def test_no_capacity_during_up_says_so_and_keeps_the_window_for_close(
    tmp_path: Path, quota: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = project(tmp_path, hybrid_config())
    before = config_of(proj)
    failure = DriverError("pulumi up failed: ... InsufficientInstanceCapacity: We currently do not have sufficient "
                          "p5.48xlarge capacity in the Availability Zone you requested (us-east-1a) [409]")  # fmt: skip
    use_driver(monkeypatch, FakeDriver(proj, fail_up=failure))
    allow(quota, 768)
    result = invoke(proj, "open", "--gpus", "8", "--hours", "4")
    assert result.exit_code == 1
    assert "(us-east-1a) [409]" in result.output  # printed as text, not read as markup
    assert "EC2 has no capacity for this instance type in the AZ right now" in result.output
    # The update started and may have grown the node group: the window stays so that close books and shrinks it.
    assert "gpufleet burst close" in result.output
    after = config_of(proj)
    assert after["window"] is not None and after["window"].nodes == 1 and before["window"] is None
