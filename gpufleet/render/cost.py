"""The cost envelope as text, Markdown and JSON (`gpufleet cost`, and the cost parts of preview and diff)."""

from __future__ import annotations

import json
from collections.abc import Callable

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gpufleet.render.common import cell, inline, month, usd, usd_total
from gpufleet.review.cost.envelope import EstateCost, PoolCost, Total
from gpufleet.review.cost.options import comparison_line, steady_pools
from gpufleet.review.cost.prices import HOURS, LEVELS
from gpufleet.review.cost.usage import PROFILE_HINT

At = Callable[[str], float | None]  # $/h at a level ("min", "desired", "max")

# ------------------------------------------------------------------------------------------------- text


def _what(p: PoolCost, markdown: bool) -> str:
    """What a pool runs on: the instance type of a cloud pool, the GPUs of owned servers."""
    if p.instance_type is not None:
        return f"`{p.instance_type}`" if markdown else p.instance_type
    return f"{p.gpu_model} × {p.gpus_per_node}" + (" (owned)" if markdown else "")


def _levels_text(at: At, digits: int = 2) -> str:
    return "  ".join(f"{lv} {usd(at(lv), digits)}" for lv in LEVELS)


def _total_text(total: Total, monthly: bool = False) -> str:
    """A total at each size: "≥ $X" while it leaves something out, "unknown" when nothing in it is priced."""
    at = total.hourly.monthly if monthly else total.hourly.at
    text = "  ".join(f"{lv} {usd_total(at(lv), total.complete, 0 if monthly else 2)}" for lv in LEVELS)
    return text + (f" (+ {len(total.unpriced)} unpriced)" if total.unpriced and not monthly else "")


def budget_verdict(budget: float, at_max: float | None, total: Total) -> tuple[str, bool]:
    """The budget verdict at max size (`EstateCost.budget_hour`: burst pools at their max) and whether it is a
    failure. A figure over the budget is over whatever is left out; a figure within it proves nothing while a
    price is missing (usage-billed items are outside the hourly budget)."""
    size = "max size" + (" (burst pools at their max size)" if at_max != total.hourly.at("max") else "")
    if at_max is not None and at_max > budget:
        return f"over the budget of {usd(budget)}/h: {usd_total(at_max, total.complete)}/h at {size}", True
    if total.no_price:
        priced = "" if at_max is None else f" (the priced part is {usd(at_max)}/h)"
        return (
            f"price missing for {', '.join(total.no_price)}: cannot check the budget of {usd(budget)}/h{priced}",
            True,
        )
    return f"within the budget of {usd(budget)}/h: {usd_total(at_max, total.complete)}/h at {size}", False


def cost_text(cost: EstateCost, console: Console, summary_only: bool = False) -> None:
    """`gpufleet cost`: the headline first, then (unless `summary_only`) where it comes from."""
    cost_headline_text(cost, console)
    if not summary_only:
        console.print()
        cost_details_text(cost, console)


def cost_headline_text(cost: EstateCost, console: Console) -> None:
    """The estate's totals per hour and month, what they leave out, the budget verdict: a report's summary."""
    total = cost.total()
    console.print(f"[bold]Estate[/bold]: {escape(_total_text(total))}")
    per_month = "  ".join(f"{lv} {usd_total(v, total.complete, 0)}" for lv, v in cost.monthly().items())
    console.print(f"  per month: {per_month}{_month_basis(cost)}", markup=False)
    if total.unpriced:
        console.print(f"[red]not in the totals (no figure): {escape(', '.join(total.unpriced))}[/red]")
    if set(total.unpriced) - set(total.no_price):  # billed on usage, with no usage figure
        console.print(f"  usage-billed items get a figure from a usage profile: {PROFILE_HINT}", markup=False)
    if cost.budget_usd_per_hour is not None:
        verdict, bad = budget_verdict(cost.budget_usd_per_hour, cost.budget_hour(), total)
        console.print(f"Budget: {'[red]' if bad else ''}{escape(verdict)}{'[/red]' if bad else ''}")


