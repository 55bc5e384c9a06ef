"""What every command shares: the output consoles, the --stack / --project / --format options."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


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
HERE = Path(".")
ChartCacheOpt = Annotated[
    Path | None,
    typer.Option(
        "--chart-cache",
        help="Chart cache the reality checks render from (default: $GPUFLEET_CHART_CACHE, else ~/.cache/gpufleet/charts).",
        show_default=False,
    ),
]
