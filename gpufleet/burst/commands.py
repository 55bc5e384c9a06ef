"""`gpufleet burst`: open, close, show and expire cloud capacity windows on a hybrid estate.

A window (pool, nodes, instance type, AZ, start, expiry) lives in stack config under `gpufleet:burstWindow`;
past windows are booked in `gpufleet:burstLedger` (pool, instance type, nodes, start, end, usd). Both are
plain config values in `stacks/Pulumi.<stack>.yaml`, so every burst is reviewable and reproducible, and the
Pulumi program alone decides sizes: an expired window sizes the burst pools and quotas to zero at the next `up`
whoever runs it.

Opening a window checks AWS first (`preflight`): the instance type is allowed by the burst policy and runs a
burst pool, EC2 offers it in the pool's AZ, the EC2 vCPU quota of its family covers what is running plus the
window, reserved pools have room in their reservation, and the window's price fits the month's remaining
budget. Only then is config written and `pulumi up` run; if `up` fails the previous config is restored.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.model import catalog
from components.model.load import LEDGER_KEY, WINDOW_KEY, check_window, read_stack
from components.model.spec import AwsNodePool, BurstLedgerEntry, BurstWindow, EstateSpec
from components.model.windows import (
    burst_pools,
    close_entry,
    cloud_site,
    hours_between,
    node_hour_price,
    pool_zone,
    spend_in_month,
    window_price,
)
from gpufleet.burst.driver import DriverError, OutputSink, StackDriver

# EC2 vCPU quotas (service-quotas, service code ec2) per instance family and purchase option.
QUOTA_CODES: dict[str, dict[str, tuple[str, str]]] = {
    "P": {
        "on-demand": ("L-417A185B", "Running On-Demand P instances"),
        "spot": ("L-7212CCBC", "All P Spot Instance Requests"),
    },
    "G": {
        "on-demand": ("L-DB2E81BA", "Running On-Demand G and VT instances"),
        "spot": ("L-3819A6DF", "All G and VT Spot Instance Requests"),
    },
}
THROTTLE_CODES = frozenset(
    {"Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequestsException", "RequestThrottled"}
)


class BurstError(Exception):
    """A burst that cannot go ahead. Nothing was changed; the message says why. exit_code: 2 bad input, 1 refused."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def quota_family(instance_type: str) -> str:
    """The quota family of an instance type: P (p4d, p5, p6-b200, ...) or G (g5, g6, g6e, vt1)."""
    family = instance_type.split(".")[0]
    letters = re.match(r"[a-z]*", family)
    prefix = letters.group(0) if letters else ""
    if prefix in ("g", "vt"):
        return "G"
    if prefix == "p":
        return "P"
    raise BurstError(f"no EC2 GPU vCPU quota is known for instance family {family}", 2)


# ------------------------------------------------------------------------------------------------ AWS access


