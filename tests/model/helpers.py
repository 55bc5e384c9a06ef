"""Example estates parsed through the loader, optionally changed first (the way a user edits a stack file)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from model.load import parse_estate
from model.spec import EstateSpec
from tests.conftest import example_estate

Mutate = Callable[[dict[str, Any]], None]


def example_spec(stack: str, mutate: Mutate | None = None) -> EstateSpec:
    """The example stack's estate with `mutate` applied, parsed as `stacks/Pulumi.<stack>.yaml` (SpecError if bad)."""
    raw = example_estate(stack)
    if mutate is not None:
        mutate(raw)
    return parse_estate(raw, f"stacks/Pulumi.{stack}.yaml")
