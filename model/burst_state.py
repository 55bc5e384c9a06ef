"""The burst state stack: the outputs that record a burst window and its ledger.

- A window lives in a small state stack `<stack>-burst` in the estate's project and backend. `gpufleet burst`
  writes it; the estate program reads it through a StackReference
  (https://www.pulumi.com/docs/iac/concepts/stacks/#stackreferences), so every `up` sees the same window.
- `as_of` is when, by AWS's clock (gpufleet/burst/aws.py), the command that wrote the state judged the window.
  The program judges at the later of `as_of` and its own time (`model.burst.judged_at`), so a slow clock cannot
  reopen what a command closed.
- `gpufleet burst reconcile` books windows; the backstop, not reconcile, stops the capacity.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from model.spec import BurstLedgerEntry, BurstWindow

STATE_STACK_SUFFIX = "-burst"
# The `format` output; a reader refuses a state written by a newer gpufleet. Format 2 adds `generation`: a
# gpufleet that writes format 1 ignores it and would overwrite a newer state, so it must refuse format 2.
STATE_FORMAT = 2
READABLE_FORMATS = (1, 2)  # format 1 reads as generation 0


def state_stack_name(stack: str) -> str:
    """The state stack of `stack`: same project and backend, its name + `-burst`."""
    return f"{stack}{STATE_STACK_SUFFIX}"


def state_reference(organization: str, project: str, stack: str) -> str:
    """The fully qualified name a StackReference reads the state stack by: `<organization>/<project>/<stack>`
    (Pulumi Cloud: the organization; a self-managed backend: the literal `organization`)."""
    return f"{organization}/{project}/{state_stack_name(stack)}"


@dataclass(frozen=True)
class BurstState:
    """The state stack's outputs: the window (or none), the ledger of past windows, `as_of` (see the module docstring) and
    `settled` (False from the moment a burst command wrote a new state until its `up` of the estate finished:
    `reconcile` runs that `up` again) and `generation` (one more on every write, so a write can name the state it
    read and be refused over a newer one: gpufleet/burst/driver.py)."""

    window: BurstWindow | None
    ledger: tuple[BurstLedgerEntry, ...]
    as_of: dt.datetime
    settled: bool = True
    generation: int = 0

    def outputs(self) -> dict[str, object]:
        """The stack outputs (plain JSON values) that record this state."""
        out: dict[str, object] = {
            "format": STATE_FORMAT,
            "as_of": self.as_of.astimezone(dt.UTC).isoformat().replace("+00:00", "Z"),
            "settled": self.settled,
            "generation": self.generation,
            "ledger": [e.model_dump(mode="json") for e in self.ledger],
        }
        if self.window is not None:
            out["window"] = self.window.model_dump(mode="json", exclude_none=True)
        return out
