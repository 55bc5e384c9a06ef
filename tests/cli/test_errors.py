"""The one error handler: every command goes through it; known errors become messages and exit codes, anything
else is reported as a bug with exit 70 (never 1 or 2: a bug must not pass for a finding or bad input)."""

from __future__ import annotations

import contextlib
import logging
import signal

import pulumi
import pytest
import typer
from typer.testing import CliRunner

from gpufleet.burst.errors import BurstError
from gpufleet.cli import app as cli
from gpufleet.cli.errors import CommandError, user_errors
from gpufleet.engine.synth import SynthError
from gpufleet.review.diff.plans import DiffError
from model.catalog import CatalogError
from model.load import SpecError


def test_every_command_is_registered_through_the_one_handler() -> None:
    typers = [cli.app, cli.charts_app, cli.catalog_app, cli.burst_app]
    callbacks = [c.callback for t in typers for c in t.registered_commands]
    assert len(callbacks) == len(cli.COMMANDS) == 22
    for callback, (_, _, command) in zip(callbacks, cli.COMMANDS, strict=True):
        assert getattr(callback, "__wrapped__", None) is command


def run(error: Exception) -> object:
    def command() -> None:
        raise error

    app = typer.Typer()
    app.command()(user_errors(command))
    return CliRunner().invoke(app, [])


@pytest.mark.parametrize(
    ("error", "code", "lines"),
    [
        (SpecError(["f.yaml: a.b: wrong", "f.yaml: c: missing"]), 2, ["error: f.yaml: a.b: wrong", "error: f.yaml: c: missing"]),
        (CommandError("--at: 'x' is not an ISO time"), 2, ["error: --at: 'x' is not an ISO time"]),
        (BurstError("quota [L-1] too small\nrequest more", 1), 1, ["error: quota [L-1] too small", "  request more"]),
        (BurstError("no burst policy", 2), 2, ["error: no burst policy"]),
        (DiffError("git rev-parse nope: unknown revision"), 2, ["error: git rev-parse nope: unknown revision"]),
        (SynthError("invoke x cannot be answered"), 2, ["error: the program could not be synthesized offline: invoke x cannot be answered"]),
        (pulumi.RunError("a resource failed"), 2, ["error: a resource failed"]),
        (CatalogError("'no price for p5 in mars-1'"), 1, ["error: no price for p5 in mars-1"]),
    ],
)  # fmt: skip
def test_known_errors_print_one_line_each_and_exit_with_their_code(
    error: Exception, code: int, lines: list[str]
) -> None:
    result = run(error)
    assert result.exit_code == code  # type: ignore[attr-defined]
    assert result.stderr.splitlines() == lines  # type: ignore[attr-defined]
    assert "Traceback" not in result.output  # type: ignore[attr-defined]


def test_anything_else_is_an_internal_error_with_its_own_exit_code() -> None:
    result = run(KeyError("a bug"))
    assert result.exit_code == 70  # type: ignore[attr-defined]
    lines = result.stderr.splitlines()  # type: ignore[attr-defined]
    assert lines[0] == "internal error: KeyError: 'a bug'"
    assert "this is a bug in gpufleet" in lines[1] and "report it" in lines[1]
    assert "Traceback" not in result.output  # type: ignore[attr-defined]


def test_an_interrupt_exits_130() -> None:
    result = run(KeyboardInterrupt())
    assert result.exit_code == 130  # type: ignore[attr-defined]
    assert "Traceback" not in result.output  # type: ignore[attr-defined]


@pytest.mark.parametrize("text", ["[/]", "[/x]", "pattern '^([-a-z0-9]*[a-z0-9])?$'", "[bold]x[/bold]"])
def test_messages_are_printed_as_text_not_markup(text: str) -> None:
    """Rich would raise MarkupError on `[/]` and eat `[-a-z0-9]` out of a pattern; messages quote user input."""
    result = run(SpecError([f"f.yaml: a: {text}"]))
    assert result.exit_code == 2  # type: ignore[attr-defined]
    assert result.stderr.splitlines() == [f"error: f.yaml: a: {text}"]  # type: ignore[attr-defined]


def _after_ctrl_c(then: Exception | None) -> object:
    """A command in which Ctrl-C (a real SIGINT) lands in library code that swallows it, then `then` is raised
    (None: the command ends normally), as the Pulumi SDK's event-loop pumping and an import it cut short do."""

    def command() -> None:
        with contextlib.suppress(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        if then is not None:
            raise then

    app = typer.Typer()
    app.command()(user_errors(command))
    return CliRunner().invoke(app, [])


def test_whatever_a_command_ends_with_after_ctrl_c_is_the_interrupt_in_one_line() -> None:
    before = signal.getsignal(signal.SIGINT)
    # Seen in `gpufleet preview`: "internal error: AttributeError: module 'pulumi_aws.eks' has no attribute
    # 'NodeGroup'" and exit 70 (an import cut short), or exit 0 on what was synthesized so far.
    for then in (AttributeError("module 'pulumi_aws.eks' has no attribute 'NodeGroup'"), IndexError("x"), None):
        result = _after_ctrl_c(then)
        assert result.exit_code == 130, result.output  # type: ignore[attr-defined]
        assert result.stderr.splitlines() == ["interrupted"]  # type: ignore[attr-defined]
    # A burst command reports Ctrl-C itself, saying what it kept; that report stands.
    result = _after_ctrl_c(BurstError("interrupted; nothing was changed", 130))
    assert result.exit_code == 130 and result.stderr.splitlines() == ["error: interrupted; nothing was changed"]  # type: ignore[attr-defined]
    # The handler is the command's only: afterwards SIGINT and asyncio's logger are as they were.
    assert signal.getsignal(signal.SIGINT) is before and not logging.getLogger("asyncio").disabled
