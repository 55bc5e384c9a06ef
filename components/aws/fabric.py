"""EfaFabricStack: one AZ (or Local Zone, opted in), one subnet, a security group open only to itself, an optional
cluster placement group."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from model.conventions import FABRIC_TAG
from model.spec import AwsNodePool, AwsSite, EfaFabric, FsxLustreTier
from model.subnets import local_zone, local_zone_group
from model.tags import Tags

RESERVED_CAPACITY = ("capacity-reservation", "capacity-block")


def pool_placement_group(pool: AwsNodePool, fabric: EfaFabric, created_name: str | None) -> str | None:
    """The placement group name a pool's launch template uses, or None.

    Capacity-block pools get none: Capacity Blocks don't support placement groups (EC2 user guide,
    ec2-capacity-blocks, Considerations). Otherwise a named group (`placement_group_name`, e.g. the one a capacity
    reservation was made in) wins. Pools on capacity reservations get no group otherwise: capacity blocks are co-located,
    and an ODCR launches only into the group it targets (terraform-aws-eks PR #3730: a forced cluster group
    makes reserved launches fail with InsufficientInstanceCapacity).
    """
    if pool.capacity.type == "capacity-block":
        return None
    if fabric.placement_group_name:
        return fabric.placement_group_name
    if pool.capacity.type in RESERVED_CAPACITY:
        return None
    return created_name


def lustre_fabrics(site: AwsSite) -> frozenset[str]:
    """The fabrics an FSx for Lustre tier lives on. The file system keeps network interfaces in the fabric's
    subnet, so that subnet and the VPC stay with the data when the stack is torn down (retained on delete: a
    subnet with interfaces in it cannot be deleted, nor a VPC with subnets)."""
    return frozenset(t.fabric for t in site.storage if isinstance(t, FsxLustreTier))


def fabric_needs_placement_group(fabric: EfaFabric, pools: list[AwsNodePool]) -> bool:
    """Create a group only when asked, no existing group is named, and some pool on the fabric would use it."""
    if not fabric.placement_group or fabric.placement_group_name:
        return False
    return any(p.fabric == fabric.name and p.capacity.type not in RESERVED_CAPACITY for p in pools)


@dataclass(frozen=True)
class EfaFabricArgs:
    site: AwsSite
    fabric: EfaFabric
    tags: Tags
    vpc_id: pulumi.Input[str]
    private_route_table_id: pulumi.Input[str] | None  # created VPC: the fabric AZ's private route table


class EfaFabricStack(pulumi.ComponentResource):
    """Creates the fabric's private subnet in its one AZ (or adopts `subnet_id`; retained on delete when an FSx
    for Lustre tier lives in it), the EFA security group (all traffic to and from itself, nothing wider) and,
    when a pool will use it, a cluster placement group."""

    subnet_id: pulumi.Output[str]
    security_group_id: pulumi.Output[str]
    placement_group_name: str | None  # the group this stack created, if any

    def __init__(self, name: str, args: EfaFabricArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:EfaFabric", name, None, opts)
        self._name = name
        self._args = args
        self.subnet_id = self._subnet()
        self.security_group_id = self._security_group()
        self.placement_group_name = self._placement_group()
        self.register_outputs({"subnet_id": self.subnet_id, "security_group_id": self.security_group_id})

    def _opts(self) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self)

    def _subnet(self) -> pulumi.Output[str]:
        f = self._args.fabric
        if f.subnet_id:
            return pulumi.Output.from_input(f.subnet_id)
        if not f.subnet_cidr:
            raise pulumi.RunError(f"fabric {f.name} needs subnet_cidr (created VPC) or subnet_id (adopted VPC)")
        zone = f.availability_zone
        opt_in = []
        if local_zone(self._args.site.region, zone):
            # EC2 sells P6e-GB200 UltraServer blocks only to accounts "opted in to the Dallas Local Zone"
            # (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-launch.html), and a subnet there
            # needs the zone group's opt-in (https://docs.aws.amazon.com/local-zones/latest/ug/getting-started.html).
            # Retained: an opt-in is the account's, not this stack's.
            opt_in = [
                aws.ec2.AvailabilityZoneGroup(
                    f"{self._name}-zone-group",
                    group_name=local_zone_group(zone),
                    opt_in_status="opted-in",
                    opts=pulumi.ResourceOptions(parent=self, retain_on_delete=True),
                )
            ]
        subnet = aws.ec2.Subnet(
            f"{self._name}-subnet",
            vpc_id=self._args.vpc_id,
            cidr_block=f.subnet_cidr,
            availability_zone=f.availability_zone,
            map_public_ip_on_launch=False,
            tags=self._args.tags.aws(Name=f"{self._name}-subnet", **{FABRIC_TAG: f.name}),
            opts=pulumi.ResourceOptions(
                parent=self, retain_on_delete=f.name in lustre_fabrics(self._args.site), depends_on=opt_in
            ),
        )
        if self._args.private_route_table_id is not None:
            aws.ec2.RouteTableAssociation(
                f"{self._name}-subnet",
                subnet_id=subnet.id,
                route_table_id=self._args.private_route_table_id,
                opts=self._opts(),
            )
        return subnet.id

    def _security_group(self) -> pulumi.Output[str]:
        f = self._args.fabric
        # EFA's OS-bypass traffic needs every protocol to and from the group itself (EC2 user guide efa-start,
        # "Prepare an EFA-enabled security group"); inline egress replaces the default allow-all egress rule.
        sg = aws.ec2.SecurityGroup(
            f"{self._name}-sg",
            vpc_id=self._args.vpc_id,
            description=f"EFA fabric {f.name}: all traffic between its members only",
            ingress=[
                aws.ec2.SecurityGroupIngressArgs(
                    protocol="-1", from_port=0, to_port=0, self=True, description="EFA: all traffic from the fabric"
                )
            ],
            egress=[
                aws.ec2.SecurityGroupEgressArgs(
                    protocol="-1", from_port=0, to_port=0, self=True, description="EFA: all traffic to the fabric"
                )
            ],
            tags=self._args.tags.aws(Name=f"{self._name}-sg", **{FABRIC_TAG: f.name}),
            opts=self._opts(),
        )
        return sg.id

    def _placement_group(self) -> str | None:
        f = self._args.fabric
        if not fabric_needs_placement_group(f, self._args.site.node_pools):
            return None
        # Placement group names are unique per account and region: qualify with estate, environment and site.
        base = self._args.tags.base
        group_name = f"{base['cluster']}-{base['env']}-{self._name}"
        aws.ec2.PlacementGroup(
            f"{self._name}-pg",
            name=group_name,
            strategy="cluster",
            tags=self._args.tags.aws(Name=group_name, **{FABRIC_TAG: f.name}),
            opts=self._opts(),
        )
        return group_name