class Aws:
    """The few EC2 and Service Quotas calls the preflight needs, with bounded retries on throttling.

    botocore retries first (mode `adaptive`, `max_attempts`); on top, a throttling error that still comes back
    is retried here with exponential backoff, at most `attempts` times, then reported.
    """

    def __init__(
        self,
        region: str,
        *,
        session: Any = None,
        attempts: int = 4,
        sleep: Callable[[float], None] = time.sleep,
        base_delay: float = 1.0,
    ) -> None:
        import boto3
        from botocore.config import Config

        cfg = Config(retries={"mode": "adaptive", "max_attempts": 5}, connect_timeout=10, read_timeout=30)
        sess = session or boto3.session.Session()
        self.region = region
        self.ec2 = sess.client("ec2", region_name=region, config=cfg)
        self.quotas = sess.client("service-quotas", region_name=region, config=cfg)
        self.attempts = attempts
        self.sleep = sleep
        self.base_delay = base_delay

    def _call(self, what: str, fn: Callable[..., Any], **kwargs: Any) -> Any:
        from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

        for attempt in range(1, self.attempts + 1):
            try:
                return fn(**kwargs)
            except ClientError as err:
                code = err.response.get("Error", {}).get("Code", "")
                if code in THROTTLE_CODES and attempt < self.attempts:
                    self.sleep(min(self.base_delay * 2 ** (attempt - 1), 20.0))
                    continue
                if code in THROTTLE_CODES:
                    raise BurstError(
                        f"AWS kept throttling {what} ({code}) after {self.attempts} attempts; nothing was changed, "
                        "try again in a few minutes"
                    ) from None
                msg = err.response.get("Error", {}).get("Message", str(err))
                raise BurstError(f"AWS refused {what}: {code}: {msg}") from None
            except NoCredentialsError:
                raise BurstError(
                    f"no AWS credentials for {what}; configure them (AWS_PROFILE, SSO or OIDC) and try again"
                ) from None
            except BotoCoreError as err:
                raise BurstError(f"could not reach AWS for {what}: {err}") from None
        raise AssertionError("unreachable")

    def offered_zones(self, instance_type: str) -> list[str]:
        resp = self._call(
            f"DescribeInstanceTypeOfferings for {instance_type}",
            self.ec2.describe_instance_type_offerings,
            LocationType="availability-zone",
            Filters=[{"Name": "instance-type", "Values": [instance_type]}],
        )
        return sorted(o["Location"] for o in resp.get("InstanceTypeOfferings", []))

    def quota_vcpus(self, code: str) -> float:
        resp = self._call(
            f"GetServiceQuota ec2/{code}", self.quotas.get_service_quota, ServiceCode="ec2", QuotaCode=code
        )
        return float(resp["Quota"]["Value"])

    def vcpus_running(self, family: str, spot: bool) -> int:
        """vCPUs of pending or running instances counting against the family's on-demand (or spot) quota."""
        types: list[str] = []
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {
                "Filters": [{"Name": "instance-state-name", "Values": ["pending", "running"]}],
                "MaxResults": 1000,
            }
            if token:
                kwargs["NextToken"] = token
            resp = self._call("DescribeInstances", self.ec2.describe_instances, **kwargs)
            for r in resp.get("Reservations", []):
                for i in r.get("Instances", []):
                    is_spot = i.get("InstanceLifecycle") == "spot"
                    t = i["InstanceType"]
                    if is_spot == spot and _family_or_none(t) == family:
                        types.append(t)
            token = resp.get("NextToken")
            if not token:
                break
        return sum(self._vcpus(t) for t in types)

    def _vcpus(self, instance_type: str) -> int:
        try:
            return catalog.instance_type(instance_type).vcpus
        except catalog.CatalogError:
            resp = self._call(
                f"DescribeInstanceTypes {instance_type}",
                self.ec2.describe_instance_types,
                InstanceTypes=[instance_type],
            )
            return int(resp["InstanceTypes"][0]["VCpuInfo"]["DefaultVCpus"])

    def capacity_reservation(self, reservation_id: str) -> dict[str, Any]:
        resp = self._call(
            f"DescribeCapacityReservations {reservation_id}",
            self.ec2.describe_capacity_reservations,
            CapacityReservationIds=[reservation_id],
        )
        found = resp.get("CapacityReservations", [])
        if not found:
            raise BurstError(f"capacity reservation {reservation_id} was not found in {self.region}")
        return dict(found[0])


def _family_or_none(instance_type: str) -> str | None:
    try:
        return quota_family(instance_type)
    except BurstError:
        return None


# -------------------------------------------------------------------------------------------------- preflight


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


def check_request(spec: EstateSpec, request: BurstRequest) -> tuple[AwsNodePool, int]:
    """The checks that need no AWS: the burst policy, the pool and the node count. Returns (pool, nodes)."""
    policy = spec.burst
    if policy is None:
        raise BurstError("the estate has no burst policy (`burst:`), so it cannot burst", 2)
    if request.gpus < 1:
        raise BurstError(f"--gpus must be at least 1, got {request.gpus}", 2)
    if not 0 < request.hours <= policy.max_window_hours:
        raise BurstError(
            f"--hours must be more than 0 and at most the burst policy's max_window_hours ({policy.max_window_hours}); "
            f"got {request.hours:g}",
            2,
        )
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
        if in_use + vcpus > limit:
            raise BurstError(
                f"EC2 quota {code} ({title}) in {site.region} is {limit:g} vCPUs; {in_use} are in use and the window "
                f"needs {vcpus} more ({nodes} x {pool.instance.vcpus}). Request a quota increase first"
            )
        checks.append(f"quota {code} ({title}): {in_use} + {vcpus} of {limit:g} vCPUs")

    # On-demand catalog price for every purchase option: an upper bound for spot (which never charges more)
    # and the rate reservations are billed at; capacity blocks are prepaid at their own, usually lower, rate.
    try:
        usd_per_hour = node_hour_price(spec, itype)
    except catalog.CatalogError as err:
        raise BurstError(f"cannot price the window against the budget: {str(err).strip(chr(39))}") from None
    price = window_price(usd_per_hour, nodes, request.hours)
    spent = spend_in_month(ledger, now)
    left = round(policy.budget_usd - spent, 2)
    if price > left:
        raise BurstError(
            f"the window costs ${price:,.2f} ({nodes} x {itype} at ${usd_per_hour:,.2f}/h x {request.hours:g} h), but "
            f"only ${left:,.2f} of the ${policy.budget_usd:,.2f} monthly burst budget is left (${spent:,.2f} spent "
            f"in {now:%B %Y})"
        )
    checks.append(f"price ${price:,.2f} within ${left:,.2f} left of ${policy.budget_usd:,.2f} this month")

    start = now.astimezone(dt.UTC).replace(microsecond=0)
    window = BurstWindow(
        pool=pool.name,
        nodes=nodes,
        instance_type=itype,
        availability_zone=az,
        start=start,
        expires=start + dt.timedelta(hours=request.hours),
        gpus=request.gpus,
        usd_per_hour=usd_per_hour,
    )
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


