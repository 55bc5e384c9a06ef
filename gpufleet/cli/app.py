"""The `gpufleet` command line. Thin: each command calls one module and renders its result.

Exit codes: 0 fine, 1 a mandatory policy violation, 2 bad input (the message names file and field).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import pulumi
import typer
from rich.console import Console

from components.model.load import SpecError
from gpufleet.engine.plan import Plan
from gpufleet.engine.synth import SynthError, synth
from gpufleet.render import report

app = typer.Typer(
    name="gpufleet",
    help="GPU estates as Pulumi code: preview, check, cost and export them offline; burst them to cloud.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
catalog_app = typer.Typer(help="The GPU instance catalog.", no_args_is_help=True)
app.add_typer(catalog_app, name="catalog")

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

F = TypeVar("F", bound=Callable[..., Any])

StackOpt = Annotated[str, typer.Option("--stack", "-s", help="Stack name: stacks/Pulumi.<stack>.yaml.")]
ProjectOpt = Annotated[
    Path, typer.Option("--project", "-C", help="Project directory (holds Pulumi.yaml).", show_default=False)
]


class Format(StrEnum):
    text = "text"
    markdown = "markdown"
    json = "json"


def user_errors(fn: F) -> F:
    """Turn user mistakes into one message per problem and exit 2, never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except SpecError as e:
            for problem in e.problems:
                err.print(f"[red]error:[/red] {problem}")
            raise typer.Exit(2) from None
        except pulumi.RunError as e:
            err.print(f"[red]error:[/red] {e}")
            raise typer.Exit(2) from None
        except SynthError as e:
            err.print(f"[red]error:[/red] the program could not be synthesized offline: {e}")
            raise typer.Exit(2) from None

    return wrapper  # type: ignore[return-value]


def load_plan(project: Path, stack: str) -> Plan:
    return synth(project, stack)


@app.command()
@user_errors
def preview(
    stack: StackOpt,
    format: Annotated[Format, typer.Option("--format", "-f", help="text, markdown or json.")] = Format.text,
    project: ProjectOpt = Path("."),
) -> None:
    """Synthesize a stack offline: resources by component, cost envelope and policy verdicts.

    Needs no credentials and no Pulumi CLI. Exits 1 when a mandatory policy rule is violated.
    """
    import datetime as dt

    from components.model.load import read_stack
    from gpufleet.review import check as checker
    from gpufleet.review.cost import estate_cost
    from gpufleet.review.findings import mandatory

    spec = checker.load_spec(project, stack)
    plan = load_plan(project, stack)
    envelope = estate_cost(spec, read_stack(project, stack).window(), dt.datetime.now(dt.UTC))
    findings = checker.evaluate(plan, spec)
    if format is Format.json:
        extra = {"cost": envelope.to_dict(), "findings": checker.to_json(findings)}
        print(report.render_json(plan, extra))
    elif format is Format.markdown:
        print(report.render_markdown(plan, envelope, findings, spec=spec), end="")
    else:
        report.render_text(plan, out, envelope, findings)
    if mandatory(findings):
        raise typer.Exit(1)


@app.command()
@user_errors
def export(
    stack: StackOpt,
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Directory to write YAML into.")],
    project: ProjectOpt = Path("."),
) -> None:
    """Write every Kubernetes object (one YAML file each) and every Helm release's chart and values."""
    from gpufleet.render.export import export as write

    plan = load_plan(project, stack)  # synthesize first: bad input writes nothing
    written = write(plan, out_dir)
    out.print(f"wrote {len(written)} files under {out_dir}")


@app.command()
def schema() -> None:
    """Print the JSON Schema of the `gpufleet:estate` config value (for editor validation)."""
    from components.model.spec import json_schema

    print(json.dumps(json_schema(), indent=1))


@catalog_app.command("refresh")
def catalog_refresh(
    region: Annotated[str, typer.Option("--region", "-r", help="Region whose AZ offerings to record.")],
) -> None:
    """Regenerate instance facts and AZ offerings from EC2 (needs AWS credentials)."""
    import boto3
    import botocore.exceptions

    from gpufleet.catalog.refresh import refresh

    try:
        doc = refresh(boto3.client("ec2", region_name=region), region)
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as e:
        err.print(f"[red]error:[/red] EC2 refused the catalog refresh: {e}")
        raise typer.Exit(2) from None
    out.print(f"catalog: {len(doc['instances'])} instance types, offerings for {region} ({doc['generated']})")


@catalog_app.command("show")
def catalog_show(
    region: Annotated[str, typer.Option("--region", "-r", help="Region for prices.")] = "us-east-1",
) -> None:
    """List the GPU instance types the catalog holds, with GPUs, EFA and on-demand price."""
    from rich.table import Table

    from components.model import catalog

    table = Table(title=f"GPU instance catalog (facts {catalog.instances_generated()})")
    for col in ("instance", "GPU", "count", "vCPU", "EFA max", "NVMe GB", "$/h", "$/GPU-h"):
        table.add_column(col, no_wrap=True)
    for it in catalog.instance_types().values():
        p = catalog.price(it.name, region)
        table.add_row(
            it.name,
            it.gpu.id,
            str(it.gpu_count),
            str(it.vcpus),
            str(it.max_efa_interfaces),
            str(it.local_nvme_gb),
            f"{p.usd_per_hour:.2f}" if p else "-",
            f"{p.usd_per_hour / it.gpu_count:.2f}" if p else "-",
        )
    out.print(table)


