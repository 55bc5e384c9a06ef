"""SiteInterconnect: the private path between an AWS site's VPC and the on-prem network (`interconnect`).

- vpn: a virtual private gateway attached to the VPC, the on-prem device as customer gateway (`ipsec.1`), a
  Site-to-Site VPN connection (BGP when the device's ASN is given, else static routes to `onprem_cidrs`) and route
  propagation into every private route table: a VPC route table needs a route to the remote network via the
  virtual private gateway, which propagation adds (AWS Site-to-Site VPN user guide, vpn-route-priority.html and
  vpn-edit-static-routes.html).
- transit-gateway: a VPC attachment in the private subnets (one per AZ) to the existing transit gateway, and a
  route per on-prem range in every private route table.
- existing / public: nothing to build here (an adopted VPC already routed; or the public endpoint).

The API security group rules that admit these ranges belong to the cluster (`EksClusterStack`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from model.spec import AwsSite, TransitGatewayInterconnect, VpnInterconnect
from model.tags import Tags


@dataclass(frozen=True)
class SiteInterconnectArgs:
    site: AwsSite
    tags: Tags
    vpc_id: pulumi.Input[str]
    private_subnet_ids: list[pulumi.Output[str]]  # one per AZ
    private_route_tables: dict[str, pulumi.Output[str]]  # AZ -> route table id


class SiteInterconnect(pulumi.ComponentResource):
    """Creates the VPN or transit-gateway path of a created VPC to the on-prem ranges."""

    def __init__(self, name: str, args: SiteInterconnectArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:Interconnect", name, None, opts)
        self._n = name
        self._args = args
        ic = args.site.interconnect
        if isinstance(ic, VpnInterconnect):
            self._vpn(ic)
        elif isinstance(ic, TransitGatewayInterconnect):
            self._transit_gateway(ic)
        self.register_outputs({})

    def _opts(self, **kw: object) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self, **kw)  # type: ignore[arg-type]

    def _vpn(self, ic: VpnInterconnect) -> None:
        a, n = self._args, self._n
        vgw = aws.ec2.VpnGateway(f"{n}-vgw", vpc_id=a.vpc_id, tags=a.tags.aws(Name=f"{n}-vgw"), opts=self._opts())
        cgw = aws.ec2.CustomerGateway(
            f"{n}-cgw",
            ip_address=ic.customer_gateway_ip,
            type="ipsec.1",
            bgp_asn=str(ic.bgp_asn) if ic.bgp_asn is not None else None,
            device_name=f"{ic.site} VPN device",
            tags=a.tags.aws(Name=f"{n}-cgw"),
            opts=self._opts(),
        )
        static = ic.bgp_asn is None
        vpn = aws.ec2.VpnConnection(
            f"{n}-vpn",
            vpn_gateway_id=vgw.id,
            customer_gateway_id=cgw.id,
            type="ipsec.1",
            static_routes_only=static,
            tags=a.tags.aws(Name=f"{n}-vpn"),
            opts=self._opts(),
        )
        if static:
            for cidr in ic.onprem_cidrs:
                aws.ec2.VpnConnectionRoute(
                    f"{n}-vpn-{cidr.replace('/', '-')}",
                    vpn_connection_id=vpn.id,
                    destination_cidr_block=cidr,
                    opts=self._opts(),
                )
        for az, table in a.private_route_tables.items():
            aws.ec2.VpnGatewayRoutePropagation(
                f"{n}-propagation-{az}", vpn_gateway_id=vgw.id, route_table_id=table, opts=self._opts()
            )

    def _transit_gateway(self, ic: TransitGatewayInterconnect) -> None:
        a, n = self._args, self._n
        attachment = aws.ec2transitgateway.VpcAttachment(
            f"{n}-tgw",
            transit_gateway_id=ic.transit_gateway_id,
            vpc_id=a.vpc_id,
            subnet_ids=a.private_subnet_ids,
            tags=a.tags.aws(Name=f"{n}-tgw"),
            opts=self._opts(),
        )
        for az, table in a.private_route_tables.items():
            for cidr in ic.onprem_cidrs:
                aws.ec2.Route(
                    f"{n}-{az}-{cidr.replace('/', '-')}",
                    route_table_id=table,
                    destination_cidr_block=cidr,
                    transit_gateway_id=ic.transit_gateway_id,
                    opts=self._opts(depends_on=[attachment]),
                )