# ------------------------------------------------------------------------------------------------- the flows


@dataclass
class StackState:
    """The burst-relevant part of a stack file."""

    spec: EstateSpec
    window: BurstWindow | None
    ledger: list[BurstLedgerEntry]


def load_state(project_dir: Path, stack: str) -> StackState:
    sf = read_stack(project_dir, stack)
    spec = sf.estate()
    if spec.burst is None:
        raise BurstError(f"{sf.path}: the estate has no burst policy (`burst:`); only hybrid estates burst", 2)
    window = sf.window()
    check_window(spec, window, str(sf.path))
    return StackState(spec, window, sf.ledger())


def window_json(window: BurstWindow) -> str:
    return json.dumps(window.model_dump(mode="json", exclude_none=True), separators=(",", ":"))


def ledger_json(ledger: list[BurstLedgerEntry]) -> str:
    return json.dumps([e.model_dump(mode="json") for e in ledger], separators=(",", ":"))


Change = tuple[str, str | None]  # (config key, new JSON value or None to remove)


def apply_and_up(driver: StackDriver, stack: str, changes: list[Change], on_output: OutputSink) -> dict[str, int]:
    """Write `changes` and run `pulumi up`; on any failure put every touched key back as it was, then raise."""
    try:
        driver.select(stack)
        before = {key: driver.get_config(key) for key, _ in changes}
    except DriverError as err:
        raise BurstError(f"{err}; nothing was changed") from None
    try:
        for key, value in changes:
            if value is None:
                if before[key] is not None:
                    driver.remove_config(key)
            else:
                driver.set_config(key, value)
        return driver.up(on_output)
    except DriverError as err:
        restore_problems = _restore(driver, before)
        detail = _capacity_hint(str(err))
        if restore_problems:
            raise BurstError(
                f"{err}{detail}\nrestoring the previous stack config also failed ({'; '.join(restore_problems)}); "
                f"check {', '.join(before)} in the stack file by hand"
            ) from None
        raise BurstError(f"{err}{detail}\nthe stack config was restored to what it was before") from None


def _restore(driver: StackDriver, before: dict[str, str | None]) -> list[str]:
    problems = []
    for key, value in before.items():
        try:
            if value is None:
                if driver.get_config(key) is not None:
                    driver.remove_config(key)
            else:
                driver.set_config(key, value)
        except DriverError as err:
            problems.append(f"{key}: {err}")
    return problems


def _capacity_hint(text: str) -> str:
    if "InsufficientInstanceCapacity" in text or "insufficient capacity" in text.lower():
        return (
            "\nEC2 has no capacity for this instance type in the AZ right now: try fewer GPUs, later, or a "
            "capacity reservation"
        )
    return ""


def _expired_entry(state: StackState, now: dt.datetime, closed_by: str) -> BurstLedgerEntry | None:
    w = state.window
    if w is None or now < w.expires:
        return None
    return close_entry(state.spec, w, w.expires, closed_by)


@dataclass(frozen=True)
class Outcome:
    message: str
    changes: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class OpenPlan:
    """A window that passed every check, and the config changes that open it."""

    check: Preflight
    changes: list[Change]

    def done(self, summary: dict[str, int]) -> Outcome:
        w = self.check.window
        return Outcome(
            f"burst window open: {w.nodes} x {w.instance_type} in {w.availability_zone} until "
            f"{w.expires:%Y-%m-%d %H:%M} UTC (about ${self.check.price_usd:,.2f})",
            summary,
        )


