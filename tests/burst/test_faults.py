"""Every way `gpufleet burst` can be stopped or fail part-way, under moto and the fake driver (tests/burst/helpers):
what the state stack records afterwards, what is booked, the exit code, and that no traceback reaches the user.

The rule under test (gpufleet/burst/stack.py, `apply_and_up`): a failed `up` of the state stack leaves its outputs
as they were; until the estate's `pulumi up` starts, any failure or Ctrl-C records the previous state again; once
it has started, the new state is kept (unsettled), because the update may already have scaled the node group and
only that state lets the next `up`, `close` or `reconcile` shrink and book it.
"""

from __future__ import annotations

import datetime as dt
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.stub import Stubber
from typer.testing import CliRunner

from gpufleet.burst.aws import Aws
from gpufleet.burst.driver import AutomationDriver, DriverError, StackDriver
from gpufleet.cli import burst as burst_cli
from gpufleet.cli.app import app
from tests.burst.helpers import (
    NOW,
    STACK,
    FakeDriver,
    burst_state,
    hybrid_config,
    project,
    record,
    recorded,
    window,
)

runner = CliRunner()
P_ON_DEMAND = "L-417A185B"


def invoke(proj: Path, *args: str) -> Any:
    return runner.invoke(app, ["burst", *args, "--stack", STACK, "--project", str(proj)])


def use_driver(monkeypatch: pytest.MonkeyPatch, driver: StackDriver | None) -> None:
    def make(project_dir: Path) -> StackDriver:
        assert driver is not None, "the command must not touch the stack"
        return driver

    monkeypatch.setattr(burst_cli, "make_driver", make)


def state(proj: Path) -> dict[str, Any]:
    s = burst_state(proj)
    assert s is not None
    return {"window": s.window, "ledger": list(s.ledger)}


