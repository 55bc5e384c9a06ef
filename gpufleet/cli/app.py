"""The `gpufleet` command line, assembled in one place: every command, each from its own module.

Each command is registered through `user_errors`, the one handler that turns user mistakes into one message
per problem and an exit code (0 fine, 1 a mandatory policy violation or a refused burst, 2 bad input).
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Annotated, Any

import typer

from gpufleet.cli import (
    burst,
    catalog,
    charts,
    check,
    cost,
    diff,
    export,
    init,
    journey,
    preview,
    schema,
    size,
    validate,
    verify,
)
from gpufleet.cli.errors import user_errors
from gpufleet.cli.options import set_width


class _Process(typer.Typer):
    """The `gpufleet` program run as a process (the console script): one command, then the process exits.

    Automatic cyclic garbage collection is off for the command, and what it left is frozen (`gc.freeze`) before
    the interpreter shuts down. A command holds a synthesized plan (hundreds of thousands of Outputs, futures and
    SDK objects) until it ends: every automatic collection after synthesis, and the collection the interpreter runs
    at shutdown, would traverse all of it again only to free memory the operating system reclaims at exit anyway.
    `gpufleet preview` of the examples, one run each (`python -m benchmarks.preview_imports`): aws-train 3.39 s to
    1.91 s, hybrid 4.36 s to 2.00 s, onprem 2.17 s to 1.38 s.
    In-process callers (`typer.testing.CliRunner`, which invokes the click command) keep the collector as it is.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        gc.disable()
        try:
            return super().__call__(*args, **kwargs)
        finally:
            gc.freeze()


app = _Process(
    name="gpufleet",
    help="GPU estates as Pulumi code: preview, check, cost and export them offline; burst them to cloud.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
)
catalog_app = typer.Typer(help="The GPU instance catalog.", no_args_is_help=True)
charts_app = typer.Typer(help="The chart cache: every pinned chart, for offline rendering.", no_args_is_help=True)
burst_app = typer.Typer(
    help="Open, close, show and expire cloud burst windows of a hybrid estate.", no_args_is_help=True
)

COMMANDS: list[tuple[typer.Typer, str, Callable[..., Any]]] = [
    (app, "init", init.init),
    (app, "validate", validate.validate),
    (app, "preview", preview.preview),
    (app, "journey", journey.journey),
    (app, "export", export.export),
    (app, "schema", schema.schema),
    (app, "check", check.check),
    (app, "cost", cost.cost),
    (app, "diff", diff.diff),
    (app, "size", size.size),
    (app, "verify", verify.verify),
    (charts_app, "pull", charts.pull),
    (charts_app, "list", charts.list_charts),
    (catalog_app, "refresh", catalog.catalog_refresh),
    (catalog_app, "show", catalog.catalog_show),
    (catalog_app, "s3-ranges", catalog.catalog_s3_ranges),
    (burst_app, "open", burst.open_cmd),
    (burst_app, "close", burst.close_cmd),
    (burst_app, "extend", burst.extend_cmd),
    (burst_app, "reconcile", burst.reconcile_cmd),
    (burst_app, "status", burst.status_cmd),
    (burst_app, "migrate", burst.migrate_cmd),
]


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        print(f"gpufleet {version('gpufleet')}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit."),
    ] = False,
    width: Annotated[
        int | None,
        typer.Option(
            "--width",
            min=40,
            help="Output width in columns (default: $COLUMNS, else the terminal's; no limit into a pipe or file).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """GPU estates as Pulumi code: preview, check, cost and export them offline; burst them to cloud."""
    set_width(width)


for parent, name, command in COMMANDS:
    parent.command(name)(user_errors(command))
app.add_typer(catalog_app, name="catalog")
app.add_typer(charts_app, name="charts")
app.add_typer(burst_app, name="burst")
