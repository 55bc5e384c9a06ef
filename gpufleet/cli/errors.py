"""The one error handler of every command: user mistakes and refusals become messages and an exit code.

- Exit codes: 0 fine, 1 a mandatory policy violation or a refused burst, 2 bad input, 70 an internal error (a
  bug in gpufleet), 130 interrupted.
- A SpecError prints one line per problem, each naming the file and YAML path. Any other known error prints its
  message (`report`).
- Messages are printed as plain text, never as Rich markup, because they quote user input.
- Nothing prints a traceback. An internal error says it is a bug and names the command to report with.
- Ctrl-C is one line, `interrupted`, and exit 130, wherever it lands (`user_errors`). Library code can swallow
  the interrupt and then wait for ever, so a second Ctrl-C, or WATCHDOG_SECONDS after the first, ends the
  process at once with 130.
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import logging
import os
import shlex
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

import typer
from rich.text import Text

from gpufleet.burst.errors import BurstError
from gpufleet.cli.exit_codes import EXIT_INTERNAL, EXIT_INTERRUPTED
from gpufleet.cli.options import Format, err
from model.catalog import CatalogError
from model.inputs import shown
from model.load import SpecError

F = TypeVar("F", bound=Callable[..., Any])

# After Ctrl-C a command has this long to end by itself: enough to print what it has and unwind, short enough
# that a user never waits on an interrupt that library code swallowed.
WATCHDOG_SECONDS = 5.0
# Commands that clean up after Ctrl-C get no watchdog, since cleanup can take longer (burst records what it kept,
# verify deletes its namespace). A second Ctrl-C still ends them at once.
CLEANS_UP = ("gpufleet.cli.burst", "gpufleet.cli.verify")
_said = threading.Event()  # `interrupted` has been printed


class CommandError(Exception):
    """A command's own refusal of its input (an option it cannot use); the message says what is wrong."""

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def refuse_json_summary(summary: bool, format: Format, whole: str) -> None:
    """--summary shortens text and markdown; JSON always carries the `whole` document (select with jq)."""
    if summary and format is Format.json:
        raise CommandError(f"--summary: only for text and markdown (json carries the whole {whole}; select with jq)")


def _raised_from(e: Exception, module: str, name: str) -> bool:
    """Whether `e` is a `module.name`; False when that module was never imported (nothing of it can have raised)."""
    cls = getattr(sys.modules.get(module), name, None)
    return isinstance(cls, type) and isinstance(e, cls)


def _known(e: Exception) -> tuple[list[str], int] | None:
    """(message lines, exit code) for an error the user can act on; None for anything else."""
    if isinstance(e, SpecError):
        return list(e.problems), 2
    if isinstance(e, CommandError | BurstError):
        return [str(e)], e.exit_code
    if _raised_from(e, "gpufleet.review.diff.plans", "DiffError"):
        return [str(e)], 2
    if _raised_from(e, "gpufleet.showback.prometheus", "PrometheusError"):
        return [str(e)], 2
    if isinstance(e, CatalogError):
        return [str(e).strip("'\"")], 1
    # The engine's errors: checked without importing Pulumi into commands that never synthesize.
    if _raised_from(e, "gpufleet.engine.synth", "SynthError"):
        return [f"the program could not be synthesized offline: {e}"], 2
    if _raised_from(e, "pulumi", "RunError"):
        return [str(e)], 2
    # The environment: a path that cannot be read or written, an output that cannot carry the text.
    if isinstance(e, OSError) and e.filename is not None:
        return [f"{shown(e.filename)}: {e.strerror or e}"], 2
    if isinstance(e, UnicodeEncodeError) and _is_output_encoding(e.encoding):
        return [_encoding_message(e)], 2
    return None


def _is_output_encoding(encoding: str) -> bool:
    streams = (sys.stdout, sys.stderr)
    return codecs.lookup(encoding).name in {
        codecs.lookup(getattr(s, "encoding", None) or "utf-8").name for s in streams
    }


def _encoding_message(e: UnicodeEncodeError) -> str:
    char = e.object[e.start] if e.start < len(e.object) else "?"
    return (
        f"output: the terminal's encoding ({e.encoding}) cannot write U+{ord(char):04X}; set PYTHONIOENCODING=utf-8 "
        "or a UTF-8 locale (LANG=C.UTF-8)"
    )


def output_directory(path: Path, option: str) -> None:
    """Refuse, before any work, an output directory that is a file or cannot be created or written."""
    if path.exists() and not path.is_dir():
        raise CommandError(f"{option} {shown(path)}: is a file; give a directory (it is created if missing)")
    existing = next((p for p in (path, *path.parents) if p.exists()), Path("."))
    if not existing.is_dir():
        raise CommandError(f"{option} {shown(path)}: {shown(existing)} is a file, so no directory can be made in it")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise CommandError(f"{option} {shown(path)}: {shown(existing)} cannot be written (permission denied)")


