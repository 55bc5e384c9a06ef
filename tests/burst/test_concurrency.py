"""Two burst commands at once on one state stack, in the fault harness (tests/burst/helpers.FakeDriver models the
backend's update lock and the state's generation): exactly one wins, the other exits non-zero with a clear message
and changes nothing, and no ledger entry is lost or rewritten (gpufleet/burst/stack.py, `apply_and_up`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pulumi
import pytest
from botocore.stub import Stubber
from pulumi.automation import OutputValue
from typer.testing import CliRunner

from gpufleet.burst.driver import AutomationDriver, StateMoved
from gpufleet.cli import burst as burst_cli
from gpufleet.cli.app import app
from tests.burst.helpers import NOW, STACK, FakeDriver, allow, burst_state, hybrid_config, project, recorded, window

runner = CliRunner()
MOVED = "the burst state changed while this command ran"


def invoke(proj: Path, *args: str) -> Any:
    return runner.invoke(app, ["burst", *args, "--stack", STACK, "--project", str(proj)])


def drivers(monkeypatch: pytest.MonkeyPatch, *made: FakeDriver) -> None:
    """The first command gets the first driver, a command its hook runs the next."""
    queue = iter(made)
    monkeypatch.setattr(burst_cli, "make_driver", lambda p: next(queue))


def meanwhile(proj: Path, *args: str) -> tuple[Callable[[], None], list[Any]]:
    """A hook that runs another command to its end, and where its result lands."""
    results: list[Any] = []
    return lambda: results.append(invoke(proj, *args)), results


def test_two_concurrent_opens_one_wins_and_the_other_changes_nothing(
    tmp_path: Path, quota: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B opens (8 GPUs) between A's read and A's write: A (16 GPUs) read generation 0, the state holds 2, so A's
    write is refused and B's window stays, never replaced by A's."""
    allow(quota, 768, 2)
    proj = project(tmp_path, hybrid_config())
    hook, other = meanwhile(proj, "open", "--gpus", "8", "--hours", "4")
    first = FakeDriver(proj, after_read=hook)
    drivers(monkeypatch, first, FakeDriver(proj))
    result = invoke(proj, "open", "--gpus", "16", "--hours", "4")
    (b,) = other
    assert b.exit_code == 0, b.output
    assert result.exit_code == 1, result.output
    assert MOVED in result.output and "nothing was written" in result.output and "Traceback" not in result.output
    assert "up" not in first.names()  # the loser never ran the estate's `up`
    state = burst_state(proj)
    assert state is not None and state.window is not None and state.window.nodes == 1  # B's
    assert state.generation == 2 and state.settled


def test_a_stale_open_cannot_rewrite_the_booking_a_reconcile_made(
    tmp_path: Path, quota: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A window 2 x p5.48xlarge expired hours ago. Reconcile books and removes it while an `open` that read it is
    checking AWS: the open is refused, so the reconcile's one ledger entry is neither lost nor booked twice."""
    allow(quota, 768, 2)
    expired = window(NOW - dt.timedelta(hours=12), 8, nodes=2, usd_per_hour=55.04)
    proj = project(tmp_path, hybrid_config(expired, ledger=[]))
    hook, other = meanwhile(proj, "reconcile")
    drivers(monkeypatch, FakeDriver(proj, after_read=hook), FakeDriver(proj))
    result = invoke(proj, "open", "--gpus", "8", "--hours", "4")
    (reconciled,) = other
    assert reconciled.exit_code == 0, reconciled.output
    assert result.exit_code == 1 and MOVED in result.output
    state = burst_state(proj)
    assert state is not None and state.window is None
    (entry,) = state.ledger
    assert entry.usd == round(2 * 55.04 * (8.5 + 16 / 60), 2) and entry.closed_by.startswith("gpufleet burst reconcile")


def test_a_reconcile_that_read_before_an_open_wrote_is_refused(
    tmp_path: Path, quota: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    allow(quota, 768, 2)
    expired = window(NOW - dt.timedelta(hours=12), 8, nodes=2, usd_per_hour=55.04)
    proj = project(tmp_path, hybrid_config(expired, ledger=[]))
    hook, other = meanwhile(proj, "open", "--gpus", "8", "--hours", "4")
    drivers(monkeypatch, FakeDriver(proj, after_read=hook), FakeDriver(proj))
    result = invoke(proj, "reconcile")
    (opened,) = other
    assert opened.exit_code == 0, opened.output
    assert result.exit_code == 1 and MOVED in result.output
    state = burst_state(proj)
    assert state is not None and state.window is not None and state.window.start == NOW  # the open's window
    (entry,) = state.ledger  # the expired window, booked once, by the open
    assert entry.usd == round(2 * 55.04 * (8.5 + 16 / 60), 2) and entry.closed_by.startswith("gpufleet burst open")


def test_a_write_while_another_holds_the_lock_fails_as_locked_and_changes_nothing(
    tmp_path: Path, quota: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An `extend` whose write comes while `close` holds the state stack's update lock: the backend refuses it."""
    allow(quota, 768, 2)
    proj = project(tmp_path, hybrid_config(window(NOW - dt.timedelta(hours=1), 4, nodes=1, usd_per_hour=55.04)))
    hook, other = meanwhile(proj, "extend", "--hours", "1")
    drivers(monkeypatch, FakeDriver(proj, while_locked=hook), FakeDriver(proj))
    result = invoke(proj, "close")
    (extended,) = other
    assert result.exit_code == 0, result.output
    assert extended.exit_code == 1 and "locked by another update" in extended.output
    assert "nothing was changed" in extended.output
    state = burst_state(proj)
    assert state is not None and state.window is not None and state.window.expires == NOW  # closed, not extended
    assert recorded(proj)["generation"] == 2


class _Workspace:
    def __init__(self, outputs: dict[str, Any]) -> None:
        self.outputs = outputs

    def stack_outputs(self, name: str) -> dict[str, Any]:
        return {k: OutputValue(value=v, secret=False) for k, v in self.outputs.items()}


@pytest.mark.parametrize(("held", "moved"), [(4, False), (5, True)])
def test_the_automation_driver_compares_inside_the_state_stacks_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held: int, moved: bool
) -> None:
    """The inline program reads the state stack's outputs while its `up` holds the lock: over generation 4 it
    exports the new outputs; over 5 it exports the ones it found, unchanged, and the write is refused."""
    current = {"format": 2, "generation": held, "ledger": []}
    new = {"format": 2, "generation": 5, "ledger": [], "window": {"pool": "burst-h100"}}
    fake = SimpleNamespace(name="test-burst", workspace=_Workspace(current))
    exported: dict[str, Any] = {}
    driver = AutomationDriver(tmp_path)

    def state_stack(stack: str, program: Callable[[], None], create: bool) -> Any:
        fake.program = program
        return fake

    def up(stack: Any, doing: str, on_output: Any) -> dict[str, int]:
        stack.program()  # what the engine does during the update
        return {}

    monkeypatch.setattr(driver, "_state_stack", state_stack)
    monkeypatch.setattr(driver, "_up", up)
    monkeypatch.setattr(pulumi, "export", lambda key, value: exported.__setitem__(key, value))
    if moved:
        with pytest.raises(StateMoved, match="it read generation 4, the state stack now holds generation 5"):
            driver.write_state(STACK, new, print, expect=4)
        assert exported == current
    else:
        driver.write_state(STACK, new, print, expect=4)
        assert exported == new
