"""`gpufleet cost`: the cost envelope of a stack from dated catalog prices; with --actual, showback: what each
tenant's GPUs did over a window, from a Prometheus (gpufleet.showback)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated

import typer

from gpufleet.cli.errors import CommandError, refuse_json_summary
from gpufleet.cli.options import HERE, Format, FormatOpt, ProjectOpt, StackOpt, SummaryOpt, err, out, progress
from model.conventions import MONITORING_NAMESPACE

AtOpt = Annotated[
    str | None,
    typer.Option(
        "--at", help="ISO time burst windows are judged at; with --actual, the window's end (default: now, UTC)."
    ),
]
ActualOpt = Annotated[
    bool,
    typer.Option("--actual", help="Showback: per tenant, GPU-hours allocated, used and idle, priced, beside the plan."),
]
PrometheusOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--prometheus",
        help="With --actual: base URL of a Prometheus with gpufleet's recording rules; repeat for one per site.",
        show_default=False,
    ),
]
WindowOpt = Annotated[str, typer.Option("--window", help="With --actual: how far back from --at, e.g. 12h, 7d, 2w.")]


def parse_time(value: str, option: str = "--at") -> dt.datetime:
    """An ISO time; UTC when it names no zone."""
    try:
        t = dt.datetime.fromisoformat(value)
    except ValueError:
        raise CommandError(f"{option}: {value!r} is not an ISO time (e.g. 2026-12-01T09:00:00Z)") from None
    return t if t.tzinfo else t.replace(tzinfo=dt.UTC)


def cost(
    stack: StackOpt,
    format: FormatOpt = Format.text,
    at: AtOpt = None,
    project: ProjectOpt = HERE,
    summary: SummaryOpt = False,
    actual: ActualOpt = False,
    prometheus: PrometheusOpt = None,
    span: WindowOpt = "7d",
) -> None:
    """Cost envelope from catalog prices: the estate's totals and budget verdict first, then per pool, site and
    tenant at min, desired and max size. --summary prints only the totals and the verdict. --actual: showback
    from a Prometheus over --window up to --at."""
    if actual:
        _actual(stack, project, format, at, prometheus or [], span, summary)
        return
    if prometheus:
        raise CommandError("--prometheus: only with --actual")
    refuse_json_summary(summary, format, "envelope")
    from gpufleet.render.cost import cost_json, cost_markdown, cost_text
    from gpufleet.review.cost.envelope import estate_cost
    from gpufleet.review.cost.usage_file import read_usage, usage_path
    from gpufleet.review.stack_file import judged
    from model.load import read_stack, stack_path

    now = parse_time(at) if at else dt.datetime.now(dt.UTC)
    with progress(f"cost {stack}: pricing from the catalog"):
        stack_file = read_stack(project, stack)
        spec, window, _ = judged(stack_file)  # as every command judges it
        # The usage profile beside the stack file (usage.<stack>.yaml), if any, prices usage-billed items.
        usage = read_usage(usage_path(stack_path(project, stack), stack), spec)
        envelope = estate_cost(spec, window, now, usage)
    match format:
        case Format.json:
            print(cost_json(envelope))
        case Format.markdown:
            print(cost_markdown(envelope, summary_only=summary), end="")
        case Format.text:
            cost_text(envelope, out, summary_only=summary)


def _actual(
    stack: str, project: Path, format: Format, at: str | None, urls: list[str], window: str, summary: bool
) -> None:
    """`cost --actual`: the showback of the window up to `at`, from the Prometheus servers at `urls`."""
    from gpufleet.render.showback import showback_json, showback_text
    from gpufleet.review.cost.envelope import estate_cost
    from gpufleet.review.cost.usage_file import read_usage, usage_path
    from gpufleet.review.stack_file import judged
    from gpufleet.showback.prometheus import query
    from gpufleet.showback.showback import queries, retained, showback, window_hours
    from model.load import read_stack, stack_path
    from model.observability import rules

    if format is Format.markdown or summary:
        raise CommandError("--actual: prints text or json (-f json), without --summary")
    try:
        window_hours(window)
    except ValueError as e:
        raise CommandError(f"--window: {e}") from None
    end = parse_time(at) if at else dt.datetime.now(dt.UTC)
    stack_file = read_stack(project, stack)
    spec, burst_window, _ = judged(stack_file)
    installed = [s.name for s in spec.sites if s.kubernetes.monitoring.installed]
    if not urls:
        if not installed:
            raise CommandError(
                f"--actual: no site of stack {stack} installs the metrics stack, so no Prometheus records gpufleet's "
                "GPU-hours; set sites[].kubernetes.monitoring.prometheus_operator: install, or pass --prometheus URL "
                "of a Prometheus that runs gpufleet's recording rules"
            )
        raise CommandError(
            f"--actual needs --prometheus URL: the Prometheus of site {', '.join(installed)} (service "
            f"prometheus-operated in namespace {MONITORING_NAMESPACE}, e.g. through kubectl port-forward)"
        )
    kept = {s.name: s.kubernetes.monitoring.retention_days for s in spec.sites if s.kubernetes.monitoring.installed}
    asked, (window, shortened) = window, retained(window, kept)
    if shortened:
        err.print(f"warning: {shortened}", markup=False)
    with progress(f"cost {stack}: asking {len(urls)} Prometheus for the last {window}"):
        usage = read_usage(usage_path(stack_path(project, stack), stack), spec)
        envelope = estate_cost(spec, burst_window, end, usage)
        answers = {kind: [s for url in urls for s in query(url, expr, end)] for kind, expr in queries(window).items()}
    result = showback(
        envelope, [t.name for t in spec.tenants], answers["allocated"], answers["used"], end, window, urls
    )
    if shortened:
        result.asked_window = asked
        result.notes.append(shortened)
    if not installed:
        result.notes.append(
            f"no site of stack {stack} installs the metrics stack: these are the given Prometheus' series"
        )
    if not answers["allocated"] and not answers["used"]:
        result.notes.append(
            f"no samples of {rules.ALLOCATED_BY_POOL} or {rules.USED_BY_POOL} in the window: no GPU pod ran, "
            "or gpufleet's PrometheusRule is not loaded there"
        )
    if format is Format.json:
        print(showback_json(result))
    else:
        showback_text(result, out)