def report(e: Exception) -> typer.Exit:
    """Print an error and return the Exit to raise: a known one with its code, anything else as a bug (70).
    A message's first line follows `error:`; the rest is indented."""
    known = _known(e)
    if known is None:
        return internal_error(e)
    messages, code = known
    for message in messages:
        lines = message.splitlines() or [""]
        err.print(Text.assemble(("error:", "red"), " ", lines[0]))
        for line in lines[1:]:
            err.print(Text(f"  {line}"))
    return typer.Exit(code)


def internal_error(e: BaseException) -> typer.Exit:
    """A bug, not bad input: say so, with what to report, and exit 70 (never 1 or 2, so CI tells it apart)."""
    where = f"{type(e).__name__}: {e}"
    if len(where) > 300:
        where = where[:300] + "..."
    err.print(Text.assemble(("internal error:", "red"), f" {where}"))
    err.print(
        Text(
            "  this is a bug in gpufleet, not a problem with your input; please report it to the gpufleet "
            f"maintainers with the command (`{shlex.join(['gpufleet', *sys.argv[1:]])[:300]}`) and the "
            "stack or workload file it read"
        )
    )
    return typer.Exit(EXIT_INTERNAL)


def end_interrupted() -> None:
    """End the process now, as Ctrl-C does: flush what was printed, say `interrupted` once, exit 130."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe or stream: nothing more can be said there
            stream.flush()
    if not _said.is_set():
        with contextlib.suppress(OSError):
            os.write(2, b"interrupted\n")
    os._exit(EXIT_INTERRUPTED)


@contextlib.contextmanager
def sigint_recorded(watchdog: float | None = WATCHDOG_SECONDS) -> Iterator[threading.Event]:
    """While the block runs, SIGINT (Ctrl-C) is recorded in the event it yields, then raises KeyboardInterrupt as
    Python's own handler does. Outside the main thread (where no signal handler can be set) nothing is recorded.

    A second SIGINT ends the process at once (`end_interrupted`), and so does the first after `watchdog` seconds
    (None: never) if the block is still running then.

    From the interrupt on, asyncio's logger is off until the block ends: what it would report then (a callback
    that failed, a task destroyed pending, with tracebacks) is the interrupt cutting the offline engine's event
    loop short, which the one `interrupted` line already says.
    """
    seen = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield seen
        return
    asyncio_log = logging.getLogger("asyncio")
    was_disabled = asyncio_log.disabled
    timers: list[threading.Timer] = []

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        if seen.is_set():
            end_interrupted()
        seen.set()
        asyncio_log.disabled = True
        if watchdog is not None:
            timers.append(threading.Timer(watchdog, end_interrupted))
            timers[0].daemon = True
            timers[0].start()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield seen
    finally:
        for timer in timers:
            timer.cancel()
        signal.signal(signal.SIGINT, signal.default_int_handler if previous is None else previous)
        asyncio_log.disabled = was_disabled


def interrupted() -> typer.Exit:
    """The one report of Ctrl-C: a line, exit 130."""
    err.print(Text("interrupted"))
    _said.set()
    return typer.Exit(EXIT_INTERRUPTED)


def user_errors(fn: F) -> F:
    """Wrap a command: known errors become messages and an exit code, never a traceback; after Ctrl-C, whatever
    the command ends with is the interrupt.

    Python raises KeyboardInterrupt at whatever line runs, and library code does not always let it through. The
    Pulumi SDK's nested event-loop pumping can turn it into an IndexError. An import it cuts short leaves a
    half-built module, whose next use raises AttributeError. A swallowed one lets the command finish on a partial
    plan. So the handler records that SIGINT arrived, and an error or even a normal end after it is reported as the
    interrupt, not as a bug or a result. A command that handles Ctrl-C itself (burst, verify) still says what it
    kept or cleaned up.
    """

    watchdog = None if fn.__module__ in CLEANS_UP else WATCHDOG_SECONDS

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with sigint_recorded(watchdog) as sigint:
            try:
                result = fn(*args, **kwargs)
            except (typer.Exit, typer.Abort):
                raise
            except KeyboardInterrupt:
                raise interrupted() from None
            except Exception as e:
                # burst reports Ctrl-C itself, saying what it kept; anything else after it is its by-product
                cut_short = sigint.is_set() and not isinstance(e, BurstError)
                raise (interrupted() if cut_short else report(e)) from None
            if sigint.is_set():  # the interrupt was swallowed on the way: the result may be partial
                raise interrupted()
            return result

    return wrapper  # type: ignore[return-value]
