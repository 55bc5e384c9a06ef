"""The second window, the day after the first: what the last backstop left behind must not decide what the next
window can do (the R30 review's defects 1 and 2; extend's in tests/burst/test_migrate_offline.py)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from botocore.stub import Stubber
from typer.testing import CliRunner

from gpufleet.burst.aws import Aws
from gpufleet.burst.driver import AutomationDriver
from gpufleet.cli import burst as burst_cli
from gpufleet.cli.app import app
from tests.burst.helpers import NOW, STACK, FakeDriver, hybrid_config, project, recorded, window

runner = CliRunner()
P_ON_DEMAND = "L-417A185B"


@pytest.fixture
def aws(moto_aws: Aws, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    stub = Stubber(moto_aws.quotas)
    stub.activate()
    stub.add_response(
        "get_service_quota",
        {"Quota": {"ServiceCode": "ec2", "QuotaCode": P_ON_DEMAND, "Value": 768.0}},
        {"ServiceCode": "ec2", "QuotaCode": P_ON_DEMAND},
    )
    monkeypatch.setattr(burst_cli, "make_aws", lambda region: moto_aws)
    monkeypatch.setattr(burst_cli, "clock", lambda region: NOW)
    yield stub
    stub.deactivate()


def invoke(proj: Path, *args: str) -> Any:
    return runner.invoke(app, ["burst", *args, "--stack", STACK, "--project", str(proj)])


class RecordingStack:
    """A `pulumi.automation.Stack` that records what `up` was asked; `up` ends by reading the outputs, as
    `Stack.up` does (pulumi/automation/_stack.py)."""

    def __init__(self) -> None:
        self.asked: dict[str, Any] = {}

    def outputs(self) -> dict[str, Any]:
        return {}

    def up(self, on_output: Any = None, **kwargs: Any) -> Any:
        self.asked = kwargs
        self.outputs()
        return SimpleNamespace(summary=SimpleNamespace(resource_changes={"update": 2}))


def test_a_burst_up_refreshes_its_targets_so_the_last_backstop_cannot_hold_the_next_window(tmp_path: Path) -> None:
    """Two windows of one size on two days synthesize the same node group, Cohort and ClusterQueues. Pulumi diffs
    against its state: without a refresh, the HoldAndDrain and the 0/0/1 bounds the first window's backstop left
    would stay through the second. `Stack.up(refresh=..., target=..., target_dependents=...)` is the installed
    SDK's signature (pulumi/automation/_stack.py)."""
    driver = AutomationDriver(tmp_path)
    stack = RecordingStack()
    driver._stack = stack
    assert driver.up(print, ["urn:a", "urn:b"]) == {"update": 2}
    assert stack.asked == {"refresh": True, "target": ["urn:a", "urn:b"], "target_dependents": True}
    driver.up(print)
    assert stack.asked == {"refresh": True}


def test_a_smaller_window_cannot_open_over_a_bigger_one_still_draining(
    tmp_path: Path, aws: Stubber, monkeypatch: pytest.MonkeyPatch
) -> None:
    """4 nodes closed at 11:50 drain until 12:20 (stopped by 12:36); a 1-node window at 12:00 would keep them running (Kueue evicts
    admitted work only by stopPolicy, apis/kueue/v1beta2/clusterqueue_types.go at versions.KUEUE), its own stops
    replacing theirs, priced and stopped as 1 node. Refused, nothing written; 4 nodes (the pool's max) may open."""
    closed = window(NOW - dt.timedelta(hours=3, minutes=10), 3, nodes=4, usd_per_hour=55.04)
    proj = project(tmp_path, hybrid_config(closed, ledger=[]))
    before = recorded(proj)
    driver = FakeDriver(proj)
    monkeypatch.setattr(burst_cli, "make_driver", lambda p: driver)
    result = invoke(proj, "open", "--gpus", "8", "--hours", "4")
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert "is draining until 2026-11-20 12:36 UTC with up to 4 nodes, and a window of 1 cannot hold them" in text
    assert "at least 4 nodes" in text
    assert recorded(proj) == before and "write_state" not in driver.names()
