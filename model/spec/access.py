"""Who reaches the Kubernetes APIs: where `pulumi up` runs (the deployer), how an AWS site's VPC is connected to
the on-prem network (its interconnect), and the AWS account facts the first `up` depends on.

The judgement itself (who must reach which API, and through which path) lives in `model.reach`; these
are only the declarations it reads.
"""

from __future__ import annotations

import ipaddress
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, field_validator

from model.spec.base import Model, Name
from model.spec.net import CidrRange, IpAddress


def checked_cidrs(v: list[str]) -> list[str]:
    """Valid IPv4/IPv6 networks (host bits allowed), never a catch-all /0."""
    for c in v:
        net = ipaddress.ip_network(c, strict=False)
        if net.prefixlen == 0:
            raise ValueError(f"{c} admits every address; list the networks that need access")
    return v


Cidrs = Annotated[list[Annotated[str, CidrRange(0, 128)]], AfterValidator(checked_cidrs)]


class Deployer(Model):
    """Where `pulumi up` runs. Its Kubernetes providers talk to every site's API server, and on AWS its kubeconfig
    authenticates with `aws eks get-token`, so the runner also needs the AWS CLI."""

    network: Name | None = Field(
        default=None,
        description=(
            "The site whose network the runner sits in or is routed into: a self-hosted runner in the data centre "
            "(a bare-metal site) or in an AWS site's VPC. It then reaches AWS sites only privately: its own VPC's "
            "private endpoint, or another site's through that site's interconnect. Unset: a runner outside every "
            "site network, which reaches AWS sites only through public endpoints and no bare-metal site."
        ),
    )
    cidrs: Cidrs = Field(
        min_length=1,
        description=(
            "The runner's source addresses as the API servers see them: its private addresses inside `network`, or "
            "its fixed public egress addresses when `network` is unset (GitHub-hosted runners have none)."
        ),
    )


class VpnInterconnect(Model):
    """An AWS Site-to-Site VPN: a virtual private gateway on the site's VPC, the on-prem VPN device as customer
    gateway, and the on-prem ranges routed to the private subnets (AWS Site-to-Site VPN user guide)."""

    kind: Literal["vpn"]
    site: Name = Field(description="The bare-metal site on the other side.")
    onprem_cidrs: Cidrs = Field(
        min_length=1, description="On-prem ranges routed to the VPC; the private API endpoint admits 443 from them."
    )
    customer_gateway_ip: IpAddress = Field(description="Public IPv4 address of the on-prem VPN device.")
    bgp_asn: int | None = Field(
        default=None,
        ge=1,
        le=2147483647,
        description="The device's BGP ASN for dynamic routing; unset: static routes to onprem_cidrs.",
    )

    @field_validator("customer_gateway_ip")
    @classmethod
    def _internet_facing_ipv4(cls, v: str) -> str:
        ip = ipaddress.ip_address(v)
        rfc1918 = any(ip in ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))
        if ip.version != 4 or rfc1918 or ip.is_loopback or ip.is_link_local or ip.is_multicast or ip.is_unspecified:
            raise ValueError(f"{v} is not an internet-facing IPv4 address (the VPN device's outside interface)")
        return v


class TransitGatewayInterconnect(Model):
    """The site's VPC attached to an existing transit gateway that already reaches on-prem (a Direct Connect
    gateway or a VPN attached to it); the private subnets route the on-prem ranges to it."""

    kind: Literal["transit-gateway"]
    site: Name = Field(description="The bare-metal site on the other side.")
    onprem_cidrs: Cidrs = Field(
        min_length=1, description="On-prem ranges routed to the transit gateway; the private API endpoint admits 443."
    )
    transit_gateway_id: str = Field(pattern=r"^tgw-[0-9a-f]{8,17}$", description="The transit gateway (tgw-...).")


class ExistingInterconnect(Model):
    """An adopted VPC that already routes the on-prem ranges (Direct Connect, VPN or transit gateway managed
    elsewhere); gpufleet only admits them to the private API endpoint of a cluster it creates."""

    kind: Literal["existing"]
    site: Name = Field(description="The bare-metal site on the other side.")
    onprem_cidrs: Cidrs = Field(min_length=1, description="On-prem ranges the VPC already routes.")


class PublicInterconnect(Model):
    """No private path: the on-prem site reaches the cluster's public endpoint from its fixed egress addresses,
    which `cluster.endpoint_public_cidrs` must admit."""

    kind: Literal["public"]
    site: Name = Field(description="The bare-metal site that reaches this cluster.")
    egress_cidrs: Cidrs = Field(min_length=1, description="The on-prem site's public egress (NAT) addresses.")


Interconnect = Annotated[
    VpnInterconnect | TransitGatewayInterconnect | ExistingInterconnect | PublicInterconnect,
    Field(discriminator="kind"),
]
PrivateInterconnect = VpnInterconnect | TransitGatewayInterconnect | ExistingInterconnect


class AwsAccount(Model):
    """Facts of the AWS account the estate's AWS sites deploy into (one account: the deployer's credentials)."""

    autoscaling_service_role: Literal["create", "existing"] | None = Field(
        default=None,
        description=(
            "Ignored, kept so that older stack files still load: gpufleet no longer creates or reads "
            "AWSServiceRoleForAutoScaling. EC2 Auto Scaling creates it with the account's first Auto Scaling group "
            "(an EKS node group's), and the site key admits it by ARN whether it exists yet or not. Remove the key."
        ),
    )
