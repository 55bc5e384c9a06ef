"""Showback (`gpufleet cost --actual`) as text and JSON: per tenant, planned against allocated, used and idle."""

from __future__ import annotations

import json

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gpufleet.render.common import usd, usd_total
from gpufleet.showback.showback import LEVEL, Money, Showback


def _money(m: Money | None) -> str:
    return "-" if m is None else usd_total(m.usd, m.complete)


def _hours(v: float | None) -> str:
    return "-" if v is None else f"{v:,.2f}"


def showback_text(sb: Showback, console: Console) -> None:
    """The tenants' table with the estate's total, then each tenant's pools and the notes."""
    span = f"{sb.start:%Y-%m-%d %H:%M} to {sb.end:%Y-%m-%d %H:%M} UTC, {sb.hours:g} h"
    if sb.asked_window:
        span += f" (only what Prometheus keeps of the {sb.asked_window} asked)"
    table = Table(
        title=f"Showback: {escape(sb.estate)} ({escape(sb.environment)}), {span}",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for name in ("tenant", "planned $", "allocated GPU-h", "allocated $", "used GPU-h", "idle GPU-h", "idle $"):
        table.add_column(name, justify="left" if name == "tenant" else "right", no_wrap=True)
    for t in sb.tenants:
        name = t.tenant if t.is_tenant or t.planned is not None else f"{t.tenant} (not a tenant)"
        table.add_row(
            escape(name),
            _money(t.planned),
            _hours(t.allocated),
            _money(t.allocated_usd) if t.pools else "-",
            _hours(t.used),
            _hours(t.idle),
            _money(t.idle_usd) if t.pools else "-",
        )
    table.add_section()
    table.add_row(
        "estate",
        _money(sb.planned),
        _hours(sb.gpu_hours("allocated")),
        _money(sb.allocated_usd),
        _hours(sb.gpu_hours("used")),
        _hours(sb.gpu_hours("idle")),
        _money(sb.idle_usd),
    )
    console.print(table)
    console.print(
        f"planned: the tenant's quota share of the pools at {LEVEL} size over the window; allocated: GPUs its running "
        "pods requested; used: the sum of their GPUs' utilisation; idle = allocated - used",
        markup=False,
    )
    console.print(f"from: {', '.join(sb.sources)}", markup=False)
    for t in sb.tenants:
        for p in t.pools:
            rate = "unpriced" if p.usd_per_gpu_hour is None else f"{usd(p.usd_per_gpu_hour, 4)}/GPU-h"
            console.print(
                f"  {t.tenant} on {p.pool} ({rate}): allocated {_hours(p.allocated)} GPU-h {usd(p.allocated_usd)}, "
                f"used {_hours(p.used)}, idle {_hours(p.idle)} GPU-h {usd(p.idle_usd)}",
                markup=False,
            )
    for note in sb.notes:
        console.print(f"[yellow]note:[/yellow] {escape(note)}")


def showback_json(sb: Showback) -> str:
    return json.dumps(sb.to_dict(), indent=2)
