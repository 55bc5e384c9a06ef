"""Shared helpers for the burst tests: hybrid configs with windows and ledgers, a fake stack driver."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from botocore.stub import Stubber

from gpufleet.burst.driver import DriverError, OutputSink, StackLocked, StateMoved, generation
from model.burst_state import BurstState, state_stack_name
from model.load import LEDGER_KEY, WINDOW_KEY, parse_ledger, parse_state, parse_window
from tests.conftest import example_config, write_project

NOW = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.UTC)
STACK = "test"
P_ON_DEMAND = "L-417A185B"  # Service Quotas: EC2 Running On-Demand P instances (vCPUs)


def allow(stub: Stubber, vcpus: float, times: int = 1) -> None:
    """Service Quotas answers the P on-demand quota `times` times (one per `open`) with `vcpus`."""
    for _ in range(times):
        stub.add_response(
            "get_service_quota",
            {"Quota": {"ServiceCode": "ec2", "QuotaCode": P_ON_DEMAND, "Value": vcpus}},
            {"ServiceCode": "ec2", "QuotaCode": P_ON_DEMAND},
        )


def window(start: dt.datetime, hours: float, nodes: int = 2, **over: Any) -> dict[str, Any]:
    w: dict[str, Any] = {
        "pool": "burst-h100",
        "nodes": nodes,
        "instance_type": "p5.48xlarge",
        "availability_zone": "us-east-1a",
        "start": start.isoformat(),
        "expires": (start + dt.timedelta(hours=hours)).isoformat(),
    }
    w.update(over)
    return w


def hybrid_config(
    window_value: dict[str, Any] | None = None, ledger: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    config = example_config("hybrid")
    if window_value is not None:
        config[WINDOW_KEY] = window_value
    if ledger is not None:
        config[LEDGER_KEY] = ledger
    return config


def project(tmp: Path, config: dict[str, Any], *, recorded: bool = True) -> Path:
    """A project whose stack file holds the estate; a window or ledger in `config` is recorded in the fake
    backend's state stack instead (as `gpufleet burst` records it, at the window's start), unless `recorded` is
    False: then the stack file keeps them (the layout before the state stack) and no state stack exists."""
    config = dict(config)
    raw_window, raw_ledger = config.pop(WINDOW_KEY, None), config.pop(LEDGER_KEY, None)
    if not recorded:
        config.update({k: v for k, v in ((WINDOW_KEY, raw_window), (LEDGER_KEY, raw_ledger)) if v is not None})
    proj = write_project(tmp, config, STACK)
    if recorded:
        w = parse_window(raw_window, "test")
        as_of = w.start if w is not None else NOW - dt.timedelta(days=1)
        record(proj, BurstState(w, tuple(parse_ledger(raw_ledger, "test")), as_of).outputs())
    return proj


def backend(project_dir: Path) -> Path:
    """Where the fake driver keeps the state stack's outputs (a stand-in for the Pulumi backend)."""
    return project_dir / ".fake-backend" / f"{state_stack_name(STACK)}.json"


def record(project_dir: Path, outputs: dict[str, Any]) -> None:
    backend(project_dir).parent.mkdir(exist_ok=True)
    backend(project_dir).write_text(json.dumps(outputs))


def recorded(project_dir: Path) -> dict[str, Any] | None:
    path = backend(project_dir)
    return json.loads(path.read_text()) if path.exists() else None


def burst_state(project_dir: Path) -> BurstState | None:
    """The state the fake backend's state stack records."""
    return parse_state(recorded(project_dir), "fake backend")


def stack_file(project_dir: Path) -> Path:
    return project_dir / "stacks" / f"Pulumi.{STACK}.yaml"


Failure = DriverError | KeyboardInterrupt


class FakeDriver:
    """A StackDriver over a state stack kept in a JSON file (tests/burst/helpers.backend) and the stack file.

    Records every call; `fail_up` makes `up` raise that error (or Ctrl-C's KeyboardInterrupt) after the state was
    written; `fail_write` makes the n-th `write_state` raise it (before it records anything, like a failed `up`
    of the state stack, whose outputs stay as they were).

    Writes behave as the real driver's: each holds the backend's update lock (a lock file) for the whole read,
    compare and write, and is refused, changing nothing, over another generation than the one it names. Two hooks
    model other commands running at the same time: `after_read` runs once after this driver's first read (another
    command runs in between this one's read and its write), `while_locked` runs once inside this driver's first
    write, while it holds the lock.
    """

    def __init__(
        self,
        project_dir: Path,
        fail_up: Failure | None = None,
        fail_write: tuple[int, BaseException] | None = None,
        after_read: Callable[[], None] | None = None,
        while_locked: Callable[[], None] | None = None,
    ) -> None:
        self.project_dir = project_dir
        self.path = stack_file(project_dir)
        self.fail_up = fail_up
        self.fail_write = fail_write
        self.after_read = after_read
        self.while_locked = while_locked
        self.calls: list[tuple[Any, ...]] = []

    def select(self, stack: str) -> None:
        self.calls.append(("select", stack))

    def read_state(self, stack: str) -> dict[str, Any] | None:
        self.calls.append(("read_state", stack))
        outputs = recorded(self.project_dir)
        hook, self.after_read = self.after_read, None
        if hook is not None:
            hook()
        return outputs

    def write_state(self, stack: str, outputs: dict[str, Any], on_output: OutputSink, expect: int) -> None:
        self.calls.append(("write_state", stack, outputs))
        if self.fail_write is not None and self.fail_write[0] == self.names().count("write_state"):
            raise self.fail_write[1]
        lock = backend(self.project_dir).with_suffix(".lock")
        if lock.exists():
            raise StackLocked("recording the burst state: the stack is locked by another update; wait for it")
        lock.parent.mkdir(exist_ok=True)
        lock.touch()
        try:
            hook, self.while_locked = self.while_locked, None
            if hook is not None:
                hook()
            found = generation(recorded(self.project_dir))
            if found != expect:
                raise StateMoved(expect, found)
            record(self.project_dir, outputs)
        finally:
            lock.unlink()

    def get_config(self, key: str) -> str | None:
        self.calls.append(("get_config", key))
        value = yaml.safe_load(self.path.read_text())["config"].get(key)
        return value if value is None or isinstance(value, str) else json.dumps(value, default=str)

    def set_config(self, key: str, value: str) -> None:
        self.calls.append(("set_config", key, value))

    def remove_config(self, key: str) -> None:
        self.calls.append(("remove_config", key))

    def preview(self, on_output: OutputSink) -> dict[str, int]:
        self.calls.append(("preview",))
        return {"same": 1}

    def up(self, on_output: OutputSink, targets: list[str] | None = None) -> dict[str, int]:
        self.calls.append(("up", targets))
        on_output("Updating (test)")
        if self.fail_up is not None:
            raise self.fail_up
        return {"update": 3, "same": 190}

    def outputs(self) -> dict[str, Any]:
        self.calls.append(("outputs",))
        return {}

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]

    def written(self) -> list[dict[str, Any]]:
        return [c[2] for c in self.calls if c[0] == "write_state"]
