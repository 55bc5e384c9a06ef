"""Subnet planning of a VPC the stack creates: a private and a public subnet per AZ, clear of the fabric subnets;
and which CIDRs lie outside a set of networks.

Pure (no Pulumi): components.aws.network creates what it plans, and the schema's rules refuse a `vpc.cidr` too small
for it before anything runs.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from model.spec.base import Problem

if TYPE_CHECKING:
    from model.spec.sites import AwsSite

PRIVATE_PREFIX_STEP = 3  # a /16 VPC gets /19 private subnets (8,190 addresses each: pods take VPC IPs)
PUBLIC_PREFIX = 24
Network = ipaddress.IPv4Network | ipaddress.IPv6Network  # public subnets only hold NAT gateways (and load balancers)


@dataclass(frozen=True)
class SubnetPlan:
    private: dict[str, str]  # AZ -> CIDR
    public: dict[str, str]  # AZ -> CIDR


def plan_subnets(vpc_cidr: str, azs: list[str], reserved: list[str]) -> SubnetPlan:
    """Private subnets from the bottom of the VPC range, public /24s from the top, none overlapping `reserved`.

    `reserved` holds the fabric subnets' CIDRs, which the fabrics create themselves.
    """
    vpc = ipaddress.ip_network(vpc_cidr)
    taken: list[Network] = [ipaddress.ip_network(c) for c in reserved]

    def free(prefix: int, reverse: bool) -> list[Network]:
        nets: list[Network] = list(vpc.subnets(new_prefix=prefix)) if prefix > vpc.prefixlen else [vpc]
        nets = nets[::-1] if reverse else nets
        return [n for n in nets if not any(n.overlaps(t) for t in taken)]

    private_prefix = min(vpc.prefixlen + PRIVATE_PREFIX_STEP, 24)
    public_prefix = max(PUBLIC_PREFIX, private_prefix)
    public = free(public_prefix, reverse=True)[: len(azs)]
    taken.extend(public)
    private = free(private_prefix, reverse=False)[: len(azs)]
    if len(private) < len(azs) or len(public) < len(azs):
        raise ValueError(f"VPC {vpc_cidr} is too small for private and public subnets in {len(azs)} AZs")
    return SubnetPlan(
        private={az: str(n) for az, n in zip(azs, private, strict=True)},
        public={az: str(n) for az, n in zip(azs, public, strict=True)},
    )


def vpc_room(path: str, s: AwsSite) -> Iterator[Problem]:
    """A VPC the stack creates holds a private and a public subnet per AZ besides the fabric subnets."""
    if s.vpc.vpc_id or not s.vpc.cidr:
        return
    fabric_cidrs = [f.subnet_cidr for f in s.fabrics if f.kind == "efa" and f.subnet_cidr]
    try:
        plan_subnets(s.vpc.cidr, s.availability_zones, fabric_cidrs)
    except ValueError as err:
        yield Problem(f"{path}.vpc.cidr", str(err))


def networks(cidrs: Iterable[str]) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return [ipaddress.ip_network(c, strict=False) for c in cidrs]


def outside(cidrs: Iterable[str], allowed: Iterable[str]) -> list[str]:
    """The CIDRs of `cidrs` not inside any network of `allowed`."""
    nets = networks(allowed)
    return [
        c
        for c, n in zip(cidrs, networks(cidrs), strict=True)
        if not any(n.version == a.version and n.subnet_of(a) for a in nets)  # type: ignore[arg-type]
    ]


def local_zone(region: str, az: str) -> bool:
    """`az` names a Local Zone of `region` (`us-east-1-dfw-2a`: region, location, group number, zone letter), not
    one of its Availability Zones (`us-east-1a`; https://docs.aws.amazon.com/local-zones/latest/ug/how-local-zones-work.html)."""
    return re.fullmatch(rf"{re.escape(region)}-[a-z]+-\d+[a-z]", az) is not None


def local_zone_group(az: str) -> str:
    """The zone group a Local Zone's account opt-in names: the zone without its letter (`us-east-1-dfw-2`)."""
    return az[:-1]
