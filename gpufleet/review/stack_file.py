"""One judgement of a stack file, for every command that reads one.

`StackFile.contents()` holds what the model can judge: the estate's schema and rules, the burst window and ledger,
and the secrets the program reads. Enforcement overrides name policy rules, which only the packs know, so they are
judged here. validate, preview, check, cost, size, verify and burst all ask `judged`, so a file one of them
refuses, every one refuses.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from model.load import StackFile
from model.spec import BurstLedgerEntry, BurstWindow, EstateSpec


def policy_check() -> ModuleType | None:
    """gpufleet.review.check, or None when this tree has none (a tree trimmed of its policy packs)."""
    try:
        return importlib.import_module("gpufleet.review.check")
    except ModuleNotFoundError as err:
        if err.name != "gpufleet.review.check":
            raise  # the module is there but something it needs is not
        return None


def judged(stack_file: StackFile) -> tuple[EstateSpec, BurstWindow | None, list[BurstLedgerEntry]]:
    """Estate, window and ledger of a stack file judged as every command judges it (SpecError if not)."""
    spec, window, ledger = stack_file.contents()
    check = policy_check()
    if check is not None:
        check.check_overrides(spec, stack_file)
    return spec, window, ledger
