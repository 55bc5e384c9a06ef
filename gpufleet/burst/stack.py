"""The burst state of a stack file (window, ledger) and how `gpufleet burst` changes it: config, then `pulumi up`.

A window (pool, nodes, instance type, AZ, start, expiry) lives in stack config under `gpufleet:burstWindow`;
past windows are booked in `gpufleet:burstLedger` (pool, instance type, nodes, start, end, usd). Both are
plain config values in `stacks/Pulumi.<stack>.yaml`, so every burst is reviewable and reproducible, and the
Pulumi program alone decides sizes. If `up` cannot start, every key that was touched is put back; once it has
started, the config is kept (see `apply_and_up`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from components.model.load import read_stack
from components.model.spec import BurstLedgerEntry, BurstWindow, EstateSpec
from gpufleet.burst.driver import DriverError, NotStarted, OutputSink, StackDriver, SummaryUnread
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
    return StackState(*sf.contents())


def window_json(window: BurstWindow) -> str:
    return json.dumps(window.model_dump(mode="json", exclude_none=True), separators=(",", ":"))


def ledger_json(ledger: list[BurstLedgerEntry]) -> str:
    return json.dumps([e.model_dump(mode="json") for e in ledger], separators=(",", ":"))


Change = tuple[str, str | None]  # (config key, new JSON value or None to remove)


INTERRUPTED = 130  # 128 + SIGINT: what a shell reports for a command stopped by Ctrl-C


def apply_and_up(
    driver: StackDriver, stack: str, changes: list[Change], on_output: OutputSink, *, if_stopped: str
) -> dict[str, int]:
    """Write `changes`, then run `pulumi up`.

    Until the update starts (selecting the stack, reading or writing config, a locked stack, no CLI) a failure or
    Ctrl-C puts every touched key back: nothing changed. Once the update has started the config is kept as written,
    whatever happens (a failure, Ctrl-C, an unreadable summary): the update may already have changed resources (a
    node group scaled), and only the config makes the next `up` converge and `close`/`reconcile` book and shrink
    them. `if_stopped` tells the user how to finish or undo from there.
    """
    try:
        driver.select(stack)
        before = {key: driver.get_config(key) for key, _ in changes}
    except DriverError as err:
        raise BurstError(f"{err}; nothing was changed") from None
    except KeyboardInterrupt:
        raise BurstError("interrupted; nothing was changed", INTERRUPTED) from None
    try:
        for key, value in changes:
            if value is None:
                if before[key] is not None:
                    driver.remove_config(key)
            else:
                driver.set_config(key, value)
    except DriverError as err:
        raise _restored(driver, before, str(err), 1) from None
    except KeyboardInterrupt:
        raise _restored(driver, before, "interrupted before pulumi up started", INTERRUPTED) from None
    try:
        return driver.up(on_output)
    except NotStarted as err:
        raise _restored(driver, before, str(err), 1) from None
    except SummaryUnread as err:
        on_output(f"{err}; the update itself succeeded and the stack config stays as written")
        return {}
    except DriverError as err:
        raise BurstError(f"{err}{_capacity_hint(str(err))}\n{_kept(before, if_stopped)}") from None
    except KeyboardInterrupt:
        raise BurstError(f"interrupted during pulumi up\n{_kept(before, if_stopped)}", INTERRUPTED) from None


def _kept(before: dict[str, str | None], if_stopped: str) -> str:
    return (
        f"the stack config keeps what was written ({', '.join(before)}): the update may have changed resources "
        f"before it stopped, and the config is what the next `up` converges to. {if_stopped} (if the stack stays "
        "locked, run `pulumi cancel` first)"
    )


def _restored(driver: StackDriver, before: dict[str, str | None], reason: str, exit_code: int) -> BurstError:
    problems = _restore(driver, before)
    if problems:
        return BurstError(
            f"{reason}\nrestoring the previous stack config also failed ({'; '.join(problems)}); "
            f"check {', '.join(before)} in the stack file by hand",
            exit_code,
        )
    return BurstError(f"{reason}\nthe stack config was restored to what it was before", exit_code)


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