# -- check (policy packs) ---------------------------------------------------------------------------------


class CheckFormat(StrEnum):
    text = "text"
    json = "json"


@app.command()
@user_errors
def check(
    stack: StackOpt,
    format: Annotated[CheckFormat, typer.Option("--format", "-f", help="text or json.")] = CheckFormat.text,
    write_config: Annotated[
        Path | None,
        typer.Option(
            "--write-config",
            help="Write one --policy-pack-config file per pack (<dir>/<pack>.json) for `pulumi preview` and stop.",
        ),
    ] = None,
    project: ProjectOpt = Path("."),
) -> None:
    """Evaluate the policy packs over a stack offline; exit 1 on a mandatory violation."""
    from gpufleet.review import check as checker

    spec = checker.load_spec(project, stack)
    if write_config is not None:
        for path in checker.write_configs(spec, write_config):
            out.print(f"pulumi preview -s {stack} --policy-pack policies/{path.stem} --policy-pack-config {path}")
        return
    findings = checker.evaluate(load_plan(project, stack), spec)
    if format is CheckFormat.json:
        print(json.dumps(checker.to_json(findings), indent=1))
    else:
        out.print(checker.render_text(findings), markup=False)
    if any(f.enforcement == "mandatory" for f in findings):
        raise typer.Exit(1)


# -- cost and diff ----------------------------------------------------------------------------------------


@app.command()
@user_errors
def cost(
    stack: StackOpt,
    format: Annotated[Format, typer.Option("--format", "-f", help="text, markdown or json.")] = Format.text,
    at: Annotated[
        str | None, typer.Option("--at", help="ISO time burst windows are judged at (default: now, UTC).")
    ] = None,
    project: ProjectOpt = Path("."),
) -> None:
    """Cost envelope from catalog prices: per pool, site, tenant and estate at min, desired and max size."""
    import datetime as dt

    from components.model.load import read_stack
    from gpufleet.review.cost import estate_cost

    stack_file = read_stack(project, stack)
    now = _parse_time(at) if at else dt.datetime.now(dt.UTC)
    envelope = estate_cost(stack_file.estate(), stack_file.window(), now)
    if format is Format.json:
        print(json.dumps(envelope.to_dict(), indent=1))
    elif format is Format.markdown:
        print(report.render_cost_markdown(envelope), end="")
    else:
        report.render_cost_text(envelope, out)


def _parse_time(value: str) -> Any:
    import datetime as dt

    try:
        t = dt.datetime.fromisoformat(value)
    except ValueError:
        err.print(f"[red]error:[/red] --at: {value!r} is not an ISO time (e.g. 2026-12-01T09:00:00Z)")
        raise typer.Exit(2) from None
    return t if t.tzinfo else t.replace(tzinfo=dt.UTC)


@app.command()
@user_errors
def diff(
    stack: StackOpt,
    base: Annotated[str, typer.Option("--base", "-b", help="Git revision to compare with, e.g. origin/main.")],
    format: Annotated[Format, typer.Option("--format", "-f", help="text, markdown or json.")] = Format.text,
    project: ProjectOpt = Path("."),
) -> None:
    """Compare a stack at a git revision with the working tree: resources, replacements, cost and findings."""
    from gpufleet.review.diff import DiffError, diff_revision

    try:
        result = diff_revision(project, stack, base)
    except DiffError as e:
        err.print(f"[red]error:[/red] {e}")
        raise typer.Exit(2) from None
    if format is Format.json:
        print(json.dumps(result.to_dict(), indent=1, default=str))
    elif format is Format.markdown:
        print(report.render_diff_markdown(result), end="")
    else:
        report.render_diff_text(result, out)


# -- burst ------------------------------------------------------------------------------------------------
from gpufleet.cli.burst import burst_app  # noqa: E402  (the commands live in their own module)

app.add_typer(burst_app, name="burst")
from gpufleet.cli.verify import verify  # noqa: E402  (acceptance checks after `pulumi up`)

app.command("verify")(verify)

# -- size -------------------------------------------------------------------------------------------------


@app.command()
@user_errors
def size(
    workloads: Annotated[Path, typer.Argument(help="Workload file (see examples/workloads.yaml).")],
    stack: Annotated[
        str | None, typer.Option("--stack", "-s", help="Compare this stack's pools with the range.")
    ] = None,
    format: Annotated[Format, typer.Option("--format", "-f", help="text, markdown or json.")] = Format.text,
    project: ProjectOpt = Path("."),
) -> None:
    """Size GPUs from workload evidence: demand, memory fit, cheapest placement, installed range, node pools."""
    from components.model.load import read_stack
    from gpufleet.render import sizing as sizing_report
    from gpufleet.sizing import core as sizing

    spec = read_stack(project, stack).estate() if stack else None
    result = sizing.size(sizing.load_workloads(workloads), str(workloads), spec, stack)
    if format is Format.json:
        print(json.dumps(sizing_report.render_json(result), indent=1))
    elif format is Format.markdown:
        print(sizing_report.render_markdown(result), end="")
    else:
        print(sizing_report.render_text(result), end="")
