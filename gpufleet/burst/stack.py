"""The burst state of a stack (window, ledger) and how `gpufleet burst` changes it: the state stack, then `up`.

- The window and the ledger of past windows are the outputs of the state stack `<stack>-burst`, in the estate's
  backend (model/burst.py, "window state").
- The estate program reads them through a StackReference, so every `up` sees the same window.
- A burst command records the new state, then runs a targeted `up` of the estate. If that `up` fails to start,
  the previous state is recorded again. Once it started, the new state is kept, marked unsettled, so
  `reconcile` runs it again (`apply_and_up`).
- A stack file's keys `gpufleet:burstWindow` / `gpufleet:burstLedger` are moved into the state stack once, by
  `gpufleet burst migrate`. Offline (preview, cost, review) they stand for the state stack as a what-if.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from pathlib import Path

from gpufleet.burst.driver import DriverError, NotStarted, OutputSink, StackDriver, StateMoved, SummaryUnread
from gpufleet.burst.errors import BurstError
from gpufleet.review.stack_file import judged
from model.burst_spend import within_budget
from model.burst_state import BurstState, state_stack_name
from model.load import LEDGER_KEY, WINDOW_KEY, SpecError, check_state, parse_state, read_stack
from model.spec import BurstLedgerEntry, BurstWindow, EstateSpec

NEVER = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)  # `as_of` of a state never recorded
EMPTY = BurstState(None, (), NEVER)


@dataclass
class StackState:
    """The estate (from the stack file) and its burst state (from the state stack)."""

    spec: EstateSpec
    state: BurstState
    recorded: bool  # the state stack exists
    recorded_expiry: dt.datetime | None = None  # the window's expiry as recorded, before a lowered budget moved it

    @property
    def window(self) -> BurstWindow | None:
        return self.state.window

    def at(self, now: dt.datetime) -> StackState:
        """The state as the budget allows it at `now` (model.burst_spend.within_budget): a budget lowered since the
        window opened moves its expiry earlier, never before `now`. `recorded_expiry` keeps the recorded one."""
        w = self.state.window
        if w is None:
            return self
        moved = within_budget(self.spec, w, self.state.ledger, now)
        return replace(self, state=replace(self.state, window=moved), recorded_expiry=w.expires)

    @property
    def ledger(self) -> list[BurstLedgerEntry]:
        return list(self.state.ledger)


def load_spec(project_dir: Path, stack: str) -> EstateSpec:
    """The estate, its stack file judged as every command judges it (a window or ledger key there included)."""
    sf = read_stack(project_dir, stack)
    spec, _, _ = judged(sf)
    if spec.burst is None:
        raise BurstError(f"{sf.path}: the estate has no burst policy (`burst:`); only hybrid estates burst", 2)
    return spec


def legacy_keys(project_dir: Path, stack: str) -> list[str]:
    """The stack file's keys that held burst state before the state stack."""
    config = read_stack(project_dir, stack).config
    return [k for k in (WINDOW_KEY, LEDGER_KEY) if config.get(k) is not None]


def load_state(project_dir: Path, stack: str, driver: StackDriver) -> StackState:
    """The estate and the burst state its state stack records (empty when it does not exist yet)."""
    spec = load_spec(project_dir, stack)
    source = f"stack {state_stack_name(stack)}"
    try:
        outputs = driver.read_state(stack)
    except DriverError as err:
        raise BurstError(f"{err}; nothing was changed") from None
    except KeyboardInterrupt:
        raise BurstError("interrupted; nothing was changed", INTERRUPTED) from None
    if outputs is None:
        old = legacy_keys(project_dir, stack)
        if old:
            path = read_stack(project_dir, stack).path
            raise BurstError(
                f"{path}: config.{old[0]}: burst state is kept in the state stack {state_stack_name(stack)} now, "
                f"which does not exist yet; move it there with `gpufleet burst migrate --stack {stack}`",
                2,
            )
        return StackState(spec, EMPTY, recorded=False)
    try:
        state = parse_state(outputs, source) or EMPTY
        check_state(spec, state, source)
    except SpecError as err:
        raise BurstError(str(err), 2) from None
    return StackState(spec, state, recorded=True)


INTERRUPTED = 130  # 128 + SIGINT: what a shell reports for a command stopped by Ctrl-C


