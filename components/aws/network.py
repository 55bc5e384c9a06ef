"""SiteNetwork: the VPC of an AWS site, created (private + public subnets per AZ, NAT for egress, an S3 gateway
endpoint and optional interface endpoints) or adopted."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.aws.fabric import lustre_fabrics
from model.spec import AwsSite, EfaFabric
from model.subnets import plan_subnets
from model.tags import Tags


@dataclass(frozen=True)
class SiteNetworkArgs:
    site: AwsSite
    tags: Tags


class SiteNetwork(pulumi.ComponentResource):
    """Creates the site VPC: per AZ a private subnet (nodes) and a public subnet with a NAT gateway (egress),
    an internet gateway and route tables; an S3 gateway endpoint on the private route tables (S3 traffic - image
    layers from ECR, datasets, checkpoints - stays off the NAT gateways, which bill per GB processed; gateway
    endpoints cost nothing: VPC user guide, gateway endpoints) and the interface endpoints `vpc.interface_endpoints`
    lists. A VPC an FSx for Lustre tier lives in is retained on delete with it. For an adopted VPC (`vpc.vpc_id`)
    it creates nothing and hands out the given private subnet ids. VPC flow logs are left to the account's
    baseline."""

    vpc_id: pulumi.Output[str]
    private_subnet_ids: list[pulumi.Output[str]]
    private_route_tables: dict[str, pulumi.Output[str]]  # AZ -> route table id (created VPC only)

    def __init__(self, name: str, args: SiteNetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:Network", name, None, opts)
        self._name = name
        self._tags = args.tags
        site = args.site
        self.private_route_tables = {}
        self.private_subnets_by_az: dict[str, pulumi.Output[str]] = {}
        if site.vpc.vpc_id:
            self.vpc_id = pulumi.Output.from_input(site.vpc.vpc_id)
            self.private_subnet_ids = [pulumi.Output.from_input(s) for s in site.vpc.private_subnet_ids]
        else:
            self._create(site)
        self.register_outputs({"vpc_id": self.vpc_id, "private_subnet_ids": self.private_subnet_ids})

    def _opts(self) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self)

    def _create(self, site: AwsSite) -> None:
        assert site.vpc.cidr is not None
        fabric_cidrs = [f.subnet_cidr for f in site.fabrics if isinstance(f, EfaFabric) and f.subnet_cidr]
        plan = plan_subnets(site.vpc.cidr, site.availability_zones, fabric_cidrs)
        n = self._name
        vpc = aws.ec2.Vpc(
            f"{n}-vpc",
            cidr_block=site.vpc.cidr,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags=self._tags.aws(Name=f"{n}-vpc"),
            # Retained with an FSx for Lustre tier: a VPC with subnets in it cannot be deleted (components.aws.fabric).
            opts=pulumi.ResourceOptions(parent=self, retain_on_delete=bool(lustre_fabrics(site))),
        )
        self.vpc_id = vpc.id
        igw = aws.ec2.InternetGateway(
            f"{n}-igw", vpc_id=vpc.id, tags=self._tags.aws(Name=f"{n}-igw"), opts=self._opts()
        )
        public_rt = aws.ec2.RouteTable(
            f"{n}-public",
            vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=igw.id)],
            tags=self._tags.aws(Name=f"{n}-public"),
            opts=self._opts(),
        )
        private_ids = []
        for az in site.availability_zones:
            public = aws.ec2.Subnet(
                f"{n}-public-{az}",
                vpc_id=vpc.id,
                cidr_block=plan.public[az],
                availability_zone=az,
                map_public_ip_on_launch=False,
                tags=self._tags.aws(Name=f"{n}-public-{az}", **{"kubernetes.io/role/elb": "1"}),
                opts=self._opts(),
            )
            aws.ec2.RouteTableAssociation(
                f"{n}-public-{az}", subnet_id=public.id, route_table_id=public_rt.id, opts=self._opts()
            )
            # "It's recommended to denote that the NAT Gateway depends on the Internet Gateway for the VPC in which the
            # NAT Gateway's subnet is located" (pulumi-aws and Terraform aws_nat_gateway docs): created after it,
            # deleted before it.
            after_igw = pulumi.ResourceOptions.merge(self._opts(), pulumi.ResourceOptions(depends_on=[igw]))
            eip = aws.ec2.Eip(f"{n}-nat-{az}", domain="vpc", tags=self._tags.aws(Name=f"{n}-nat-{az}"), opts=after_igw)
            nat = aws.ec2.NatGateway(
                f"{n}-nat-{az}",
                subnet_id=public.id,
                allocation_id=eip.id,
                tags=self._tags.aws(Name=f"{n}-nat-{az}"),
                opts=after_igw,
            )
            private_rt = aws.ec2.RouteTable(
                f"{n}-private-{az}",
                vpc_id=vpc.id,
                routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat.id)],
                tags=self._tags.aws(Name=f"{n}-private-{az}"),
                opts=self._opts(),
            )
            private = aws.ec2.Subnet(
                f"{n}-private-{az}",
                vpc_id=vpc.id,
                cidr_block=plan.private[az],
                availability_zone=az,
                map_public_ip_on_launch=False,
                tags=self._tags.aws(Name=f"{n}-private-{az}", **{"kubernetes.io/role/internal-elb": "1"}),
                opts=self._opts(),
            )
            aws.ec2.RouteTableAssociation(
                f"{n}-private-{az}", subnet_id=private.id, route_table_id=private_rt.id, opts=self._opts()
            )
            self.private_route_tables[az] = private_rt.id
            self.private_subnets_by_az[az] = private.id
            private_ids.append(private.id)
        self.private_subnet_ids = private_ids
        self._endpoints(site, vpc.id)

    def _endpoints(self, site: AwsSite, vpc_id: pulumi.Output[str]) -> None:
        n = self._name
        aws.ec2.VpcEndpoint(
            f"{n}-s3",
            vpc_id=vpc_id,
            service_name=f"com.amazonaws.{site.region}.s3",
            vpc_endpoint_type="Gateway",
            route_table_ids=list(self.private_route_tables.values()),
            tags=self._tags.aws(Name=f"{n}-s3"),
            opts=self._opts(),
        )
        if not site.vpc.interface_endpoints:
            return
        # Interface endpoints with private DNS answer the services' public names inside the VPC (VPC user guide,
        # privatelink "Access an AWS service using an interface VPC endpoint"); they need 443 from the VPC.
        sg = aws.ec2.SecurityGroup(
            f"{n}-endpoints",
            vpc_id=vpc_id,
            description="Interface VPC endpoints: HTTPS from the VPC",
            ingress=[
                aws.ec2.SecurityGroupIngressArgs(
                    protocol="tcp", from_port=443, to_port=443, cidr_blocks=[site.vpc.cidr or ""],
                    description="HTTPS from the VPC",
                )
            ],
            tags=self._tags.aws(Name=f"{n}-endpoints"),
            opts=self._opts(),
        )  # fmt: skip
        for service in site.vpc.interface_endpoints:
            aws.ec2.VpcEndpoint(
                f"{n}-{service}",
                vpc_id=vpc_id,
                service_name=f"com.amazonaws.{site.region}.{service}",
                vpc_endpoint_type="Interface",
                private_dns_enabled=True,
                subnet_ids=self.private_subnet_ids,
                security_group_ids=[sg.id],
                tags=self._tags.aws(Name=f"{n}-{service}"),
                opts=self._opts(),
            )
