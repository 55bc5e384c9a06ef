"""Progress on long runs: a person at a terminal sees what `preview`, `check`, `diff` and `cost` are doing while
they run (a synthesis takes seconds, a large estate half a minute); a pipe, a file or a CI log gets nothing (the
newcomer issue: "no progress indication during 15-30 s runs on a terminal").

The commands run in a fresh interpreter with stderr on a pseudo-terminal (`pty.openpty`), as a shell gives it.
GitHub Actions sets CI in every step: "CI | Always set to true." (Default environment variables,
https://docs.github.com/en/actions/reference/variables-reference).
"""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import sys

import pytest

from gpufleet.cli.options import shows_progress
from tests.conftest import ROOT

SCRIPT = "import sys; from gpufleet.cli.app import app; sys.argv[0] = 'gpufleet'; app()"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_for_a_terminal_outside_ci_only() -> None:
    assert shows_progress(_Terminal(), {})
    assert shows_progress(_Terminal(), {"CI": "false"})
    assert not shows_progress(_Terminal(), {"CI": "true"}) and not shows_progress(_Terminal(), {"CI": "1"})
    assert not shows_progress(io.StringIO(), {})  # a pipe or a file


def _run(args: list[str], ci: str | None, stderr_tty: bool) -> tuple[int, str, bytes]:
    """(exit code, stdout, what reached stderr) of `gpufleet ARGS`, stdout a pipe, stderr a terminal or a pipe."""
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE")}
    env["PYTHONPATH"] = str(ROOT)
    if ci is not None:
        env["CI"] = ci
    master, slave = pty.openpty() if stderr_tty else (None, None)
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, *args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave if slave is not None else subprocess.PIPE,
    )
    seen = b""
    if master is not None and slave is not None:
        os.close(slave)
        while True:  # read the terminal until the process has closed it
            ready, _, _ = select.select([master], [], [], 1)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        os.close(master)
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out.decode(), seen if master is not None else err


@pytest.mark.parametrize(
    ("args", "doing"),
    [
        (["cost", "-s", "aws-train", "--summary"], "cost aws-train: pricing from the catalog"),
        (["preview", "-s", "onprem", "--summary"], "preview onprem: synthesizing offline, pricing and checking"),
    ],
)
def test_a_run_on_a_terminal_shows_what_it_does_and_nothing_in_ci_or_a_pipe(args: list[str], doing: str) -> None:
    code, out, terminal = _run(args, ci=None, stderr_tty=True)
    assert code == 0, terminal
    assert doing.encode() in terminal  # the spinner line, with the elapsed time
    assert terminal.rstrip().endswith(b"\x1b[2K")  # and erased when the run ends
    code_ci, out_ci, terminal_ci = _run(args, ci="true", stderr_tty=True)
    assert (code_ci, terminal_ci) == (0, b"")
    code_pipe, out_pipe, piped = _run(args, ci=None, stderr_tty=False)
    assert (code_pipe, piped) == (0, b"")
    assert out == out_ci == out_pipe  # stdout is the same whatever stderr is
