"""The burst state of a stack file (window, ledger) and how `gpufleet burst` changes it: config, then `pulumi up`.

A window (pool, nodes, instance type, AZ, start, expiry) lives in stack config under `gpufleet:burstWindow`;
past windows are booked in `gpufleet:burstLedger` (pool, instance type, nodes, start, end, usd). Both are
plain config values in `stacks/Pulumi.<stack>.yaml`, so every burst is reviewable and reproducible, and the
Pulumi program alone decides sizes. If `up` fails, every key that was touched is put back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from components.model.load import check_window, read_stack
from components.model.spec import BurstLedgerEntry, BurstWindow, EstateSpec
from gpufleet.burst.driver import DriverError, OutputSink, StackDriver
from gpufleet.burst.errors import BurstError


@dataclass
class StackState:
    """The burst-relevant part of a stack file."""

    spec: EstateSpec
    window: BurstWindow | None
    ledger: list[BurstLedgerEntry]


def load_state(project_dir: Path, stack: str) -> StackState:
    sf = read_stack(project_dir, stack)
    spec = sf.estate()
    if spec.burst is None:
        raise BurstError(f"{sf.path}: the estate has no burst policy (`burst:`); only hybrid estates burst", 2)
    window = sf.window()
    check_window(spec, window, str(sf.path))
    return StackState(spec, window, sf.ledger())


def window_json(window: BurstWindow) -> str:
    return json.dumps(window.model_dump(mode="json", exclude_none=True), separators=(",", ":"))


def ledger_json(ledger: list[BurstLedgerEntry]) -> str:
    return json.dumps([e.model_dump(mode="json") for e in ledger], separators=(",", ":"))


Change = tuple[str, str | None]  # (config key, new JSON value or None to remove)


def apply_and_up(driver: StackDriver, stack: str, changes: list[Change], on_output: OutputSink) -> dict[str, int]:
    """Write `changes` and run `pulumi up`; on any failure put every touched key back as it was, then raise."""
    try:
        driver.select(stack)
        before = {key: driver.get_config(key) for key, _ in changes}
    except DriverError as err:
        raise BurstError(f"{err}; nothing was changed") from None
    try:
        for key, value in changes:
            if value is None:
                if before[key] is not None:
                    driver.remove_config(key)
            else:
                driver.set_config(key, value)
        return driver.up(on_output)
    except DriverError as err:
        restore_problems = _restore(driver, before)
        detail = _capacity_hint(str(err))
        if restore_problems:
            raise BurstError(
                f"{err}{detail}\nrestoring the previous stack config also failed ({'; '.join(restore_problems)}); "
                f"check {', '.join(before)} in the stack file by hand"
            ) from None
        raise BurstError(f"{err}{detail}\nthe stack config was restored to what it was before") from None


def _restore(driver: StackDriver, before: dict[str, str | None]) -> list[str]:
    problems = []
    for key, value in before.items():
        try:
            if value is None:
                if driver.get_config(key) is not None:
                    driver.remove_config(key)
            else:
                driver.set_config(key, value)
        except DriverError as err:
            problems.append(f"{key}: {err}")
    return problems


def _capacity_hint(text: str) -> str:
    if "InsufficientInstanceCapacity" in text or "insufficient capacity" in text.lower():
        return (
            "\nEC2 has no capacity for this instance type in the AZ right now: try fewer GPUs, later, or a "
            "capacity reservation"
        )
    return ""
