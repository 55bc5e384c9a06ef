"""The `gpufleet` console script: Ctrl-C anywhere is one line, `interrupted`, and exit 130.

- The SIGINT handler is set before anything else is imported. Importing the commands takes a second or more, and
  an interrupt there would otherwise print a traceback.
- Outside a command (importing, parsing arguments, shutting down) nothing needs cleaning up, so Ctrl-C ends the
  process at once. Exiting at once also skips the messages a half-built module or a cut-short event loop would
  print at interpreter shutdown.
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
        if e.code == EXIT_INTERRUPTED:  # the command said `interrupted`; skip what shutdown would add
            _flush()
            os._exit(EXIT_INTERRUPTED)
        raise


if __name__ == "__main__":
    main()
