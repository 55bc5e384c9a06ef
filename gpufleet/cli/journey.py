"""`gpufleet journey`: workload manifests walked through the stack's estate offline, stage by stage."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpufleet.cli.errors import CommandError
from gpufleet.cli.options import HERE, ChartCacheOpt, CheckFormat, CheckFormatOpt, ProjectOpt, StackOpt, progress

FilesArg = Annotated[list[Path], typer.Argument(help="Workload manifests (multi-document YAML).", show_default=False)]
TenantOpt = Annotated[
    str | None, typer.Option("--tenant", help="Tenant whose namespace holds workloads that name none.")
]
SiteOpt = Annotated[
    str | None, typer.Option("--site", help="Site to submit to when several sites and no MultiKueue manager exist.")
]


def journey(
    stack: StackOpt,
    files: FilesArg,
    tenant: TenantOpt = None,
    site: SiteOpt = None,
    format: CheckFormatOpt = CheckFormat.text,
    project: ProjectOpt = HERE,
    chart_cache: ChartCacheOpt = None,
) -> None:
    """Walk each workload through the estate: api, admission, queueing, placement, storage, network.

    Needs no credentials: the stack is synthesized and its charts rendered offline. Exits 1 when a workload is
    blocked, 2 on a manifest that cannot be read (the message names the file and document) or a chart that cannot
    be rendered (not in the chart cache: run `gpufleet charts pull`).
    """
    from gpufleet.charts.cache import ChartCache
    from gpufleet.engine.synth import synth_stack
    from gpufleet.render.journey import journey_json, journey_text
    from gpufleet.review.reality.checks import render
    from gpufleet.review.reality.journeys.estate import clusters
    from gpufleet.review.reality.journeys.walk import TargetError, walk
    from gpufleet.review.reality.journeys.workloads import ManifestError, read
    from model import kinds
    from model.load import read_stack

    project = project.resolve()
    stack_file = read_stack(project, stack)
    spec = stack_file.estate()
    namespace = None
    if tenant is not None:
        names = [t.name for t in spec.tenants]
        if tenant not in names:
            raise CommandError(f"--tenant {tenant}: no such tenant in stack {stack} (tenants: {', '.join(names)})")
        namespace = spec.tenant(tenant).name  # a tenant's namespace is named after it
    # manifests meet the OpenAPI of the estate's Kubernetes version (the first site that pins one)
    version = next((v for s in spec.sites if (v := kinds.of(s).kubernetes_version)), None)
    try:
        workloads = read(files, namespace, version)
    except ManifestError as e:
        raise CommandError(str(e)) from None
    if not workloads:
        raise CommandError(f"no workload in {', '.join(map(str, files))}")
    with progress(f"journey {stack}: synthesizing offline and walking {len(workloads)} workloads"):
        plan = synth_stack(project, stack, stack_file)
        releases = render(plan, ChartCache(chart_cache))
        # a release not rendered leaves its objects (the device plugin, Kueue's queues) out of every walk, so
        # each GPU job would read as blocked: refuse instead, with the renderer's reason (run `charts pull`)
        missing = sorted({rel.error for rel in releases.values() if not rel.rendered and rel.error})
        if missing:
            raise CommandError("cannot walk the journeys offline: " + "; ".join(missing))
        views = clusters(plan, releases)
        try:
            journeys = [walk(w, views, spec, site) for w in workloads]
        except TargetError as e:
            raise CommandError(str(e)) from None
    match format:
        case CheckFormat.json:
            print(journey_json(journeys))
        case CheckFormat.text:
            print(journey_text(journeys), end="")
    if any(j.verdict == "blocked" for j in journeys):
        raise typer.Exit(1)
