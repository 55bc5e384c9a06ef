"""`gpufleet burst status` as a table."""

from __future__ import annotations

import datetime as dt

from rich.markup import escape
from rich.table import Table

from gpufleet.burst.flows import Status


def status_table(stack: str, s: Status, now: dt.datetime) -> Table:
    """The window (open, expired or not started), time left, spend this month and the budget left."""
    table = Table(title=f"burst status of {escape(stack)} ({now:%Y-%m-%d %H:%M} UTC)", show_header=False)
    w = s.window
    if w is None:
        table.add_row("window", "none")
    else:
        state = "open" if s.open else ("expired" if now >= w.expires else "not started")
        state = "overrun" if w.overrun_since is not None else state
        table.add_row(
            "window", escape(f"{state}: {w.nodes} x {w.instance_type} on pool {w.pool} in {w.availability_zone}")
        )
        table.add_row("expires", f"{w.expires:%Y-%m-%d %H:%M} UTC")
        if s.time_left is not None:
            table.add_row("time left", f"{s.time_left.total_seconds() / 3600:.1f} h")
        if w.overrun_since is not None:
            table.add_row(
                "note",
                f"overrun: its node group was not at zero after the backstop time; booked until "
                f"{w.overrun_since:%Y-%m-%d %H:%M} UTC, `gpufleet burst reconcile` books the rest",
            )
        elif not s.open and now >= w.expires:
            table.add_row("note", "expired: `gpufleet burst reconcile` stops admission, empties the pool, books it")
    table.add_row("spent this month", f"${s.spend_usd:,.2f}")
    if s.committed_usd:
        table.add_row("committed (worst case, to expiry + grace + stop lag)", f"${s.committed_usd:,.2f}")
    table.add_row("budget", f"${s.budget_usd:,.2f}")
    table.add_row("budget left", f"${s.budget_left_usd:,.2f}")
    return table
