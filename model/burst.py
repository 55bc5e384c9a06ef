"""Burst windows: what a burst pool may grow to at a given moment, and how its capacity stops.

Pure functions, shared by the AWS node pools (node-group bounds), the MultiKueue wiring (burst quotas) and the
`gpufleet burst` command.

- A pool marked `burst` idles at zero nodes.
- A window raises a cap, not a node count: the cloud worker's Kueue may admit up to it, and the autoscaler grows
  the pool for that work only.
- Phases: open, draining, idle (`window_phase`).
- The program judges the phase at the later of the state's `as_of` and now (`judged_at`). So an `up` never
  reopens what a burst command closed, and a plain `up` after expiry closes the window by itself.
- While a window holds capacity, a backstop stops it where it lives, with no runner (`backstop`).
- What windows cost and how they are booked: model/burst_spend.py.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal

from model import kinds
from model.capacity import gpu_units
from model.spec import (
    AwsNodePool,
    AwsSite,
    BurstWindow,
    EfaFabric,
    EstateSpec,
    Problem,
    Scaling,
)
from model.spec.burst import CLOCK_SKEW_MINUTES

WindowPhase = Literal["idle", "open", "draining"]


def grace(spec: EstateSpec) -> dt.timedelta:
    """How long cloud work may finish after a window closes or expires (`burst.grace_minutes`)."""
    return dt.timedelta(minutes=spec.burst.grace_minutes if spec.burst is not None else 0)


def drain_ends(spec: EstateSpec, window: BurstWindow) -> dt.datetime:
    """When the pool shrinks to zero: the window's expiry plus the grace."""
    return window.expires + grace(spec)


def window_phase(spec: EstateSpec, window: BurstWindow | None, now: dt.datetime) -> WindowPhase:
    """The window's phase at `now`.

    - `open` (start <= now < expires): admitting; the pool may grow to the cap.
    - `draining` (expires <= now < expires + grace, `burst.grace_minutes`): nothing new is admitted (the cloud
      ClusterQueues hold), running work may finish or checkpoint on its nodes, idle nodes are removed.
    - `idle` (no window, not started yet, or past the grace): the queues hold and drain (admitted work is evicted
      back to the manager, which dispatches it again), quotas are zero and the pool shrinks to zero nodes.
    """
    if window is None or now < window.start:
        return "idle"
    if now < window.expires:
        return "open"
    return "draining" if now < drain_ends(spec, window) else "idle"


def judged_at(as_of: dt.datetime, now: dt.datetime) -> dt.datetime:
    """The moment an `up` judges the window at: the later of the state's `as_of` and `now`.

    `as_of` alone would keep an expired window open until a burst command records its expiry; `now` alone would
    let a machine whose clock is behind AWS's reopen a window a burst command closed.
    """
    return max(as_of, now)


CLOCK_SKEW = dt.timedelta(minutes=CLOCK_SKEW_MINUTES)  # model.spec.burst says why


def stop_phase(spec: EstateSpec, window: BurstWindow | None, now: dt.datetime) -> WindowPhase:
    """The phase the program sets what a stop also sets (the burst ClusterQueues' stopPolicy, a burst node group's
    bounds and stopped taint): once the window has started, its phase CLOCK_SKEW after `now`.

    The stops act at the expiry and at the end of the grace, and an `up` that refreshes their objects takes them
    back to the program's value (components/hybrid/burst_stop.py, PATCH_FORCE; the node group's scaling config and
    taints). Judged by a clock a few minutes slow, that value would undo a stop that had just acted. Judged a
    little late, an `up` in the minutes before a stop applies it early: admission and capacity stop sooner, never
    later."""
    if window is None or now < window.start:
        return window_phase(spec, window, now)
    return window_phase(spec, window, now + CLOCK_SKEW)


def burst_cap(spec: EstateSpec, pool: AwsNodePool, window: BurstWindow | None, now: dt.datetime) -> int:
    """Most nodes the burst pool may have now: the window's while it is open or draining, else zero."""
    if window is None or window.pool != pool.name or window_phase(spec, window, now) == "idle":
        return 0
    return window.nodes