def record_state(driver: StackDriver, stack: str, state: BurstState, on_output: OutputSink, *, read: int) -> None:
    """Record `state` as generation `read` + 1, only over the generation `read` the command read (BurstError,
    nothing changed, otherwise)."""
    try:
        driver.write_state(stack, replace(state, generation=read + 1).outputs(), on_output, read)
    except DriverError as err:
        raise BurstError(f"{err}\nthe state stack keeps its previous outputs; nothing was changed") from None


def apply_and_up(
    driver: StackDriver,
    stack: str,
    before: BurstState,
    after: BurstState,
    on_output: OutputSink,
    *,
    targets: list[str] | None,
    if_stopped: str,
) -> dict[str, int]:
    """Record `after` in the state stack, then run `pulumi up` of the estate (only `targets` and their dependents).

    `before` is the state as the command read it. Every write names the generation it follows: the first
    `before.generation`, each later one the write before it. So a command that read a state another command has
    since written changes nothing (`StateMoved`), and no ledger entry is lost or rewritten.

    Recording is an `up` of the state stack: if it fails, its outputs are what they were, so nothing changed; if
    Ctrl-C stops it, `before` is recorded again. Until the estate's `up` starts (a locked stack, no CLI, Ctrl-C)
    `before` is recorded again too. Once it has started the new state is kept whatever happens (a failure, Ctrl-C,
    an unreadable summary), marked unsettled: the update may already have changed resources, and only that state
    makes the next `up` converge and `reconcile` run it again. After the `up`, the state is recorded settled.
    """
    try:
        driver.select(stack)
    except DriverError as err:
        raise BurstError(f"{err}; nothing was changed") from None
    except KeyboardInterrupt:
        raise BurstError("interrupted; nothing was changed", INTERRUPTED) from None
    read = before.generation
    try:
        record_state(driver, stack, replace(after, settled=False), on_output, read=read)
    except KeyboardInterrupt:
        raise _restored(
            driver, stack, before, "interrupted while recording the burst state", INTERRUPTED, on_output
        ) from None
    try:
        summary = driver.up(on_output, targets)
    except NotStarted as err:
        raise _restored(driver, stack, before, str(err), 1, on_output) from None
    except SummaryUnread as err:
        on_output(f"{err}; the update itself succeeded and the burst state stays as recorded")
        summary = {}
    except DriverError as err:
        raise BurstError(f"{err}{_capacity_hint(str(err))}\n{_kept(stack, if_stopped)}") from None
    except KeyboardInterrupt:
        raise BurstError(f"interrupted during pulumi up\n{_kept(stack, if_stopped)}", INTERRUPTED) from None
    try:
        record_state(driver, stack, replace(after, settled=True), on_output, read=read + 1)
    except (BurstError, KeyboardInterrupt) as err:
        on_output(
            f"the update finished, but marking the burst state settled failed ({err or 'interrupted'}); "
            f"`gpufleet burst reconcile --stack {stack}` runs the update again and settles it"
        )
    return summary


def _kept(stack: str, if_stopped: str) -> str:
    return (
        f"the state stack {state_stack_name(stack)} keeps the new burst state, marked unsettled: the update may "
        "have changed resources before it stopped, and that state is what the next `up` converges to. "
        f"{if_stopped} (if the stack stays locked, run `pulumi cancel` first)"
    )


def _restored(
    driver: StackDriver, stack: str, before: BurstState, reason: str, exit_code: int, on_output: OutputSink
) -> BurstError:
    """Record `before` again over the pending state this command wrote (generation `before` + 1). If that write
    never landed, the state stack still holds `before` and there is nothing to restore."""
    pending = before.generation + 1
    try:
        driver.write_state(stack, replace(before, generation=pending + 1).outputs(), on_output, pending)
    except StateMoved as err:
        if err.found != before.generation:
            return BurstError(f"{reason}\n{err}", exit_code)
    except (DriverError, KeyboardInterrupt) as err:
        return BurstError(
            f"{reason}\nrecording the previous burst state again also failed ({err or 'interrupted'}); "
            f"check the outputs of stack {state_stack_name(stack)} (`pulumi stack output -s "
            f"{state_stack_name(stack)}`)",
            exit_code,
        )
    return BurstError(f"{reason}\nthe burst state was restored to what it was before", exit_code)


def _capacity_hint(text: str) -> str:
    if "InsufficientInstanceCapacity" in text or "insufficient capacity" in text.lower():
        return (
            "\nEC2 has no capacity for this instance type in the AZ right now: try fewer GPUs, later, or a "
            "capacity reservation"
        )
    return ""
