"""The `gpufleet` console script runs one command and exits: no automatic cyclic garbage collection during the
command and none over what it left at interpreter shutdown (`gc.freeze`,
https://docs.python.org/3.11/library/gc.html#gc.freeze: frozen objects are ignored by every future collection).
In-process callers (CliRunner) keep the collector as they had it. Output is the same either way: the preview
snapshots (tests/review/snapshots) and the piped-CLI tests in tests/cli/test_output.py run through both paths.
"""

from __future__ import annotations

import functools
import gc
import os
import random
import signal
import subprocess
import sys
import time
import tomllib

import pytest
from typer.testing import CliRunner

from gpufleet.cli import app as app_module
from gpufleet.cli.errors import WATCHDOG_SECONDS
from tests.conftest import ROOT

# A fresh interpreter runs the app as the console script does (`app()`); the group callback (set_width) runs
# inside the command, before `validate --help` exits. It prints whether the collector was on then, and, after
# the command, whether the collector is on and whether anything was frozen.
_SCRIPT = """
import atexit, gc
from gpufleet.cli import app as m
seen = []
width = m.set_width
m.set_width = lambda w: (seen.append(gc.isenabled()), width(w))
atexit.register(lambda: print(seen, gc.isenabled(), gc.get_freeze_count() > 0))
m.app(["validate", "--help"])
"""


def test_the_console_script_collects_nothing_during_the_command_and_freezes_what_it_left() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[False] False True"