def plan_open(
    project_dir: Path, stack: str, request: BurstRequest, *, aws_factory: Callable[[str], Aws], now: dt.datetime
) -> OpenPlan:
    """Run every check for a new window; change nothing. An expired window still in config is booked first."""
    state = load_state(project_dir, stack)
    if state.window is not None and state.window.is_open(now):
        w = state.window
        raise BurstError(
            f"a burst window is already open on pool {w.pool} ({w.nodes} x {w.instance_type}) until "
            f"{w.expires:%Y-%m-%d %H:%M} UTC; close it first (`gpufleet burst close --stack {stack}`)"
        )
    expired = _expired_entry(state, now, "gpufleet burst open (expired window booked)")
    ledger = [*state.ledger, *([expired] if expired else [])]
    check_request(state.spec, request)  # bad input fails before any AWS client exists
    check = preflight(state.spec, ledger, request, now, aws_factory(cloud_site(state.spec).region))
    changes: list[Change] = [(WINDOW_KEY, window_json(check.window))]
    if expired:
        changes.append((LEDGER_KEY, ledger_json(ledger)))
    return OpenPlan(check, changes)


def open_window(
    project_dir: Path,
    stack: str,
    request: BurstRequest,
    *,
    aws_factory: Callable[[str], Aws],
    driver: StackDriver,
    now: dt.datetime,
    on_output: OutputSink,
) -> Outcome:
    """Check, then write the window and run `pulumi up` (restoring config if `up` fails)."""
    plan = plan_open(project_dir, stack, request, aws_factory=aws_factory, now=now)
    return plan.done(apply_and_up(driver, stack, plan.changes, on_output))


def close_window(
    project_dir: Path, stack: str, *, driver: Callable[[], StackDriver], now: dt.datetime, on_output: OutputSink
) -> Outcome:
    state = load_state(project_dir, stack)
    w = state.window
    if w is None:
        return Outcome("no burst window in the stack config; nothing to close")
    entry = close_entry(state.spec, w, now, "gpufleet burst close")
    ledger = [*state.ledger, entry]
    summary = apply_and_up(driver(), stack, [(WINDOW_KEY, None), (LEDGER_KEY, ledger_json(ledger))], on_output)
    return Outcome(
        f"burst window closed: {entry.nodes} x {entry.instance_type} for "
        f"{hours_between(entry.start, entry.end):.1f} h booked at ${entry.usd:,.2f}",
        summary,
    )


def reconcile(
    project_dir: Path, stack: str, *, driver: Callable[[], StackDriver], now: dt.datetime, on_output: OutputSink
) -> Outcome:
    """Close a window that has expired (book it, remove it, `up` so the pools shrink); leave an open one alone."""
    state = load_state(project_dir, stack)
    w = state.window
    if w is None:
        return Outcome("no burst window; nothing to reconcile")
    entry = _expired_entry(state, now, "gpufleet burst reconcile")
    if entry is None:
        return Outcome(f"burst window on pool {w.pool} is open until {w.expires:%Y-%m-%d %H:%M} UTC; nothing to do")
    ledger = [*state.ledger, entry]
    summary = apply_and_up(driver(), stack, [(WINDOW_KEY, None), (LEDGER_KEY, ledger_json(ledger))], on_output)
    return Outcome(
        f"expired burst window on pool {w.pool} closed (expired {w.expires:%Y-%m-%d %H:%M} UTC, "
        f"booked ${entry.usd:,.2f})",
        summary,
    )


@dataclass(frozen=True)
class Status:
    window: BurstWindow | None
    open: bool
    time_left: dt.timedelta | None
    spend_usd: float  # this month: the ledger plus the current window so far
    committed_usd: float  # the current window's remaining hours, if it runs to expiry
    budget_usd: float

    @property
    def budget_left_usd(self) -> float:
        return round(self.budget_usd - self.spend_usd - self.committed_usd, 2)


def status(project_dir: Path, stack: str, now: dt.datetime) -> Status:
    state = load_state(project_dir, stack)
    assert state.spec.burst is not None
    ledger = list(state.ledger)
    w = state.window
    committed = 0.0
    is_open = w is not None and w.is_open(now)
    if w is not None and now >= w.start:
        ledger.append(close_entry(state.spec, w, now, "so far"))
        if is_open:
            price = w.usd_per_hour if w.usd_per_hour is not None else node_hour_price(state.spec, w.instance_type)
            committed = window_price(price, w.nodes, hours_between(now, w.expires))
    return Status(
        window=w,
        open=is_open,
        time_left=(w.expires - now) if w is not None and is_open else None,
        spend_usd=spend_in_month(ledger, now),
        committed_usd=committed,
        budget_usd=state.spec.burst.budget_usd,
    )
