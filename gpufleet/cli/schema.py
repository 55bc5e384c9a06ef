"""`gpufleet schema`: the JSON Schema of the estate (or of the workload file), for editors."""

from __future__ import annotations

import json
from typing import Annotated

import typer

WorkloadsOpt = Annotated[
    bool, typer.Option("--workloads", help="The workload file's schema (read by `gpufleet size`) instead.")
]


def schema(workloads: WorkloadsOpt = False) -> None:
    """Print the JSON Schema of the `gpufleet:estate` config value, or with --workloads of the workload file."""
    if workloads:
        from gpufleet.sizing.workloads import json_schema as workloads_schema

        print(json.dumps(workloads_schema(), indent=1))
        return
    from model.spec import json_schema

    print(json.dumps(json_schema(), indent=1))