@pytest.fixture
def aws(moto_aws: Aws, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    """The CLI's AWS is moto, whose EC2 answers carry `Date: <NOW>` (AWS's clock); Service Quotas is stubbed.

    The runner's own clock is left alone: it reads the real date, days after NOW, like a laptop whose clock runs
    fast. Every command must judge windows by AWS's clock only.
    """

    def aws_date(parsed: dict[str, Any], **_: Any) -> None:
        parsed["ResponseMetadata"]["HTTPHeaders"]["date"] = NOW.strftime("%a, %d %b %Y %H:%M:%S GMT")

    moto_aws.ec2.meta.events.register("after-call.ec2.DescribeAvailabilityZones", aws_date)
    stub = Stubber(moto_aws.quotas)
    stub.activate()
    monkeypatch.setattr(burst_cli, "make_aws", lambda region: moto_aws)
    yield stub
    stub.deactivate()
    moto_aws.ec2.meta.events.unregister("after-call.ec2.DescribeAvailabilityZones", aws_date)


def allow(stub: Stubber, vcpus: float) -> None:
    stub.add_response(
        "get_service_quota",
        {"Quota": {"ServiceCode": "ec2", "QuotaCode": P_ON_DEMAND, "Value": vcpus}},
        {"ServiceCode": "ec2", "QuotaCode": P_ON_DEMAND},
    )


# -- Ctrl-C -------------------------------------------------------------------------------------------------


def test_ctrl_c_during_up_exits_130_without_traceback_and_keeps_the_window(
    tmp_path: Path, aws: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = project(tmp_path, hybrid_config())
    use_driver(monkeypatch, FakeDriver(proj, fail_up=KeyboardInterrupt()))
    allow(aws, 768)
    result = invoke(proj, "open", "--gpus", "8", "--hours", "4")
    assert result.exit_code == 130, result.output
    assert isinstance(result.exception, SystemExit) and "Traceback" not in result.output  # an exit, not a crash
    assert "interrupted during pulumi up" in result.output
    assert "keeps the new burst state, marked unsettled" in result.output and "gpufleet burst close" in result.output
    w = state(proj)["window"]
    assert w is not None and w.start == NOW  # kept, so `close` or the next `up` settles what the update did
    assert recorded(proj)["settled"] is False


def test_ctrl_c_while_recording_the_state_restores_it_and_exits_130(
    tmp_path: Path, aws: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    expired = window(NOW - dt.timedelta(hours=30), 8, nodes=1, usd_per_hour=55.04)
    proj = project(tmp_path, hybrid_config(expired, ledger=[]))
    before = recorded(proj)
    driver = FakeDriver(proj, fail_write=(1, KeyboardInterrupt()))  # Ctrl-C during the state stack's `up`
    use_driver(monkeypatch, driver)
    allow(aws, 768)
    result = invoke(proj, "open", "--gpus", "8", "--hours", "4")
    assert result.exit_code == 130, result.output
    assert "interrupted while recording the burst state" in result.output
    assert "the burst state was restored to what it was before" in result.output
    assert "up" not in driver.names()
    assert recorded(proj) == before


def test_failed_up_of_the_state_stack_changes_nothing(
    tmp_path: Path, aws: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = project(tmp_path, hybrid_config())
    before = recorded(proj)
    failure = DriverError("recording the burst state (pulumi up of the state stack) failed: backend unreachable")
    driver = FakeDriver(proj, fail_write=(1, failure))
    use_driver(monkeypatch, driver)
    allow(aws, 768)
    result = invoke(proj, "open", "--gpus", "8", "--hours", "4")
    assert result.exit_code == 1, result.output
    assert "backend unreachable" in result.output and "nothing was changed" in result.output
    assert driver.names() == ["read_state", "select", "write_state"]  # the estate's `up` never ran
    assert recorded(proj) == before


def test_estate_up_failing_after_the_state_was_recorded_is_repaired_by_reconcile(
    tmp_path: Path, aws: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The state says "open, unsettled"; the estate may or may not have changed. Reconcile runs the same targeted
    `up` again and records the state settled."""
    proj = project(tmp_path, hybrid_config())
    use_driver(monkeypatch, FakeDriver(proj, fail_up=DriverError("pulumi up failed: connection reset")))
    allow(aws, 768)
    result = invoke(proj, "open", "--gpus", "8", "--hours", "4")
    assert result.exit_code == 1 and recorded(proj)["settled"] is False
    opened = recorded(proj)

    repair = FakeDriver(proj)
    use_driver(monkeypatch, repair)
    result = invoke(proj, "reconcile")
    assert result.exit_code == 0, result.output
    assert "had not finished; ran it again" in result.output
    assert repair.names() == ["read_state", "select", "write_state", "up", "write_state"]
    assert recorded(proj) == {**opened, "settled": True, "generation": 3}  # the same window, now settled


# -- up finished, or failed part-way ------------------------------------------------------------------------

EVENTLESS_UP = """#!/bin/sh
echo "$@" >> "{log}"
case "$*" in
  version) echo "v3.200.0" ;;
  *"stack select --stack test-burst"*) echo "error: no stack named 'test-burst' found" >&2; exit 255 ;;
esac
exit 0
"""


def shim(tmp_path: Path, script: str) -> tuple[Path, Path]:
    log = tmp_path / "argv.log"
    root = tmp_path / "pulumi-root"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "pulumi").write_text(script.format(log=log))
    (root / "bin" / "pulumi").chmod(stat.S_IRWXU)
    return root, log


def test_up_that_succeeded_but_whose_summary_cannot_be_read_keeps_the_state(
    tmp_path: Path, aws: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pulumi up` exits 0 but leaves no summary event (pulumi/automation/_stack.py reads it from the event log):
    the update happened, so the window recorded before it must stay."""
    proj = project(tmp_path, hybrid_config(), recorded=False)
    root, log = shim(tmp_path, EVENTLESS_UP)
    monkeypatch.setattr(burst_cli, "make_driver", lambda p: AutomationDriver(p, pulumi_root=root))
    allow(aws, 768)
    result = invoke(proj, "open", "--gpus", "8", "--hours", "4")
    assert result.exit_code == 0, result.output
    assert "pulumi up finished, but reading its outputs and summary afterwards failed" in result.output
    argv = log.read_text().splitlines()
    ups = [a.rsplit("--stack ", 1)[1] for a in argv if " up " in f" {a} "]
    assert ups == ["test-burst", STACK, "test-burst"]  # recorded, the estate's update, recorded settled
    assert "burst window open: 1 x p5.48xlarge" in result.output


def test_up_failing_after_the_node_group_scaled_keeps_the_window_so_close_books_and_shrinks_it(
    tmp_path: Path, aws: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = project(tmp_path, hybrid_config())
    failure = DriverError(
        "pulumi up failed: aws:eks:NodeGroup hybrid-burst-h100 updated (scaling 0 -> 1)\n"
        "error: kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue research-burst: the server is currently unable"
    )
    use_driver(monkeypatch, FakeDriver(proj, fail_up=failure))
    allow(aws, 768)
    result = invoke(proj, "open", "--gpus", "8", "--hours", "4")
    assert result.exit_code == 1
    assert "the update may have changed resources" in result.output
    kept = state(proj)["window"]
    assert kept is not None and kept.nodes == 1

    closer = FakeDriver(proj)
    use_driver(monkeypatch, closer)
    monkeypatch.setattr(burst_cli, "clock", lambda region: NOW + dt.timedelta(hours=1))
    result = invoke(proj, "close")
    assert result.exit_code == 0, result.output
    assert "up" in closer.names() and state(proj)["window"].expires == NOW + dt.timedelta(hours=1)  # draining

    monkeypatch.setattr(burst_cli, "clock", lambda region: NOW + dt.timedelta(hours=2))  # past the grace
    use_driver(monkeypatch, FakeDriver(proj))
    result = invoke(proj, "reconcile")
    assert result.exit_code == 0, result.output
    after = state(proj)
    assert after["window"] is None  # the `up` that shrinks the node group ran
    (entry,) = after["ledger"]
    assert entry.start == NOW and entry.nodes == 1


# -- windows that start later, and one clock ----------------------------------------------------------------


def test_window_in_the_future_is_scheduled_not_open_and_open_refuses_to_overwrite_it(
    tmp_path: Path, aws: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    later = window(NOW + dt.timedelta(hours=3), 4, nodes=1, usd_per_hour=55.04)
    proj = project(tmp_path, hybrid_config(later, ledger=[]))
    before = state(proj)
    use_driver(monkeypatch, FakeDriver(proj))
    result = invoke(proj, "reconcile")
    assert result.exit_code == 0, result.output
    assert "starts at 2026-11-20 15:00 UTC (until 2026-11-20 19:00 UTC); nothing to do" in result.output

    result = invoke(proj, "open", "--gpus", "8", "--hours", "2")
    assert result.exit_code == 1
    assert "a burst window is scheduled from 2026-11-20 15:00 UTC on pool burst-h100" in result.output
    assert state(proj) == before

    driver = FakeDriver(proj)
    use_driver(monkeypatch, driver)
    result = invoke(proj, "close")
    assert result.exit_code == 0, result.output
    assert "cancelled before its start; nothing booked" in result.output
    assert state(proj) == {"window": None, "ledger": []}


def test_windows_are_judged_by_aws_clock_not_a_fast_runner_clock(
    tmp_path: Path, aws: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runner's clock reads days after AWS's (NOW): open stamps AWS's time, reconcile sees the window open."""
    assert dt.datetime.now(dt.UTC) > NOW + dt.timedelta(hours=4)  # the runner's clock really is ahead here
    proj = project(tmp_path, hybrid_config())
    use_driver(monkeypatch, FakeDriver(proj))
    allow(aws, 768)
    result = invoke(proj, "open", "--gpus", "8", "--hours", "4")
    assert result.exit_code == 0, result.output
    w = state(proj)["window"]
    assert w is not None and (w.start, w.expires) == (NOW, NOW + dt.timedelta(hours=4))

    use_driver(monkeypatch, FakeDriver(proj))
    result = invoke(proj, "reconcile")
    assert result.exit_code == 0, result.output
    assert "is open until 2026-11-20 16:00 UTC; nothing to do" in result.output


def test_close_books_until_the_backstop_time_and_never_rewrites_the_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A window that expired an hour ago (past its 30-minute grace) is booked until expiry + grace + the stop lag,
    when the backstop has stopped its capacity; the entry recorded before the `up` is the one kept after it."""
    proj = project(tmp_path, hybrid_config(window(NOW - dt.timedelta(hours=9), 8, nodes=2, usd_per_hour=55.04)))
    driver = FakeDriver(proj)
    use_driver(monkeypatch, driver)
    times = iter([NOW, NOW + dt.timedelta(minutes=30)])  # AWS's clock when close starts, and after its `up`
    monkeypatch.setattr(burst_cli, "clock", lambda region: next(times))
    result = invoke(proj, "close")
    assert result.exit_code == 0, result.output
    (entry,) = state(proj)["ledger"]
    assert entry.end == NOW - dt.timedelta(minutes=14) and entry.usd == round(55.04 * 2 * (8.5 + 16 / 60), 2)
    pending, settled = driver.written()
    assert "window" not in pending and pending["ledger"] == settled["ledger"]


# -- the Pulumi CLI's own errors ----------------------------------------------------------------------------

NO_STACK = """#!/bin/sh
echo "$@" >> "{log}"
case "$*" in
  version) echo "v3.200.0" ;;
  *"stack select"*) echo "error: no stack named 'test' found" >&2; exit 255 ;;
esac
exit 0
"""


def test_missing_stack_is_one_clear_sentence_not_a_cli_dump(
    tmp_path: Path, aws: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj = project(tmp_path, hybrid_config())
    root, _ = shim(tmp_path, NO_STACK)
    monkeypatch.setattr(burst_cli, "make_driver", lambda p: AutomationDriver(p, pulumi_root=root))
    allow(aws, 768)
    result = invoke(proj, "open", "--gpus", "8", "--hours", "4")
    assert result.exit_code == 1
    assert "the stack does not exist in the Pulumi backend you are logged in to" in result.output
    assert "nothing was changed" in result.output
    assert "code: 255" not in result.output and "stdout:" not in result.output


def test_a_window_recorded_before_its_start_is_opened_by_the_first_reconcile_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The program judges a window at the recorded as_of: one recorded before its start stays shut until a
    reconcile after the start records the open phase (AWS's time) and runs the targeted `up`."""
    later = window(NOW + dt.timedelta(hours=1), 4, nodes=1, usd_per_hour=55.04)
    proj = project(tmp_path, hybrid_config(later))
    record_at = {**recorded(proj), "as_of": "2026-11-20T11:00:00Z"}  # recorded before the start
    record(proj, record_at)
    driver = FakeDriver(proj)
    use_driver(monkeypatch, driver)
    monkeypatch.setattr(burst_cli, "clock", lambda region: NOW + dt.timedelta(hours=2))
    result = invoke(proj, "reconcile")
    assert result.exit_code == 0, result.output
    assert "opened (until 2026-11-20 17:00 UTC)" in result.output and "up" in driver.names()
    assert recorded(proj)["as_of"] == "2026-11-20T14:00:00Z"
