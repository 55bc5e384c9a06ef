"""The program body: read the estate from stack config, validate it, build the Estate.

`__main__.py` calls `run()`. Bad input raises `pulumi.RunError`, which the engine prints as one message
without a traceback; `gpufleet` catches the same `SpecError` before it ever runs the program.
"""

from __future__ import annotations

import datetime as dt
import functools
import sys
from pathlib import Path

import pulumi

from components.estate import Estate, EstateArgs
from components.model.load import (
    ESTATE_KEY,
    WINDOW_KEY,
    SpecError,
    check_window,
    parse_estate,
    parse_window,
    stack_path,
)
from components.model.secrets import missing_message, missing_secrets


def _stack_file() -> str:
    """The stack file this run reads, as the user would find it: the project directory is the program's own."""
    program = getattr(sys.modules.get("__main__"), "__file__", None)
    if program is None:
        return f"Pulumi.{pulumi.get_stack()}.yaml"
    try:
        return str(stack_path(Path(program).parent, pulumi.get_stack()))
    except SpecError:
        return str(Path(program).parent / f"Pulumi.{pulumi.get_stack()}.yaml")


def run() -> Estate:
    config = pulumi.Config()  # the project's own keys (secrets)
    estate_config = pulumi.Config(ESTATE_KEY.split(":", 1)[0])  # gpufleet:*, whatever the project is named
    source = _stack_file()
    try:
        spec = parse_estate(estate_config.get_object(ESTATE_KEY.split(":", 1)[1]), source)
        window = parse_window(estate_config.get_object(WINDOW_KEY.split(":", 1)[1]), source)
        check_window(spec, window, source)
    except SpecError as err:
        raise pulumi.RunError(str(err)) from None

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

    estate = Estate(
        spec.metadata.name,
        EstateArgs(spec=spec, window=window, now=dt.datetime.now(dt.UTC), secret=secret),
    )
    pulumi.export("estate", spec.metadata.name)
    pulumi.export("environment", spec.metadata.environment)
    pulumi.export("sites", {s.name: s.kind for s in spec.sites})
    return estate
