"""Shared helpers for the burst tests: hybrid configs with windows and ledgers, a fake stack driver."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import yaml

from components.model.load import LEDGER_KEY, WINDOW_KEY
from gpufleet.burst.driver import DriverError, OutputSink
from tests.conftest import example_config, write_project

NOW = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.UTC)
STACK = "test"


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


def project(tmp: Path, config: dict[str, Any]) -> Path:
    return write_project(tmp, config, STACK)


def stack_file(project_dir: Path) -> Path:
    return project_dir / "stacks" / f"Pulumi.{STACK}.yaml"


class FakeDriver:
    """A StackDriver over the stack file on disk, like the Pulumi CLI: structured values are stored as JSON text.

    Records every call; `fail_up` makes `up` raise that error (or Ctrl-C's KeyboardInterrupt) after config was
    written; `fail_set` makes the n-th `set_config` raise it.
    """

    def __init__(
        self,
        project_dir: Path,
        fail_up: DriverError | KeyboardInterrupt | None = None,
        fail_set: tuple[int, BaseException] | None = None,
    ) -> None:
        self.path = stack_file(project_dir)
        self.fail_up = fail_up
        self.fail_set = fail_set
        self.calls: list[tuple[Any, ...]] = []

    def _doc(self) -> dict[str, Any]:
        return yaml.safe_load(self.path.read_text())

    def _write(self, doc: dict[str, Any]) -> None:
        self.path.write_text(yaml.safe_dump(doc, sort_keys=False))

    def select(self, stack: str) -> None:
        self.calls.append(("select", stack))

    def get_config(self, key: str) -> str | None:
        self.calls.append(("get_config", key))
        value = self._doc()["config"].get(key)
        if value is None or isinstance(value, str):
            return value
        return json.dumps(value, default=str)

    def set_config(self, key: str, value: str) -> None:
        self.calls.append(("set_config", key, value))
        if self.fail_set is not None and self.fail_set[0] == self.names().count("set_config"):
            raise self.fail_set[1]
        doc = self._doc()
        doc["config"][key] = value
        self._write(doc)

    def remove_config(self, key: str) -> None:
        self.calls.append(("remove_config", key))
        doc = self._doc()
        doc["config"].pop(key, None)
        self._write(doc)

    def preview(self, on_output: OutputSink) -> dict[str, int]:
        self.calls.append(("preview",))
        return {"same": 1}

    def up(self, on_output: OutputSink) -> dict[str, int]:
        self.calls.append(("up",))
        on_output("Updating (test)")
        if self.fail_up is not None:
            raise self.fail_up
        return {"update": 3, "same": 190}

    def outputs(self) -> dict[str, Any]:
        self.calls.append(("outputs",))
        return {}

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]