def admitting(spec: EstateSpec, window: BurstWindow | None, now: dt.datetime) -> bool:
    """The cloud worker admits new work only while a window is open."""
    return window_phase(spec, window, now) == "open"


def effective_scaling(spec: EstateSpec, pool: AwsNodePool, window: BurstWindow | None, now: dt.datetime) -> Scaling:
    """The node-count bounds `pool` has now: its own, or for a burst pool none to the window's cap, starting at
    zero (the autoscaler sets the desired count from waiting work)."""
    if not pool.burst:
        return pool.scaling
    return Scaling(min=0, desired=0, max=burst_cap(spec, pool, window, now))


def burst_group_size(
    spec: EstateSpec, pool: AwsNodePool, window: BurstWindow | None, now: dt.datetime
) -> tuple[int, int, bool]:
    """A burst pool's node group: (desired size, max size, whether the program sends that desired size).

    The desired size belongs to the cluster autoscaler, so inside a window the stack ignores it. On a later change
    of the bounds Pulumi then sends the value its state holds (https://www.pulumi.com/docs/iac/concepts/options/
    ignorechanges/), and the burst commands' `up` refreshes the group first, so that value is the live count
    (gpufleet/burst/driver.py). Any figure the program sent instead would be wrong: 0 stops nodes still draining,
    a replaced window's cap starts idle ones. So:
    - stopped (`group_stopped`): 0 is sent; nothing may run.
    - inside a window: the desired size is never sent. The max keeps room for the nodes of a window it replaced
      (`draining_nodes`), so the bounds never shrink under them.
    """
    if window is None or group_stopped(spec, pool, window, now):
        return 0, 1, True  # EKS requires a max of at least 1
    return 0, max(1, window.nodes, window.draining_nodes or 0), False


def group_stopped(spec: EstateSpec, pool: AwsNodePool, window: BurstWindow | None, now: dt.datetime) -> bool:
    """Whether the burst pool's node group is stopped: idle bounds and the stopped taint, as the AWS stop leaves it
    (components/aws/backstop.py). Judged by `stop_phase`, so a refreshing `up` from a slow clock cannot undo the
    stop; the program declares the taint too, so no later `up` removes it while no window holds the pool."""
    return window is None or window.pool != pool.name or stop_phase(spec, window, now) == "idle"


@dataclass(frozen=True)
class Backstop:
    """When a window's capacity stops by itself, enforced where it lives (no runner, no reachable API needed).

    - `hold_at` (the expiry): the cloud worker's burst ClusterQueues hold, so nothing new is admitted.
    - `stop_at` (expiry + grace): the queues hold and drain, and AWS scales the burst node group to zero.

    - `aws_stop_at`: when the AWS schedule fires, `stop_at` or later (`aws_stop`).
    All are whole minutes (UTC), rounded up: cron and EventBridge Scheduler fire on the minute, never before.
    """

    pool: str
    hold_at: dt.datetime
    stop_at: dt.datetime
    aws_stop_at: dt.datetime


# The AWS stop's least distance from the expiry. A one-time schedule fires in the minute it names (Scheduler user
# guide, schedule-types.html#one-time); one whose time has passed is refused at create (third-party:
# https://github.com/DefangLabs/pulumi-defang/pull/425; unverified offline). `close` records the expiry as now, then its `up` refreshes the estate before
# it sends the schedule (gpufleet/burst/driver.py): minutes on a large estate. Judged from the expiry, not the
# program's clock, so bookings know the same time and a later `up` leaves the schedule be.
AWS_STOP_LEAD = dt.timedelta(minutes=10)


def stop_after_expiry(spec: EstateSpec) -> dt.timedelta:
    """How long after its expiry a window's node group is stopped by AWS: the grace, at least AWS_STOP_LEAD."""
    return max(grace(spec), AWS_STOP_LEAD)


def aws_stop(spec: EstateSpec, window: BurstWindow) -> dt.datetime:
    """When the AWS schedule stops the node group: expiry + grace, at least AWS_STOP_LEAD after the expiry."""
    return minute_at_or_after(window.expires + stop_after_expiry(spec))