def cost_details_text(cost: EstateCost, console: Console) -> None:
    """Pools, storage, the rest of the bill, per site and tenant, what is not included, the prices used."""
    # No vertical rules (box.SIMPLE_HEAD): instance names and dollar figures stay on one line at 80 columns.
    table = Table(
        title=f"Cost envelope: {escape(cost.estate)} ({escape(cost.environment)}), $ per hour (a month is {HOURS} h)",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("site/pool", no_wrap=True)
    table.add_column("instance", no_wrap=True)
    table.add_column("nodes", justify="right", no_wrap=True)
    table.add_column("each", justify="right", no_wrap=True)
    for lv in LEVELS:
        table.add_column(lv, justify="right", no_wrap=True)
    for p in cost.pools:
        what = _what(p, markdown=False)
        nodes = "/".join(str(p.nodes[lv]) for lv in LEVELS)
        # Dollars without the sign (the title says $ per hour), so the row fits 80 columns.
        cells = [usd(p.hourly.at(lv)).lstrip("$") if p.priced else "unpriced" for lv in LEVELS]
        unit = usd(p.price.usd).lstrip("$") if p.price else "unpriced"
        table.add_row(escape(f"{p.site}/{p.pool}"), escape(what), nodes, unit, *cells)
    console.print(table)
    for p in cost.pools:
        for n in p.notes:
            console.print(f"  [dim]{escape(f'{p.pool}: {n}')}[/dim]")
    if cost.storage:
        console.print("[bold]Storage[/bold]")
        for t in cost.storage:
            amount = f"{usd(t.monthly_usd, 0)}/month" if t.status == "priced" else t.status
            console.print(f"  {t.site}/{t.tier} ({t.kind}): {amount} — {t.note}", markup=False)
    if cost.bill:
        console.print("[bold]Rest of the bill[/bold] ($ per hour at min / desired / max)")
        for ln in cost.bill:
            amount = _levels_text(ln.hourly.at) if ln.hourly else ln.status
            if ln.hourly and ln.price and ln.price.unit == "key-month":  # KMS keys: a few $ a month, $0.0x an hour
                amount = f"{usd((ln.hourly.at('max') or 0.0) * HOURS)}/month"
            console.print(
                f"  {ln.site}/{ln.item}: {ln.quantity}: {amount}" + (f" — {ln.note}" if ln.note else ""), markup=False
            )
    console.print("[bold]Per site[/bold]")
    for s in cost.sites():
        console.print(f"  {s}: {_total_text(cost.site_total(s))}", markup=False)
    console.print("[bold]Per tenant[/bold] (quota share of each pool)")
    for tenant, share in cost.tenants().items():
        console.print(f"  {tenant}: {_total_text(share)}", markup=False)
    if steady := steady_pools(cost.pools):
        console.print("[bold]Purchase options[/bold] (steady pools: their min nodes run every hour)")
        for c in steady:
            console.print(f"  {comparison_line(c)}", markup=False)
    if lines := burst_lines(cost):
        console.print("[bold]Burst[/bold] (what the burst policy lets windows cost)")
        for line in lines:
            console.print(f"  {line}", markup=False)
    console.print("[dim]Not included: " + escape("; ".join(cost.excluded)) + "[/dim]")
    console.print("[bold]Prices used[/bold]")
    for ref in cost.prices():
        flag = "" if ref.verified else " [yellow](unverified)[/yellow]"
        console.print(f"  {escape(f'{usd(ref.usd, 4)}/{ref.unit} ({ref.date}) {ref.source}')}{flag}")


def _month_basis(cost: EstateCost) -> str:
    """Which pools a month does not count at 730 h: burst pools (their month ceiling), capacity blocks (their
    hours)."""
    b = cost.burst
    parts = []
    if b is not None and b.month_ceiling_usd is not None:
        parts.append(f"max counts the burst pools at their month ceiling, {usd(b.month_ceiling_usd, 0)}, not {HOURS} h")
    blocks = [f"{p.pool} {p.month_hours:g} h" for p in cost.pools if p.month_hours != HOURS]
    if blocks:
        parts.append(f"capacity blocks count their own hours: {', '.join(blocks)}")
    return f" ({'; '.join(parts)})" if parts else ""


def burst_lines(cost: EstateCost) -> list[str]:
    """What bursting can cost: an hour at max size, the budget in hours, one window, a month; the idle site."""
    b = cost.burst
    if b is None:
        return []
    pools = ", ".join(f"{p.pool}: 0-{p.max_nodes} × {p.instance_type}" for p in b.pools)
    if b.usd_per_hour_at_max is None:
        return [f"{pools}: unpriced (no catalog price for a burst pool's instance type)"]
    idle = cost.site_total(b.site).hourly.at("min")
    out = [
        f"{pools}: {usd(b.usd_per_hour_at_max)}/h at max size; the budget of {usd(b.budget_usd, 0)}/month "
        f"buys {b.budget_hours_at_max or 0:,.1f} h at max size",
        f"one window: at most {b.max_window_hours} h + {b.stop_hours * 60:g} min after expiry until stopped "
        f"({b.grace_hours * 60:g} min grace, the AWS stop and its lag) at max size = {usd(b.longest_window_usd)}",
        f"a month: at most {usd(b.month_ceiling_usd, 0)} (a window opens only when its worst case, "
        f"{usd(b.after_expiry_usd)} after expiry at max size included, fits what is left of the budget; "
        f"730 h at max size would be {usd(b.usd_per_hour_at_max * HOURS, 0)})",
    ]
    if (w := b.window) is not None:
        at_most = "unpriced" if w.usd_at_most is None else f"at most {usd(w.usd_at_most)}"
        out.append(
            f"the window in the stack ({w.state}): {w.nodes} × {w.instance_type} from {w.start:%Y-%m-%d %H:%M} to "
            f"{w.expires:%Y-%m-%d %H:%M} UTC, grace until {w.drain_ends:%H:%M}: {at_most}"
        )
    if idle is not None:
        out.append(
            f"idle (no window): site {b.site} still costs {usd(idle)}/h = {usd(idle * HOURS, 0)}/month "
            "(its control plane, NAT gateways, system nodes and the rest of its bill above)"
        )
    return out


# --------------------------------------------------------------------------------------------- markdown


def cost_summary_table(at: At, complete: bool = True, monthly: At | None = None) -> list[str]:
    """$/hour and $/month at min, desired and max size: the cost lines of a comment's summary ("≥" while the
    totals leave something out, "unknown" where nothing is priced). `monthly`: the month's figures when they are
    not 730 h of the hourly ones (burst pools count their month ceiling)."""
    per_month = monthly or (lambda lv: month(at(lv)))
    return [
        "| cost | min | desired | max |",
        "|---|---:|---:|---:|",
        f"| $/hour | {' | '.join(usd_total(at(lv), complete) for lv in LEVELS)} |",
        f"| $/month | {' | '.join(usd_total(per_month(lv), complete, 0) for lv in LEVELS)} |",
    ]


def budget_line(budget: float | None, at_max: float | None, no_price: tuple[str, ...] | list[str] = ()) -> list[str]:
    if budget is None:
        return []
    if at_max is not None and at_max > budget:
        at_least = "at least " if no_price else ""
        return ["", f"> ❌ At max size the estate costs {at_least}{usd(at_max)}/h, over its budget of {usd(budget)}/h."]
    if no_price:
        return ["", f"> ⚠️ Price missing for {', '.join(no_price)}: cannot check the budget of {usd(budget)}/h."]
    if at_max is None:
        return []
    return ["", f"Budget: {usd(at_max)}/h at max size of {usd(budget)}/h allowed."]


def unpriced_line(unpriced: tuple[str, ...] | list[str]) -> list[str]:
    return (
        [
            f"> ⚠️ Totals are lower bounds (≥): {len(unpriced)} item(s) have no figure (no catalog price, or billed on "
            f"usage with no usage profile: {PROFILE_HINT}): {', '.join(unpriced)}"
        ]
        if unpriced
        else []
    )


def cost_summary(cost: EstateCost) -> list[str]:
    """The summary table, the budget verdict and what the totals leave out."""
    total = cost.total()
    return [
        *cost_summary_table(total.hourly.at, total.complete, cost.monthly().get),
        *budget_line(cost.budget_usd_per_hour, cost.budget_hour(), total.no_price),
        *unpriced_line(total.unpriced),
    ]


def cost_markdown(cost: EstateCost, summary_only: bool = False) -> str:
    """`gpufleet cost -f markdown`: heading and summary, then (unless `summary_only`) the tables."""
    total = cost.total()
    lines = [f"### gpufleet cost: `{cost.estate}` ({cost.environment})", ""]
    lines += cost_summary_table(total.hourly.at, total.complete, cost.monthly().get)
    lines += budget_line(cost.budget_usd_per_hour, cost.budget_hour(), total.no_price)
    lines += unpriced_line(total.unpriced)
    if summary_only:
        return "\n".join(lines) + "\n"
    return "\n".join(lines) + "\n\n" + cost_tables(cost) + "\n"


def cost_tables(cost: EstateCost) -> str:
    """Tables: pools, storage, sites, tenants, prices used; then what is not included."""
    out = [
        f"Hourly $ at min / desired / max size; a month is {HOURS} h.",
        "",
        "| site | pool | instance / GPU | nodes min/desired/max | $/unit-hour | $/GPU-hour | min | desired | max "
        "| $/month at max |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in cost.pools:
        what = _what(p, markdown=True)
        unit = f"{usd(p.price.usd, 4)}/{p.price.unit}" if p.price else "**unpriced**"
        cells = [usd(p.hourly.at(lv)) if p.priced else "unpriced" for lv in LEVELS]
        monthly = usd(cost.pool_month_ceiling(p), 0) if p.priced else "unpriced"
        nodes = " / ".join(str(p.nodes[lv]) for lv in LEVELS)
        per_gpu = usd(p.usd_per_gpu_hour, 4) if p.usd_per_gpu_hour is not None else "-"
        out.append(
            f"| {p.site} | {p.pool}{' (burst)' if p.burst else ''} | {what} | {nodes} | {unit} | {per_gpu} "
            f"| {' | '.join(cells)} | {monthly} |"
        )
    notes = [f"- `{p.pool}`: {inline(n)}" for p in cost.pools for n in p.notes]
    if notes:
        out += ["", *notes]
    if burst := burst_lines(cost):
        out += ["", "Burst (what the burst policy lets windows cost):", "", *(f"- {inline(line)}" for line in burst)]
    if cost.storage:
        out += ["", "| site | storage tier | kind | $/month | basis |", "|---|---|---|---:|---|"]
        for t in cost.storage:
            amount = usd(t.monthly_usd, 0) if t.status == "priced" else t.status
            basis = f"{t.quantity} × {usd(t.price.usd, 3)}/GB-month; " if t.status == "priced" and t.price else ""
            out.append(f"| {t.site} | {t.tier} | {t.kind} | {amount} | {cell(basis + t.note)} |")
    if cost.bill:
        out += ["", "| site | rest of the bill | quantity (min/desired/max) | min | desired | max | basis |"]
        out.append("|---|---|---|---:|---:|---:|---|")
        for ln in cost.bill:
            cells = [usd(ln.hourly.at(lv)) if ln.hourly else ln.status for lv in LEVELS]
            unit = f"{usd(ln.price.usd, 4)}/{ln.price.unit}; " if ln.price else ""
            out.append(f"| {ln.site} | {ln.item} | {ln.quantity} | {' | '.join(cells)} | {cell(unit + ln.note)} |")
    out += ["", "| site | min | desired | max |", "|---|---:|---:|---:|"]
    for s in cost.sites():
        st = cost.site_total(s)
        out.append(f"| {s} | {' | '.join(usd_total(st.hourly.at(lv), st.complete) for lv in LEVELS)} |")
    total = cost.total()
    estate = " | ".join("**" + usd_total(total.hourly.at(lv), total.complete) + "**" for lv in LEVELS)
    out.append(f"| **estate** | {estate} |")
    tenants = cost.tenants()
    if tenants:
        out += ["", "Per tenant: its `gpu_quota` on a pool ÷ the pool's GPU units, times the pool's cost.", ""]
        out += ["| tenant | min | desired | max | $/month at desired |", "|---|---:|---:|---:|---:|"]
        for tenant, share in tenants.items():
            f, ok = share.hourly, share.complete
            out.append(
                f"| {tenant} | {' | '.join(usd_total(f.at(lv), ok) for lv in LEVELS)} "
                f"| {usd_total(f.monthly('desired'), ok, 0)} |"
            )
    if steady := steady_pools(cost.pools):
        out += ["", "Purchase options (steady pools: their min nodes run every hour):", ""]
        out += [f"- {inline(comparison_line(c))}" for c in steady]
    out += ["", "Prices used:", ""]
    for ref in cost.prices():
        flag = " *(not confirmed from a stored copy)*" if not ref.verified else ""
        out.append(f"- {usd(ref.usd, 4)}/{ref.unit}, {ref.date}: {inline(ref.source)}{flag}")
    out += ["", "Not included: " + "; ".join(cost.excluded) + "."]
    return "\n".join(out)


# ------------------------------------------------------------------------------------------------- json


def cost_json(cost: EstateCost) -> str:
    return json.dumps(cost.to_dict(), indent=1)
