"""Burst windows: what size a burst pool has at a given moment.

Pure functions, shared by the AWS node pools (node-group scaling), the tenancy layer (burst quotas) and the
`gpufleet burst` command. A pool marked `burst` idles at zero; while a window for it is open it has the
window's size; once the window has expired any `up` shrinks it to zero again, even if nobody closed it.
"""

from __future__ import annotations

import datetime as dt

from components.spec import AwsNodePool, BurstWindow, Scaling


def open_window(window: BurstWindow | None, now: dt.datetime) -> BurstWindow | None:
    return window if window is not None and window.is_open(now) else None


def effective_scaling(pool: AwsNodePool, window: BurstWindow | None, now: dt.datetime) -> Scaling:
    """The node-group bounds `pool` gets now: its own, or for a burst pool the open window's (else zero)."""
    if not pool.burst:
        return pool.scaling
    w = open_window(window, now)
    if w is None or w.pool != pool.name:
        return Scaling(min=0, desired=0, max=0)
    return Scaling(min=0, desired=w.nodes, max=w.nodes)


def burst_gpus(pool: AwsNodePool, window: BurstWindow | None, now: dt.datetime) -> int:
    """GPUs the burst pool offers now (0 outside a window)."""
    return effective_scaling(pool, window, now).max * pool.gpus_per_node
