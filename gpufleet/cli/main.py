"""The `gpufleet` console script: Ctrl-C anywhere is one line, `interrupted`, and exit 130.

- The SIGINT handler is set before anything else is imported. Importing the commands takes a second or more, and
  an interrupt there would otherwise print a traceback.
- Outside a command (importing, parsing arguments) nothing needs cleaning up, so Ctrl-C ends the process at once.
  Once the command has ended the process exits at once too, without interpreter shutdown: its handler stays in
  place to the end, and a half-built module or a cut-short event loop prints nothing.
- Inside a command, `user_errors` (gpufleet/cli/errors.py) takes SIGINT over, so burst and verify can clean up
  and say what they kept, then it gives it back.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from types import FrameType

from gpufleet.cli.exit_codes import EXIT_INTERRUPTED


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe or stream: nothing more can be said there
            stream.flush()


def _interrupted(signum: int, frame: FrameType | None) -> None:
    _flush()
    os.write(2, b"interrupted\n")
    os._exit(EXIT_INTERRUPTED)


def main() -> None:
    """Run one `gpufleet` command as a process."""
    signal.signal(signal.SIGINT, _interrupted)
    from gpufleet.cli.app import app

    try:
        app()
    except SystemExit as e:
        if e.code is not None and not isinstance(e.code, int):
            raise  # a message for Python to print
        code = e.code or 0
    else:
        code = 0
    # The command has ended. Leave now: interpreter shutdown resets SIGINT to the default action before it ends,
    # so a Ctrl-C then would kill the process with no line and exit -2 (CPython signalmodule.c _PySignal_Fini), and
    # it would print what a cut-short module or event loop leaves (after `interrupted`, nothing more is said).
    _flush()
    os._exit(code)


if __name__ == "__main__":
    main()
