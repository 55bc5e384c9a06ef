"""`gpufleet check --aws`: the deployer's AWS account read before the first `up`, read-only.

- Per region of the estate's AWS sites: the EC2 vCPU quotas the GPU pools launch under (Service Quotas), against
  what the pools need at desired size and at most (model.aws_account), with the family's running instances
  (the estate's own nodes left out: the pools' sizes count them).
- Reserved pools: their reservation as EC2 holds it; a block to buy: the offerings on sale, and its own
  (`reservation_checks`).
- Per pool: every AZ name it may run in, mapped to this account's AZ ID (DescribeAvailabilityZones), offers its
  instance type (DescribeInstanceTypeOfferings by AZ ID). AZ names map to AZs per account, so this is the only
  place a stack's AZ names are judged (https://docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html).

Nothing is changed. A problem says what to request or change; AWS errors raise BurstError.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpufleet.burst.aws import Aws
from model import kinds
from model.aws_account import QUOTA_CODES, PoolQuota, pool_quotas, quota_totals
from model.burst import pool_zone
from model.conventions import POOL_TAG
from model.kinds.aws import cluster_name
from model.spec import AwsNodePool, AwsSite, EstateSpec
from model.tags import Tags


@dataclass
class AccountCheck:
    """What the account answered: `checks` passed or could not be asked, `problems` fail the first `up`."""

    checks: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, list[str]]:
        return {"checks": list(self.checks), "problems": list(self.problems)}


def check_account(spec: EstateSpec, connect: Callable[[str], Aws]) -> AccountCheck:
    """Read each region's quotas and offerings through `connect(region)` and judge the estate's pools by them."""
    result = AccountCheck()
    sites = [a for s in spec.sites if (a := kinds.of(s).aws_site) is not None]
    needs = pool_quotas(spec)
    if not sites:
        result.checks.append("the estate has no AWS site: nothing to read")
    for region in sorted({s.region for s in sites}):
        aws = connect(region)
        zone_ids = aws.zone_ids()
        offered: dict[str, list[str]] = {}
        for site in (s for s in sites if s.region == region):
            _offerings(site, zone_ids, offered, aws, result)
            reservation_checks(site, aws, result, Tags.from_spec(spec).base)
        _quotas([n for n in needs if n.region == region], aws, result, own_nodes(spec))
    return result


def own_nodes(spec: EstateSpec) -> list[dict[str, str]]:
    """Tags that mark the estate's own nodes, left out of `in_use`: the pools' max already counts them. The
    pools' launch templates tag instances with gpufleet's tags (components/aws/launch.py TAGGED_AT_LAUNCH,
    model/tags.py); `eks:cluster-name`, which EKS puts on a managed node group's nodes, is taken too (not
    verified offline)."""
    tags = Tags.from_spec(spec)
    clusters = [cluster_name(tags, a) for s in spec.sites if (a := kinds.of(s).aws_site) is not None]
    return [{"eks:cluster-name": c} for c in clusters] + [
        {"managed-by": tags.base["managed-by"], "cluster": tags.base["cluster"], "env": tags.base["env"]}
    ]


def _offerings(site: AwsSite, zone_ids: dict[str, str], offered: dict[str, list[str]], aws: Aws,
               result: AccountCheck) -> None:  # fmt: skip
    names = {v: k for k, v in zone_ids.items()}
    for pool in site.node_pools:
        itype = pool.instance_type
        if itype not in offered:
            offered[itype] = aws.offered_zone_ids(itype)
        zone = pool_zone(site, pool)
        for name in [zone] if zone else site.availability_zones:
            zid = zone_ids.get(name)
            where = f"pool {pool.name} of site {site.name}"
            if zid is None:
                result.problems.append(
                    f"{where}: {name} is not an AZ of {site.region} in this account (its AZs: "
                    f"{', '.join(sorted(zone_ids)) or 'none'})"
                )
            elif zid not in offered[itype]:
                here = [f"{names[z]} ({z})" for z in offered[itype] if z in names]
                result.problems.append(
                    f"{where}: EC2 does not offer {itype} in {name} ({zid} in this account); it is offered in "
                    f"{', '.join(here) or 'no AZ of ' + site.region}: move the pool (or its fabric) there"
                )
            else:
                result.checks.append(f"{where}: {itype} offered in {name} ({zid} in this account)")


def _quotas(needs: list[PoolQuota], aws: Aws, result: AccountCheck, own: list[dict[str, str]]) -> None:
    for (region, code), (title, desired, most, rolling) in quota_totals(needs).items():
        family, market = next((f, m) for f, by in QUOTA_CODES.items() for m, (c, _) in by.items() if c == code)
        limit = aws.quota_vcpus(code)
        in_use = aws.vcpus_running(family, spot=market == "spot", skip=own)
        what = f"EC2 quota {code} ({title}) in {region}"
        if limit is None:
            result.checks.append(f"{what} not checked: Service Quotas is not available in {region}")
            continue
        have = f"is {limit:g} vCPUs with {in_use} in use (running {family} instances, this estate's own left out)"
        ask = f"Request at least {in_use + rolling:g} vCPUs ({rolling} while node group updates roll, plus what runs)"
        if in_use + desired > limit:
            result.problems.append(
                f"{what} {have}; the pools need {desired} at desired size, so the first `up` fails with "
                f"VcpuLimitExceeded. {ask}"
            )
        elif in_use + most > limit:
            result.problems.append(
                f"{what} {have}; the pools need {most} at most, so they cannot grow to their max. {ask}"
            )
        elif in_use + rolling > limit:
            # EKS launches the new nodes before it drains old ones (managed-node-update-behavior, "Scale up phase")
            result.problems.append(
                f"{what} {have}; a node group update (a Kubernetes or AMI bump) at max size launches new nodes "
                f"before it drains old ones and needs {rolling}, so it fails to launch them. {ask}"
            )
        else:
            result.checks.append(f"{what} {have}: room for the pools' {rolling} vCPUs while updates roll")


def reservation_checks(
    site: AwsSite, aws: Aws, result: AccountCheck, estate_tags: Mapping[str, str] | None = None
) -> None:
    """Each reserved pool of `site` against its reservation as EC2 holds it (DescribeCapacityReservations: type,
    AZ, count, state, ReservationType, a block's dates); each block to buy: the offerings EC2 sells now
    (DescribeCapacityBlockOfferings), printed, and the stack's own offering's fee, AZ, start and end against it;
    an offering not on sale is a problem unless a reservation tagged with the estate's tags and the pool exists."""
    for pool in site.node_pools:
        where = f"pool {pool.name} of site {site.name}"
        if pool.capacity.offering_id is not None:
            _block_offerings(where, pool, aws, result, estate_tags or {})
        elif pool.capacity.reservation_id is not None:
            _reservation(where, site, pool, aws, result)


def _reservation(where: str, site: AwsSite, pool: AwsNodePool, aws: Aws, result: AccountCheck) -> None:
    rid = pool.capacity.reservation_id or ""
    cr = aws.capacity_reservation(rid)
    kind, count, zone = cr.get("InstanceType"), int(cr.get("TotalInstanceCount", 0)), cr.get("AvailabilityZone")
    state = cr.get("State")
    problems = []
    if kind != pool.instance_type:
        problems.append(f"it holds {kind}, not {pool.instance_type}")
    if pool.reachable_nodes > count:
        problems.append(f"it holds {count} instances, fewer than the pool's {pool.reachable_nodes} at most")
    az = pool_zone(site, pool)
    if az is not None and zone != az:
        problems.append(f"it is in {zone}, not the pool's {az}")
    if state in ("expired", "cancelled", "failed", "payment-failed"):
        problems.append(f"its state is {state}")
    # CapacityReservation.ReservationType is "default" or "capacity-block" (EC2 API reference,
    # https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CapacityReservation.html).
    wanted = "capacity-block" if pool.capacity.type == "capacity-block" else "default"
    held = cr.get("ReservationType", "default")
    if held != wanted:
        problems.append(f"its ReservationType is {held}, not {wanted} (capacity.type {pool.capacity.type})")
    block = pool.capacity.block if pool.capacity.type == "capacity-block" else None
    if block is not None:
        problems += _dates(cr, block.start, block.end_at(), "reservation")
    what = f"{where}: reservation {rid} ({count} x {kind} in {zone}, {state})"
    if problems:
        result.problems.append(f"{what}: {'; '.join(problems)}")
    else:
        result.checks.append(f"{what} fits the pool")


def _block_offerings(
    where: str, pool: AwsNodePool, aws: Aws, result: AccountCheck, estate_tags: Mapping[str, str]
) -> None:
    block, c = pool.capacity.block, pool.capacity
    if block is None or c.instances is None:
        return
    offerings = aws.capacity_block_offerings(pool.instance_type, c.instances, block.days * 24, block.start)
    for o in offerings:
        result.checks.append(
            f"{where}: EC2 offers {o.get('CapacityBlockOfferingId')}: {o.get('InstanceCount')} x "
            f"{o.get('InstanceType')} in {o.get('AvailabilityZone')} from {_when(o.get('StartDate'))} to "
            f"{_when(o.get('EndDate'))}, upfront {o.get('UpfrontFee')} {o.get('CurrencyCode')}"
        )
    mine = next((o for o in offerings if o.get("CapacityBlockOfferingId") == block.offering_id), None)
    if mine is None:
        # The bought block carries the pool's tags (components/aws/node_pool.py _bought_block: tags.aws(pool=...)).
        bought = aws.tagged_reservations({**estate_tags, POOL_TAG: pool.name})
        if bought:
            ids = ", ".join(str(r.get("CapacityReservationId")) for r in bought)
            result.checks.append(
                f"{where}: offering {block.offering_id} is no longer on sale: bought by this stack ({ids})"
            )
        else:
            result.problems.append(
                f"{where}: offering {block.offering_id} is not on sale and no reservation is tagged with pool "
                f"{pool.name}: it was sold to someone else or expired; pick one of those above before the first `up`"
            )
        return
    problems = []
    fee = float(mine.get("UpfrontFee", "nan"))
    if block.upfront_usd is not None and round(fee, 2) != round(block.upfront_usd, 2):
        problems.append(f"its UpfrontFee is {fee:,.2f}, not block.upfront_usd {block.upfront_usd:,.2f}")
    if mine.get("CurrencyCode", "USD") != "USD":
        problems.append(f"it is priced in {mine.get('CurrencyCode')}, not USD")
    if mine.get("AvailabilityZone") != c.availability_zone:
        problems.append(
            f"it is in {mine.get('AvailabilityZone')}, not capacity.availability_zone {c.availability_zone}"
        )
    problems += _dates(mine, block.start, block.end_at(), "offering")
    if problems:
        result.problems.append(f"{where}: offering {block.offering_id}: {'; '.join(problems)}")
    else:
        result.checks.append(f"{where}: offering {block.offering_id} matches the stack (fee, AZ, start, end)")


def _dates(held: dict[str, Any], start: dt.datetime | None, end: dt.datetime | None, what: str) -> list[str]:
    """The block's start and end against EC2's StartDate and EndDate (blocks end at 11:30 UTC, so an end of
    start + days x 24 h may not be the block's: EC2 user guide, ec2-capacity-blocks)."""
    out = []
    if start is not None and held.get("StartDate") != start:
        out.append(f"it starts {_when(held.get('StartDate'))}, not block.start {_when(start)}")
    if end is not None and held.get("EndDate") != end:
        out.append(
            f"it ends {_when(held.get('EndDate'))}, not the block's end {_when(end)} (give block.end: {what} EndDate)"
        )
    return out


def _when(at: object) -> str:
    return f"{at:%Y-%m-%d %H:%M} UTC" if isinstance(at, dt.datetime) else str(at)
