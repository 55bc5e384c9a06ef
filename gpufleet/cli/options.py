"""What every command shares: the output consoles, progress on long runs, the --stack / --project / --format
options.

Output width: `gpufleet --width N`, else `COLUMNS`, else the terminal's width; into a pipe, a file or a CI log
(stdout not a terminal) there is no limit, so tables take the width their cells need. Rich on its own falls
back to 80 columns there and squeezes table cells (instance names cut with "…").

Progress: a long run (a synthesis takes seconds, a large estate half a minute) shows a spinner, what it is doing
and the time so far on stderr, and erases it when done. Only for a person at a terminal: into a pipe, a file or a
CI log (CI=true) nothing is written, so logs and captured output stay as they were.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from enum import StrEnum
from pathlib import Path
from typing import IO, Annotated

import typer
from rich.console import Console, ConsoleDimensions
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

PIPE_WIDTH = 10_000  # not a terminal: wide enough for any row (no table here expands to the console width)


def output_width(requested: int | None, columns: str | None, tty: bool, terminal: int) -> int:
    """The width to render at: `--width`, else `COLUMNS` (POSIX: a decimal integer > 0), else the terminal's when
    writing to one, else no limit."""
    if requested is not None:
        return requested
    if columns is not None and columns.isdigit() and int(columns) > 0:
        return int(columns)
    return terminal if tty else PIPE_WIDTH


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


class OutputConsole(Console):
    """A rich Console whose width follows `output_width`, judged at each print (tests swap sys.stdout)."""

    requested_width: int | None = None  # `gpufleet --width N`, set once per invocation by the app's callback

    @property
    def size(self) -> ConsoleDimensions:
        detected = super().size
        width = output_width(self.requested_width, os.environ.get("COLUMNS"), _isatty(self.file), detected.width)
        return ConsoleDimensions(width, detected.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self.requested_width, self.height = new_size


out = OutputConsole(highlight=False, soft_wrap=True)
err = OutputConsole(stderr=True, highlight=False, soft_wrap=True)


def set_width(width: int | None) -> None:
    """`gpufleet --width N` for both consoles (None: COLUMNS, the terminal, or no limit)."""
    out.requested_width = err.requested_width = width


def shows_progress(stream: IO[str], environ: Mapping[str, str]) -> bool:
    """Whether to show progress on `stream`: a terminal, outside CI (GitHub Actions and most CI services set
    CI=true; some CI=1)."""
    return _isatty(stream) and environ.get("CI", "").strip().lower() not in ("true", "1")


@contextlib.contextmanager
def progress(doing: str) -> Iterator[None]:
    """A spinner with `doing` and the elapsed time on stderr while the block runs, erased after it; nothing
    unless `shows_progress`."""
    if not shows_progress(err.file, os.environ):
        yield
        return
    columns = (SpinnerColumn(), TextColumn("{task.description}", markup=False), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True) as bar:
        bar.add_task(doing, total=None)
        yield


class Format(StrEnum):
    text = "text"
    markdown = "markdown"
    json = "json"


class CheckFormat(StrEnum):
    text = "text"
    json = "json"


StackOpt = Annotated[str, typer.Option("--stack", "-s", help="Stack name: stacks/Pulumi.<stack>.yaml.")]
ProjectOpt = Annotated[
    Path, typer.Option("--project", "-C", help="Project directory (holds Pulumi.yaml).", show_default=False)
]
FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="text, markdown or json.")]
CheckFormatOpt = Annotated[CheckFormat, typer.Option("--format", "-f", help="text or json.")]
SummaryOpt = Annotated[
    bool,
    typer.Option(
        "--summary", help="Only the summary (verdicts, cost totals, warnings), not the details; not with -f json."
    ),
]
HERE = Path(".")


ChartCacheOpt = Annotated[
    Path | None,
    typer.Option(
        "--chart-cache",
        help="Chart cache the reality checks render from (default: $GPUFLEET_CHART_CACHE, else ~/.cache/gpufleet/charts).",
        show_default=False,
    ),
]