def test_in_process_callers_keep_the_collector(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    width = app_module.set_width
    monkeypatch.setattr(app_module, "set_width", lambda w: (seen.append(gc.isenabled()), width(w)))
    frozen = gc.get_freeze_count()
    result = CliRunner().invoke(app_module.app, ["validate", "--help"])
    assert result.exit_code == 0, result.output
    assert seen == [gc.isenabled()] == [True]
    assert gc.get_freeze_count() == frozen


def test_the_installed_console_script_is_the_process_app() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["gpufleet"] == "gpufleet.cli.main:main"  # which runs gpufleet.cli.app.app
    assert type(app_module.app).__call__ is not type(app_module.catalog_app).__call__


# Ctrl-C in the middle of a synthesis, as a terminal sends it: SIGINT to the process at its Nth registration.
_CTRL_C_AT = """
import os, signal, sys
from gpufleet.engine import synth
from gpufleet.cli import app as m
at, count, registered = int(sys.argv[1]), [0], synth._RecordingMocks.new_resource
def new_resource(self, args):
    count[0] += 1
    if count[0] == at:
        os.kill(os.getpid(), signal.SIGINT)
    return registered(self, args)
synth._RecordingMocks.new_resource = new_resource
m.app(["preview", "-s", "onprem"])
"""


@pytest.mark.parametrize("at", [1, 5])
def test_ctrl_c_during_synthesis_is_one_line_and_exit_130(at: int) -> None:
    # Before: "Task was destroyed but it is pending!" with the task, once per RPC still running, or
    # "Exception in callback ..." with a traceback, then "interrupted".
    done = subprocess.run(
        [sys.executable, "-c", _CTRL_C_AT, str(at)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr) == (130, "interrupted\n")


def test_the_console_script_is_the_entry_that_handles_ctrl_c_during_imports() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["gpufleet"] == "gpufleet.cli.main:main"


# Ctrl-C at seeded moments of a real `gpufleet preview` process, counted from when the entry point has set its
# handler (the child says `ready` then; before it the interpreter itself is starting): while it imports the
# commands, parses its arguments, reads the stack, synthesizes (pulumi_kubernetes half-imported), renders. Each
# answer is the one line and exit 130, or, when the command had already finished, its own exit 0.
_ENTRY = """
import os, signal, sys, time
real = signal.signal
def marked(*args):
    previous = real(*args)
    signal.signal = real
    os.write(1, b"ready\\n")
    return previous
signal.signal = marked
real_exit = os._exit
def leaving(code):
    os.write(1, f"exit at {time.monotonic()}\\n".encode())
    real_exit(code)
os._exit = leaving
from gpufleet.cli import main
sys.argv = ["gpufleet", "preview", "-s", "onprem"]
main.main()
"""
_DELAYS = sorted([0.0, 0.02, *(round(random.Random(29).uniform(0.05, 4.0), 2) for _ in range(6))])


def _started(args: list[str], line: str) -> subprocess.Popen[str]:
    """`python -c ARGS` from the repository, once it has printed `line` (its handlers are in place)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == f"{line}\n"
    return proc


@pytest.mark.parametrize("delay", _DELAYS)
def test_ctrl_c_at_any_moment_of_the_process_is_one_line_and_exit_130(delay: float) -> None:
    # Before: a traceback while importing (the console script imported every command before any handler), an
    # asyncio traceback at shutdown, or exit 70 from a module the interrupt left half-imported.
    # A Ctrl-C that lands as the finished command exits (after its last line of Python, in os._exit) cannot run the
    # handler: then the answer is the command's own, exit 0 with its whole output. The child says when it leaves
    # (`exit at`, on the machine's monotonic clock): a Ctrl-C sent before that, with Python still running, must
    # have been answered. Before, interpreter shutdown reset the handler to the default, and a Ctrl-C then killed
    # the process: exit -2, nothing said.
    proc = _started([_ENTRY], "ready")
    time.sleep(delay)
    finished = proc.poll() is not None
    before = time.monotonic()
    if not finished:
        proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    stdout, stderr = proc.communicate(timeout=60)
    output, _, left = stdout.rpartition("exit at ")
    if finished or proc.returncode == 0:
        assert (proc.returncode, stderr, output) == (0, "", _complete_preview()), stderr
        assert finished or before >= float(left) - 0.05, "a Ctrl-C sent while the command ran was not answered"
    else:
        assert (proc.returncode, stderr) == (130, "interrupted\n")
        assert time.monotonic() - sent < WATCHDOG_SECONDS + 10  # the watchdog's bound, with room for a busy machine


@functools.cache
def _complete_preview() -> str:
    """What the child prints after `ready` when nothing interrupts it."""
    proc = _started([_ENTRY], "ready")
    stdout, stderr = proc.communicate(timeout=120)
    assert (proc.returncode, stderr) == (0, ""), stderr
    return stdout.rpartition("exit at ")[0]


# A command in which library code swallows every Ctrl-C and waits for ever, as the one interrupt in about eight
# that hung did. `module` is the command's module: burst and verify clean up after Ctrl-C, so no watchdog.
_SWALLOWED = """
import os, sys, threading
import typer
from gpufleet.cli import main
from gpufleet.cli.errors import user_errors
def command() -> None:
    try:
        os.write(1, b"running\\n")
        threading.Event().wait(30)
    except KeyboardInterrupt:
        os.write(1, b"swallowed\\n")
    while True:  # what it waits for will never come, and every later interrupt is swallowed too
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
command.__module__ = sys.argv[1]
app = typer.Typer()
app.command()(user_errors(command))
import gpufleet.cli.app
gpufleet.cli.app.app = app  # what main() runs
sys.argv = ["gpufleet"]
main.main()
"""


def _swallowing(module: str) -> subprocess.Popen[str]:
    proc = _started([_SWALLOWED, module], "running")
    proc.send_signal(signal.SIGINT)
    assert proc.stdout.readline() == "swallowed\n"
    return proc


def test_a_swallowed_ctrl_c_ends_the_process_after_the_watchdog_with_130_and_one_line() -> None:
    # Before: the process waited for ever after `swallowed` (the test's timeout ended it).
    start = time.monotonic()
    proc = _swallowing("gpufleet.cli.preview")
    _, stderr = proc.communicate(timeout=WATCHDOG_SECONDS + 20)
    assert (proc.returncode, stderr) == (130, "interrupted\n")
    assert WATCHDOG_SECONDS <= time.monotonic() - start < WATCHDOG_SECONDS + 15


@pytest.mark.parametrize("module", ["gpufleet.cli.preview", "gpufleet.cli.verify"])
def test_a_second_ctrl_c_ends_the_process_at_once_with_130_and_one_line(module: str) -> None:
    # verify cleans up after Ctrl-C, so it gets no watchdog: only a second Ctrl-C ends a swallowed interrupt.
    proc = _swallowing(module)
    if module == "gpufleet.cli.verify":
        time.sleep(WATCHDOG_SECONDS + 1)
        assert proc.poll() is None, "a cleaning-up command was cut short by the watchdog"
    start = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    assert (proc.returncode, stderr) == (130, "interrupted\n")
    assert time.monotonic() - start < 10
