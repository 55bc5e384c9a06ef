"""`gpufleet charts`: the local chart cache the reality checks render from."""

from __future__ import annotations

from typing import Annotated

import typer

from gpufleet.cli.errors import CommandError
from gpufleet.cli.options import ChartCacheOpt, err, out


def pull(
    chart_cache: ChartCacheOpt = None,
    name: Annotated[list[str] | None, typer.Option("--chart", help="Only this chart (repeatable).")] = None,
    missing: Annotated[
        bool, typer.Option("--missing", help="Only the charts the cache does not hold yet at their pinned version.")
    ] = False,
) -> None:
    """Download every chart versions.py pins into the cache, each checked (repository digest, name, version)."""
    from gpufleet.charts.cache import ChartCache, ChartCacheError, pinned_charts
    from gpufleet.charts.pull import PullError
    from gpufleet.charts.pull import pull as fetch

    cache = ChartCache(chart_cache)
    charts = [c for c in pinned_charts() if not name or c.name in name]
    unknown = sorted(set(name or []) - {c.name for c in pinned_charts()})
    if unknown:
        raise CommandError(f"--chart: not pinned in versions.py: {', '.join(unknown)}")
    failed = 0
    for chart in charts:
        if missing:
            try:
                held = cache.locate(chart)
            except ChartCacheError:
                pass
            else:
                out.print(f"{chart.name} {chart.version}: {held.path} (already in the cache)", markup=False)
                continue
        try:
            got = fetch(chart, cache)
        except PullError as e:
            failed += 1
            err.print(f"error: {e}", markup=False)
            continue
        out.print(
            f"{chart.name} {chart.version}: {got.path} (sha256 {got.sha256}; checked against {got.verified})",
            markup=False,
        )
    if failed:
        raise typer.Exit(1)


def list_charts(chart_cache: ChartCacheOpt = None) -> None:
    """Every pinned chart and whether the cache holds it."""
    from gpufleet.charts.cache import ChartCache, ChartCacheError, pinned_charts

    cache = ChartCache(chart_cache)
    for chart in pinned_charts():
        try:
            found = cache.locate(chart)
            state = f"cached at {found.path}" + (f" ({found.note})" if found.note else "")
        except ChartCacheError as e:
            state = f"missing: {e}"
        out.print(f"{chart.name} {chart.version} ({chart.repository}): {state}", markup=False)