def backstop(spec: EstateSpec, window: BurstWindow | None, now: dt.datetime) -> Backstop | None:
    """The backstop of the window while it holds capacity at `now` (open or draining); None when idle."""
    if window is None or window_phase(spec, window, now) == "idle":
        return None
    drain = minute_at_or_after(drain_ends(spec, window))
    return Backstop(window.pool, minute_at_or_after(window.expires), drain, aws_stop(spec, window))


def minute_at_or_after(t: dt.datetime) -> dt.datetime:
    """`t` in UTC, rounded up to a whole minute."""
    utc = t.astimezone(dt.UTC)
    whole = utc.replace(second=0, microsecond=0)
    return whole if whole == utc else whole + dt.timedelta(minutes=1)


# ------------------------------------------------------------------------------------------- burst pools


def cloud_site(spec: EstateSpec) -> AwsSite:
    """The AWS site a hybrid estate bursts to."""
    assert spec.burst is not None, "not a hybrid estate (no burst policy)"
    site = kinds.of(spec.site(spec.burst.cloud_site)).aws_site
    assert site is not None, "the burst site is not an aws site"  # the schema guarantees it (model.rules.burst)
    return site


def burst_pools(spec: EstateSpec) -> list[AwsNodePool]:
    """The pools of the cloud site that idle at zero and grow in windows."""
    if spec.burst is None:
        return []
    return [p for p in cloud_site(spec).node_pools if p.burst]


def pool_zone(site: AwsSite, pool: AwsNodePool) -> str | None:
    """The one AZ a pool runs in: its EFA fabric's, else its own (None: any of the site's AZs)."""
    fabric = next((f for f in site.fabrics if f.name == pool.fabric), None)
    if isinstance(fabric, EfaFabric):
        return fabric.availability_zone
    return pool.availability_zone


@dataclass(frozen=True)
class BurstQuota:
    """What one burst pool offers to Kueue right now (all zero outside a window)."""

    flavor: str  # the pool name: the ResourceFlavor's name on manager and worker
    gpus: int  # whole GPUs
    gpu_units: int  # schedulable units: GPUs x MIG slices per GPU or time-slicing replicas
    cpu: int  # vCPUs of the nodes (catalog), so workloads requesting cpu are admissible
    memory_gib: int

    @property
    def open(self) -> bool:
        return self.gpus > 0


def burst_quotas(spec: EstateSpec, window: BurstWindow | None, now: dt.datetime) -> list[BurstQuota]:
    """Per burst pool, the quota it offers now: the window's cap x the instance's GPUs/vCPUs/memory (kept while
    draining, so work admitted under it stays within quota; zero when idle)."""
    out = []
    for pool in burst_pools(spec):
        nodes = burst_cap(spec, pool, window, now)
        inst = pool.instance
        out.append(
            BurstQuota(
                flavor=pool.name,
                gpus=nodes * inst.gpu_count,
                gpu_units=gpu_units(nodes * inst.gpu_count, pool.sharing, pool.gpu_model),
                cpu=nodes * inst.vcpus,
                memory_gib=nodes * inst.memory_mib // 1024,
            )
        )
    return out


def window_problems(spec: EstateSpec, window: BurstWindow) -> list[Problem]:
    """Ways a window in stack config does not fit the estate (paths relative to the window value)."""
    if spec.burst is None:
        return [Problem("", "the estate has no burst policy, so it cannot have a burst window")]
    pools = {p.name: p for p in burst_pools(spec)}
    pool = pools.get(window.pool)
    if pool is None:
        return [Problem("pool", f"{window.pool} is not a burst pool (burst pools: {', '.join(pools)})")]
    problems = []
    if window.instance_type != pool.instance_type:
        problems.append(
            Problem(
                "instance_type",
                f"pool {pool.name} runs {pool.instance_type}, not {window.instance_type}; a window grows an "
                "existing burst pool and cannot change its instance type",
            )
        )
    if window.nodes > pool.scaling.max:
        problems.append(Problem("nodes", f"{window.nodes} nodes exceed pool {pool.name}'s max of {pool.scaling.max}"))
    return problems  # a changed zone: model.node_groups judges it (it replaces the node group)
