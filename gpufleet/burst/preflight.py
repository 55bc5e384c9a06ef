"""Checks before a burst window opens: the burst policy, the pool and node count, then AWS and the budget.

`check_request` needs no AWS; `preflight` also asks EC2 (offered in the pool's AZ, the vCPU quota of the family,
room in a reservation) and prices the window against what is left of the month's burst budget.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from gpufleet.burst.aws import Aws, quota_family
from gpufleet.burst.errors import BurstError
from model import catalog
from model.aws_account import QUOTA_CODES
from model.burst import burst_pools, cloud_site, pool_zone
from model.burst_spend import (
    MIN_WINDOW_HOURS,
    hours_between,
    hours_text,
    latest_expiry,
    month_spans,
    node_hour_price,
    spend_in_month,
    stopped_by,
    window_price,
    window_start,
    worst_case,
)
from model.spec import AwsNodePool, BurstLedgerEntry, BurstWindow, EstateSpec


@dataclass(frozen=True)
class BurstRequest:
    gpus: int
    hours: float
    instance_type: str | None = None


@dataclass
class Preflight:
    """What the checks found; `window` is what `open` writes when they all pass."""

    window: BurstWindow
    region: str
    price_usd: float
    spend_usd: float
    budget_usd: float
    checks: list[str] = field(default_factory=list)

    @property
    def budget_left_usd(self) -> float:
        return round(self.budget_usd - self.spend_usd, 2)


def choose_pool(spec: EstateSpec, instance_type: str | None) -> AwsNodePool:
    pools = burst_pools(spec)
    if instance_type is None:
        return pools[0]
    try:
        catalog.instance_type(instance_type)
    except catalog.CatalogError as err:
        raise BurstError(str(err).strip("'\""), 2) from None
    for p in pools:
        if p.instance_type == instance_type:
            return p
    runs = ", ".join(f"{p.name} ({p.instance_type})" for p in pools)
    raise BurstError(
        f"no burst pool runs {instance_type}; burst pools: {runs}. Add a pool with burst: true for it to the "
        "cloud site first",
        2,
    )


def check_hours(hours: float, most: float = math.inf) -> None:
    """`--hours` (of open and extend): at least a minute (MIN_WINDOW_HOURS) and at most `most`, else exit 2."""
    if not MIN_WINDOW_HOURS <= hours <= most:  # also refuses nan
        limit = f" and at most the burst policy's max_window_hours ({most:g})" if math.isfinite(most) else ""
        raise BurstError(f"--hours must be at least a minute ({MIN_WINDOW_HOURS:.4f}){limit}; got {hours:g}", 2)
    if math.isinf(hours):
        raise BurstError(f"--hours must be a finite number of hours; got {hours:g}", 2)


def check_request(spec: EstateSpec, request: BurstRequest) -> tuple[AwsNodePool, int]:
    """The checks that need no AWS: the burst policy, the pool and the node count. Returns (pool, nodes)."""
    policy = spec.burst
    if policy is None:
        raise BurstError("the estate has no burst policy (`burst:`), so it cannot burst", 2)
    if request.gpus < 1:
        raise BurstError(f"--gpus must be at least 1, got {request.gpus}", 2)
    check_hours(request.hours, policy.max_window_hours)
    pool = choose_pool(spec, request.instance_type)
    itype = pool.instance_type
    if itype not in policy.allowed_instance_types:
        raise BurstError(
            f"{itype} is not allowed by the burst policy (allowed_instance_types: "
            f"{', '.join(policy.allowed_instance_types)})"
        )
    capacity = pool.capacity.type
    if capacity == "spot" and not policy.allow_spot:
        raise BurstError(f"pool {pool.name} buys spot capacity, but the burst policy does not allow_spot")
    if capacity == "capacity-block" and not policy.allow_capacity_blocks:
        raise BurstError(
            f"pool {pool.name} runs on a capacity block, but the burst policy does not allow_capacity_blocks"
        )
    per_node = pool.gpus_per_node
    nodes = math.ceil(request.gpus / per_node)
    if nodes > pool.scaling.max:
        raise BurstError(
            f"{request.gpus} GPUs need {nodes} x {itype} ({per_node} GPUs each), more than pool {pool.name}'s "
            f"max of {pool.scaling.max} nodes",
            2,
        )
    return pool, nodes


def preflight(
    spec: EstateSpec,
    ledger: Iterable[BurstLedgerEntry],
    request: BurstRequest,
    now: dt.datetime,
    aws: Aws,
) -> Preflight:
    """Check the request against the burst policy and AWS; raise BurstError naming the first thing that fails."""
    pool, nodes = check_request(spec, request)
    policy = spec.burst
    assert policy is not None
    itype, capacity, per_node = pool.instance_type, pool.capacity.type, pool.gpus_per_node
    checks = [f"{request.gpus} GPUs -> {nodes} x {itype} ({nodes * per_node} GPUs) for {request.hours:g} h"]

    site = cloud_site(spec)
    zone = pool_zone(site, pool)
    offered = aws.offered_zones(itype)
    candidates = [zone] if zone else list(site.availability_zones)
    usable = [z for z in candidates if z in offered]
    if not usable:
        raise BurstError(
            f"EC2 does not offer {itype} in {', '.join(candidates)} (offered in: {', '.join(offered) or 'no AZ'} of "
            f"{site.region}); pick another instance type or move the pool's fabric"
        )
    az = usable[0]
    checks.append(f"{itype} offered in {az}")

    vcpus = nodes * pool.instance.vcpus
    if capacity in ("capacity-reservation", "capacity-block"):
        checks.append(_reservation_check(aws, pool, nodes, az, now, request.hours))
    else:
        family = quota_family(itype)
        code, title = QUOTA_CODES[family]["spot" if capacity == "spot" else "on-demand"]
        limit = aws.quota_vcpus(code)
        in_use = aws.vcpus_running(family, spot=capacity == "spot")
        if limit is None:
            checks.append(
                f"quota {code} ({title}) not checked: Service Quotas is not available in {site.region}; "
                f"{in_use} + {vcpus} vCPUs of the family will run, EC2 refuses the nodes during `up` if that is "
                "over the quota"
            )
        elif in_use + vcpus > limit:
            raise BurstError(
                f"EC2 quota {code} ({title}) in {site.region} is {limit:g} vCPUs; {in_use} are in use and the window "
                f"needs {vcpus} more ({nodes} x {pool.instance.vcpus}). Request a quota increase first"
            )
        else:
            checks.append(f"quota {code} ({title}): {in_use} + {vcpus} of {limit:g} vCPUs")

    usd_per_hour, hours, price, spent = _budget(spec, ledger, pool, nodes, request, now, checks)
    window = window_of(pool, nodes, az, now, hours, request.gpus, usd_per_hour)
    return Preflight(window, site.region, price, spent, policy.budget_usd, checks)


def window_of(
    pool: AwsNodePool, nodes: int, zone: str, now: dt.datetime, hours: float, gpus: int, usd_per_hour: float
) -> BurstWindow:
    """The window `open` records: `nodes` of `pool` in `zone` from `now` (its whole minute, model.burst_spend.window_start)
    for `hours`, at the price the budget was judged at."""
    start = window_start(now)
    return BurstWindow(
        pool=pool.name,
        nodes=nodes,
        instance_type=pool.instance_type,
        availability_zone=zone,
        capacity_type=pool.capacity.type,
        start=start,
        expires=start + dt.timedelta(hours=hours),
        gpus=gpus,
        usd_per_hour=usd_per_hour,
    )


def _budget(
    spec: EstateSpec,
    ledger: Iterable[BurstLedgerEntry],
    pool: AwsNodePool,
    nodes: int,
    request: BurstRequest,
    now: dt.datetime,
    checks: list[str],
) -> tuple[float, float, float, float]:
    """Fit the window's worst case into what is left of each month's budget it touches (`model.burst.
    latest_expiry`): cap x (hours + grace + stop lag). Returns (price per node-hour, hours admitted, price of
    those hours, spend so far this month); the hours are fewer than asked when only a shorter window fits, and
    BurstError shows the arithmetic when none does."""
    policy = spec.burst
    assert policy is not None
    ledger = list(ledger)
    itype = pool.instance_type
    # On-demand catalog price for every purchase option: an upper bound for spot (which never charges more)
    # and the rate reservations are billed at; capacity blocks are prepaid at their own, usually lower, rate.
    try:
        usd_per_hour = node_hour_price(spec, itype)
    except catalog.CatalogError as err:
        raise BurstError(f"cannot price the window against the budget: {str(err).strip(chr(39))}") from None
    start = window_start(now)
    asked = start + dt.timedelta(hours=request.hours)
    spent = spend_in_month(ledger, now)
    fits = latest_expiry(spec, ledger, nodes, usd_per_hour, start, asked)
    hours = request.hours if fits is None else hours_between(start, fits)
    budget = budget_line(spec, ledger, start, stopped_by(spec, fits or asked))
    worst = worst_case(spec, nodes, usd_per_hour, start, asked)
    asked_costs = f"{nodes} x {itype} for {hours_text(request.hours)} cost {worst}"
    if fits is None:
        raise BurstError(f"{asked_costs}, but only {budget}; no window fits")
    if fits < asked:
        checks.append(
            f"window shortened to {hours_text(hours)}: {asked_costs}, but only {budget}; {hours_text(hours)} cost "
            f"{worst_case(spec, nodes, usd_per_hour, start, fits)}"
        )
    else:
        checks.append(f"worst case {worst} within {budget}")
    return usd_per_hour, hours, window_price(usd_per_hour, nodes, hours), spent


def budget_line(spec: EstateSpec, ledger: list[BurstLedgerEntry], start: dt.datetime, end: dt.datetime) -> str:
    """What is left of the monthly budget in each month of [start, end), and what the ledger booked there."""
    assert spec.burst is not None
    parts = []
    for month, _ in month_spans(start, end):
        spent = spend_in_month(ledger, month)
        parts.append(f"${spec.burst.budget_usd - spent:,.2f} left in {month:%B %Y} (${spent:,.2f} spent)")
    return f"{' and '.join(parts)} of the ${spec.burst.budget_usd:,.2f} monthly burst budget"


NOT_CHECKED_OFFLINE = (
    "not checked offline: whether EC2 offers {itype} in the pool's AZ, the EC2 vCPU quota ({vcpus} vCPUs more) "
    "or a reservation, and EC2 capacity right now (run without --offline, with AWS credentials)"
)


def offline_check(
    spec: EstateSpec, ledger: Iterable[BurstLedgerEntry], request: BurstRequest, now: dt.datetime
) -> Preflight:
    """The budget arithmetic of `preflight` without AWS: the request, then price x nodes x hours against what is
    left of the budget; the checks name what could not be checked. `open --dry-run --offline` and `preview
    --burst-window` both show this window."""
    pool, nodes = check_request(spec, request)
    policy = spec.burst
    assert policy is not None
    checks = [f"{request.gpus} GPUs -> {nodes} x {pool.instance_type} for {request.hours:g} h"]
    usd_per_hour, hours, price, spent = _budget(spec, ledger, pool, nodes, request, now, checks)
    checks.append(NOT_CHECKED_OFFLINE.format(itype=pool.instance_type, vcpus=nodes * pool.instance.vcpus))
    site = cloud_site(spec)
    zone = pool_zone(site, pool) or site.availability_zones[0]  # EC2's offerings are not known offline
    window = window_of(pool, nodes, zone, now, hours, request.gpus, usd_per_hour)
    return Preflight(window, site.region, price, spent, policy.budget_usd, checks)


def _reservation_check(aws: Aws, pool: AwsNodePool, nodes: int, az: str, now: dt.datetime, hours: float) -> str:
    rid = pool.capacity.reservation_id or ""
    cr = aws.capacity_reservation(rid)
    problems = []
    if cr.get("InstanceType") != pool.instance_type:
        problems.append(f"it holds {cr.get('InstanceType')}, not {pool.instance_type}")
    if cr.get("AvailabilityZone") != az:
        problems.append(f"it is in {cr.get('AvailabilityZone')}, not {az}")
    if cr.get("State") not in ("active", "scheduled"):
        problems.append(f"its state is {cr.get('State')}")
    available = int(cr.get("AvailableInstanceCount", 0))
    if available < nodes:
        problems.append(f"only {available} of its instances are free and the window needs {nodes}")
    end = cr.get("EndDate")
    if isinstance(end, dt.datetime) and end < now + dt.timedelta(hours=hours):
        problems.append(f"it ends at {end:%Y-%m-%d %H:%M} UTC, before the window would")
    if problems:
        raise BurstError(f"capacity reservation {rid} cannot hold the window: {'; '.join(problems)}")
    return f"reservation {rid}: {available} free {pool.instance_type} in {az}"
