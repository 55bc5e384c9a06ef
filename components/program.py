"""The program body: read the estate from stack config, validate it, build the Estate.

- Bad input raises `pulumi.RunError`: one message, no traceback. `gpufleet` catches the same `SpecError` first.
- A hybrid estate's burst window lives in the state stack `<stack>-burst`, read through a StackReference, so an
  `up` from any machine sees the window `gpufleet burst` last recorded, within the stack file's burst budget. It
  is judged at the later of the state's `as_of` and the time the program runs (model.clock), so a plain `up` of
  an expired window closes it.
- The estate is built inside that reference's `apply`, and a preview still shows every resource (see `run`).
"""

from __future__ import annotations

import datetime as dt
import functools
import sys
from collections.abc import Callable
from pathlib import Path

import pulumi

from components.estate import Estate, EstateArgs
from model import clock
from model.burst import judged_at
from model.burst_spend import within_budget
from model.burst_state import state_reference, state_stack_name
from model.load import (
    ESTATE_KEY,
    LEDGER_KEY,
    WINDOW_KEY,
    SpecError,
    check_state,
    parse_estate,
    parse_state,
    stack_path,
)
from model.secrets import missing_message, missing_secrets
from model.spec import BurstWindow, EstateSpec

# Without a window nothing is judged by time (every phase is idle), so any fixed moment serves.
NO_WINDOW_TIME = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)


def _stack_file() -> str:
    """The stack file this run reads, as the user would find it: the project directory is the program's own."""
    program = getattr(sys.modules.get("__main__"), "__file__", None)
    if program is None:
        return f"Pulumi.{pulumi.get_stack()}.yaml"
    try:
        return str(stack_path(Path(program).parent, pulumi.get_stack()))
    except SpecError:
        return str(Path(program).parent / f"Pulumi.{pulumi.get_stack()}.yaml")


def run() -> None:
    config = pulumi.Config()  # the project's own keys (secrets)
    estate_config = pulumi.Config(ESTATE_KEY.split(":", 1)[0])  # gpufleet:*, whatever the project is named
    source = _stack_file()
    try:
        # Prices are the review's concern: a line without one never stops an `up` (gpufleet's commands refuse it).
        spec = parse_estate(estate_config.get_object(ESTATE_KEY.split(":", 1)[1]), source, priced=False)
    except SpecError as err:
        raise pulumi.RunError(str(err)) from None
    for key in (WINDOW_KEY, LEDGER_KEY):
        if estate_config.get(key.split(":", 1)[1]) is not None:
            pulumi.log.warn(
                f"{source}: config.{key}: not read by `up`: the burst window and ledger live in the state stack "
                f"{state_stack_name(pulumi.get_stack())}; `gpufleet burst migrate -s {pulumi.get_stack()}` moves "
                "them there, then delete the key from the stack file"
            )

    missing = missing_secrets(spec, lambda key: config.get_secret(key) is not None)
    if missing:
        raise pulumi.RunError(missing_message(source, pulumi.get_project(), pulumi.get_stack(), missing))

    @functools.cache  # one Output per secret, shared by every server and site that uses it
    def secret(key: str) -> pulumi.Output[str]:
        value = config.get_secret(key)
        if value is None:
            raise pulumi.RunError(
                f"{source}: config.{pulumi.get_project()}:{key}: required secret is missing; set it with "
                f"`pulumi config set --secret {key} -s {pulumi.get_stack()}`"
            )
        return value

    def build(window: BurstWindow | None, now: dt.datetime) -> Estate:
        return Estate(spec.metadata.name, EstateArgs(spec=spec, window=window, now=now, secret=secret))

    pulumi.export("estate", spec.metadata.name)
    pulumi.export("environment", spec.metadata.environment)
    pulumi.export("sites", {s.name: s.kind for s in spec.sites})
    if spec.burst is None:
        build(None, NO_WINDOW_TIME)
        return
    # Pulumi shows resources made inside an `apply` in a preview only when the value is known
    # (https://www.pulumi.com/docs/iac/concepts/inputs-outputs/apply/). A StackReference's outputs are: the engine's
    # built-in provider reads them from the backend in a preview as in an update (pulumi/pulumi
    # pkg/resource/deploy/builtins.go: `Read` and `Create` call `readStackReference` whatever `req.Preview` says).
    ref = pulumi.StackReference(state_reference(pulumi.get_organization(), pulumi.get_project(), pulumi.get_stack()))
    ref.outputs.apply(_with_window(spec, build))


def _with_window(
    spec: EstateSpec, build: Callable[[BurstWindow | None, dt.datetime], Estate]
) -> Callable[[dict[str, object] | None], None]:
    """Build the estate from the state stack's outputs: its window judged at the later of its `as_of` and now."""

    def apply(outputs: dict[str, object] | None) -> None:
        source = f"stack {state_stack_name(pulumi.get_stack())}"
        try:
            state = parse_state(outputs, source)
            check_state(spec, state, source)
        except SpecError as err:
            raise pulumi.RunError(str(err)) from None
        if state is None or state.window is None:
            build(None, NO_WINDOW_TIME)
        else:  # a budget lowered since the window opened moves its expiry earlier
            judged = judged_at(state.as_of, clock.now())
            build(within_budget(spec, state.window, state.ledger, judged), judged)

    return apply
