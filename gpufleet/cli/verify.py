"""`gpufleet verify`: acceptance checks on the clusters of a stack after `pulumi up` (registered in app.py).

Exit codes: 0 every mandatory check passed, 1 one failed or could not finish, 2 bad input or a cluster that
cannot be reached, 130 interrupted (the run's namespace is deleted first).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from gpufleet.cli.errors import CommandError
from gpufleet.cli.options import HERE, Format, FormatOpt, ProjectOpt, StackOpt, err
from gpufleet.review.stack_file import judged
from gpufleet.verify import suite as suites
from model.load import read_stack

if TYPE_CHECKING:  # the cluster access, runner and renderers are imported when `verify` runs, not by every command
    from gpufleet.verify.kube import ClusterApi
    from gpufleet.verify.results import Report
    from model.spec import EstateSpec, Site

CATEGORIES = ",".join(c.value for c in suites.Category if c is not suites.Category.degraded)


def _categories(only: str | None) -> list[suites.Category]:
    if not only:
        return list(suites.DEFAULT_CATEGORIES)
    names = [x.strip() for x in only.split(",") if x.strip()]
    valid = {c.value: c for c in suites.Category if c is not suites.Category.degraded}
    bad = [n for n in names if n not in valid]
    if bad:
        raise CommandError(f"--only: {', '.join(bad)} not one of {CATEGORIES}")
    return [valid[n] for n in names]


def _eks_client(region: str) -> object:
    import boto3

    return boto3.client("eks", region_name=region)


def verify(
    stack: StackOpt,
    only: Annotated[
        str | None, typer.Option("--only", help=f"Comma-separated categories to run: {CATEGORIES} (default all).")
    ] = None,
    pool: Annotated[list[str] | None, typer.Option("--pool", help="Only these node pools (repeatable).")] = None,
    format: FormatOpt = Format.text,
    plan: Annotated[
        bool, typer.Option("--plan", help="Print the checks, pass marks and sources; touch no cluster.")
    ] = False,
    degraded: Annotated[
        bool,
        typer.Option(
            "--degraded", help="Also quarantine and drain one node per pool while a gang job runs, then return it."
        ),
    ] = False,
    no_quarantine: Annotated[
        bool,
        typer.Option(
            "--no-quarantine",
            help="Leave nodes a probe failed on or a detector reports unhealthy untainted (by default they get "
            "gpufleet.io/quarantine:NoSchedule).",
        ),
    ] = False,
    return_node: Annotated[
        str | None,
        typer.Option("--return", help="Remove the quarantine taint from this node (after its repair); run no check."),
    ] = None,
    site_name: Annotated[
        str | None, typer.Option("--site", help="With --return: the node's site (needed on a multi-site estate).")
    ] = None,
    kubeconfig: Annotated[
        list[str] | None,
        typer.Option(
            "--kubeconfig",
            help="SITE=PATH per site, or SITE=PATH#CONTEXT (a bare PATH for a one-site estate); on a hybrid estate "
            "also MANAGER=PATH for the MultiKueue manager (burst.manager.name).",
        ),
    ] = None,
    pulumi_secrets: Annotated[
        bool,
        typer.Option(
            "--pulumi-secrets", help="Read bare-metal and MultiKueue manager kubeconfigs with `pulumi config get`."
        ),
    ] = False,
    dcgm_level: Annotated[int, typer.Option("--dcgm-level", min=1, max=4, help="dcgmi diag -r level.")] = 2,
    egress_probe: Annotated[
        str, typer.Option("--egress-probe", help="IP:PORT outside every egress list, reachable from the cluster.")
    ] = "1.1.1.1:443",
    report_file: Annotated[
        Path | None, typer.Option("--report", help="Also write the Markdown acceptance report to this file.")
    ] = None,
    project: ProjectOpt = HERE,
) -> None:
    """Acceptance checks after `pulumi up`, derived from the estate: fabric (NCCL all_reduce_perf across two nodes
    of every multi-node pool on a fabric, over EFA or InfiniBand/RoCE, against the node's network bandwidth from
    the catalog or inventory x an efficiency factor; and on one node for NVLink), gpus (DCGM diagnostics on every
    node, XID / ECC findings), storage (fio read/write from training nodes to each shared tier against the per-node
    need of the estate's throughput warning), tenancy (cross-tenant traffic and egress outside the list refused, a
    pod over the GPU quota refused, untrusted pods on their dedicated nodes, a Job without a queue held by Kueue),
    telemetry (the DCGM exporter serves every GPU). --degraded adds a drain drill.

    Fabric and tenancy probes run as a tenant's jobs (its namespace, LocalQueue, ServiceAccount and Pod Security
    level); the rest in a namespace of the run's own. Everything made is deleted, also on Ctrl-C. Prints each
    figure with its pass mark and where the mark comes from; exits 1 when a mandatory check fails or cannot
    finish. --plan shows all of this, with each probe's namespace and LocalQueue, without a cluster.
    """
    pools, categories = pool or [], _categories(only)
    try:
        options = suites.Options(
            categories=categories,
            pools=pools,
            degraded=degraded,
            quarantine=not no_quarantine,
            dcgm_level=dcgm_level,
            egress_probe=egress_probe,
        )
    except ValueError as e:
        raise CommandError(f"--egress-probe {egress_probe}: {e}") from None
    if report_file is not None and report_file.is_dir():
        raise CommandError(f"--report {report_file}: is a directory; give a file")
    spec = judged(read_stack(project, stack))[0]
    unknown = sorted(set(pools) - {p.name for _, p in spec.pools()})
    if unknown:
        raise CommandError(f"--pool: {', '.join(unknown)} not a node pool of stack {stack}")
    suite = suites.derive(spec, stack, options)
    if plan:
        _print_plan(suite, format)
        return
    from gpufleet.render import verify as render
    from gpufleet.verify.access import (
        AccessError,
        cluster_api,
        kubeconfig_for,
        manager_kubeconfig,
        parse_kubeconfig_options,
    )

    sites = [s for s in spec.sites if suite.for_site(s.name)]
    if return_node is not None:
        sites = [_return_site(spec, site_name)]
    elif site_name is not None:
        raise CommandError("--site is only for --return")
    try:
        given = parse_kubeconfig_options(kubeconfig or [], spec)
        apis: dict[str, tuple[ClusterApi, str]] = {}
        for site in sites:
            doc, context = kubeconfig_for(
                spec, stack, site, given, project=project, pulumi_secrets=pulumi_secrets, eks_client=_eks_client
            )
            apis[site.name] = cluster_api(doc, context)
        manager = None
        if return_node is None and any(c.manager for c in suite.checks):
            doc, context = manager_kubeconfig(spec, stack, given, project=project, pulumi_secrets=pulumi_secrets)
            manager = cluster_api(doc, context)[0]
    except AccessError as e:
        raise CommandError(str(e)) from None
    if return_node is not None:
        _return(apis[sites[0].name][0], sites[0].name, return_node)
        return
    result = run(suite, apis, manager)
    _print_report(result, format)
    if report_file is not None:
        report_file.write_text(render.markdown(result))
    if not result.accepted:
        raise typer.Exit(1)


def run(suite: suites.Suite, apis: dict[str, tuple[ClusterApi, str]], manager: ClusterApi | None = None) -> Report:
    """Run every site's checks with a progress display (tenants' probes of a hybrid estate through `manager`, its
    MultiKueue manager); Ctrl-C cleans up and exits 130."""
    from rich.markup import escape
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from gpufleet.verify.kube import Context, new_run
    from gpufleet.verify.results import Report
    from gpufleet.verify.runner import run_site

    report = Report(suite, started=dt.datetime.now(dt.UTC))
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=err) as bar:
        task = bar.add_task("starting", total=None)
        for site in suite.spec.sites:
            if site.name not in apis:
                continue
            api, version = apis[site.name]
            report.cluster_versions[site.name] = version
            ctx = Context(suite, site, api, new_run(), manager=manager)
            ctx.progress = lambda check, msg: bar.update(task, description=escape(f"{check}: {msg}"))
            try:
                results, problems = run_site(ctx)
            except KeyboardInterrupt:
                bar.stop()
                left = "; ".join(ctx.cleanup_problems) or "nothing left behind"
                err.print(
                    f"[yellow]interrupted:[/yellow] deleted namespace {ctx.run.namespace} on site {site.name} "
                    f"({escape(left)}); no verdict"
                )
                raise typer.Exit(130) from None
            report.results += results
            report.cleanup_problems += [f"site {site.name}: {p}" for p in problems]
            report.quarantined += [f"site {site.name}: {q}" for q in ctx.quarantined]
    report.finished = dt.datetime.now(dt.UTC)
    return report


def _return_site(spec: EstateSpec, name: str | None) -> Site:
    if name is None:
        if len(spec.sites) > 1:
            raise CommandError(f"--return: say which site with --site ({', '.join(s.name for s in spec.sites)})")
        return spec.sites[0]
    found = next((s for s in spec.sites if s.name == name), None)
    if found is None:
        raise CommandError(f"--site {name}: not a site of this stack ({', '.join(s.name for s in spec.sites)})")
    return found


def _return(api: ClusterApi, site: str, node: str) -> None:
    """Take `node` back into service: remove gpufleet's quarantine taint (the other taints stay)."""
    from gpufleet.verify import quarantine
    from gpufleet.verify.kube import ApiError

    try:
        why = quarantine.release(api, node)
    except quarantine.NotQuarantined as e:
        raise CommandError(f"--return {node}: {e}") from None
    except ApiError as e:
        raise CommandError(f"--return {node} on site {site}: {e}") from None
    print(f"returned node {node} on site {site} (it was quarantined: {why}); new pods may be placed on it again")


def _print_plan(suite: suites.Suite, format: Format) -> None:
    from gpufleet.render import verify as render
    from gpufleet.verify.results import Report, planned

    if format is Format.json:
        print(json.dumps(render.plan_dict(suite), indent=1))
    elif format is Format.markdown:
        print(render.markdown(Report(suite, [planned(c) for c in suite.checks])), end="")
    else:
        print(render.plan_text(suite), end="")


def _print_report(report: Report, format: Format) -> None:
    from gpufleet.render import verify as render

    if format is Format.json:
        print(render.to_json(report))
    elif format is Format.markdown:
        print(render.markdown(report), end="")
    else:
        print(render.results_text(report), end="")
