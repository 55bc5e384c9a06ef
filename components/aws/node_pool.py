"""GpuNodePool: one EKS managed node group and its launch template per pool (never a resource per node)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.aws.efa import efa_interfaces
from components.aws.launch import launch_template_args, nodeadm_user_data, template_version
from components.model.conventions import POOL_TAG, SHARED, Taint, eks_rejects_label
from components.model.nodes import pool_labels, pool_taints
from components.model.spec import AwsNodePool, BurstWindow, EstateSpec
from components.model.tags import Tags
from components.model.windows import effective_scaling

GPU_AMI_TYPE = "AL2023_x86_64_NVIDIA"
CAPACITY_TYPES = {
    "on-demand": "ON_DEMAND",
    "spot": "SPOT",
    "capacity-reservation": "ON_DEMAND",  # an ODCR is on-demand capacity targeted by the launch template
    "capacity-block": "CAPACITY_BLOCK",  # EKS user guide, capacity-blocks-mng
}
MNG_TAINT_EFFECTS = {"NoSchedule": "NO_SCHEDULE", "NoExecute": "NO_EXECUTE", "PreferNoSchedule": "PREFER_NO_SCHEDULE"}


def imds_hop_limit(pool: AwsNodePool) -> int:
    return 2 if pool.pods_need_imds else 1


def mng_labels(spec: EstateSpec, pool: AwsNodePool) -> dict[str, str]:
    """The pool's node labels the node-group API accepts. The others (TENANT_NODE_LABEL) kubelets may not
    self-apply either (NodeRestriction); the tenant taint and DEDICATED_TENANT_LABEL mark such pools instead."""
    return {k: v for k, v in pool_labels(spec, pool).items() if not eks_rejects_label(k)}


def mng_taint(t: Taint) -> aws.eks.NodeGroupTaintArgs:
    return aws.eks.NodeGroupTaintArgs(key=t.key, value=t.value, effect=MNG_TAINT_EFFECTS[t.effect])


def mng_scaling(pool: AwsNodePool, window: BurstWindow | None, now: dt.datetime) -> tuple[int, int, int]:
    """(min, desired, max) for the node group. EKS requires maxSize >= 1, so an idle burst pool keeps max 1
    with min and desired 0: nothing launches unless an autoscaler raises desired (gpufleet installs none)."""
    s = effective_scaling(pool, window, now)
    return s.min, s.desired_nodes, max(1, s.max)


def block_ignored_changes(pool: AwsNodePool) -> list[str]:
    """A capacity-block node group's desired size belongs to EKS after creation: it scales the group to 0 forty
    minutes before the block ends ("Amazon EKS Node Group Capacity Scaledown Before Reservation End"; EKS user
    guide, capacity-blocks-mng), and a later `up` must not raise it again into a finished block. The schema keeps
    such pools at min 0, so the scale-down stays within the group's bounds."""
    return ["scalingConfig.desiredSize"] if pool.capacity.type == "capacity-block" else []


@dataclass(frozen=True)
class EfaAttachment:
    subnet_id: pulumi.Input[str]
    security_group_id: pulumi.Input[str]
    placement_group: str | None


@dataclass(frozen=True)
class GpuNodePoolArgs:
    spec: EstateSpec
    pool: AwsNodePool
    tags: Tags
    window: BurstWindow | None
    now: dt.datetime
    cluster_name: str
    node_role_arn: pulumi.Input[str]
    key_arn: pulumi.Input[str]
    cluster_security_group_id: pulumi.Input[str]
    subnet_ids: list[pulumi.Input[str]]  # ignored for EFA pools (the fabric's one subnet)
    efa: EfaAttachment | None
    scratch_mount_path: str | None
    depends_on: list[pulumi.Resource]


class GpuNodePool(pulumi.ComponentResource):
    """Creates a launch template (IMDSv2, encrypted gp3 root with the site key, NVMe scratch via nodeadm, EFA
    interfaces from the catalog and the fabric's placement group, reserved or block capacity, tags that reach
    instances, volumes and interfaces) and an EKS managed node group (AL2023 NVIDIA AMI, pool labels and
    taints, scaling from the burst window, node auto repair)."""

    def __init__(self, name: str, args: GpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:GpuNodePool", name, None, opts)
        self._n = name
        self._args = args
        pool = args.pool
        self._tags = args.tags.aws(tenant=pool.dedicated_to or SHARED, **{POOL_TAG: pool.name})
        self.launch_template = self._launch_template()
        self.node_group = self._node_group()
        self.register_outputs({})

    def _launch_template(self) -> aws.ec2.LaunchTemplate:
        a, pool = self._args, self._args.pool
        kw = launch_template_args(
            instance_type=pool.instance_type,
            hop_limit=imds_hop_limit(pool),
            root_volume_gib=pool.root_volume_gib,
            key_arn=a.key_arn,
            tags=self._tags,
            description=f"gpufleet pool {pool.name}: {pool.instance_type}",
            user_data=nodeadm_user_data(a.scratch_mount_path) if pool.instance.local_nvme_disks else None,
        )
        if a.efa is not None:
            kw["network_interfaces"] = self._efa_interfaces(a.efa)
            if a.efa.placement_group:
                kw["placement"] = aws.ec2.LaunchTemplatePlacementArgs(group_name=a.efa.placement_group)
        if pool.capacity.type in ("capacity-reservation", "capacity-block"):
            kw["capacity_reservation_specification"] = aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
                capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                    capacity_reservation_id=pool.capacity.reservation_id
                )
            )
        if pool.capacity.type == "capacity-block":
            kw["instance_market_options"] = aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(
                market_type="capacity-block"
            )
        return aws.ec2.LaunchTemplate(f"{self._n}-lt", **kw, opts=pulumi.ResourceOptions(parent=self))

    def _efa_interfaces(self, efa: EfaAttachment) -> list[aws.ec2.LaunchTemplateNetworkInterfaceArgs]:
        # Security groups on interfaces replace the ones EKS would add, so the cluster security group (node <->
        # control plane) goes on every interface with the EFA group. No subnet here: EKS takes it from the node
        # group and rejects launch templates that name one (EKS user guide, device-management-efa).
        groups = [self._args.cluster_security_group_id, efa.security_group_id]
        out = []
        for slot in efa_interfaces(self._args.pool.instance_type):
            out.append(
                aws.ec2.LaunchTemplateNetworkInterfaceArgs(
                    network_card_index=slot.network_card_index,
                    device_index=slot.device_index,
                    interface_type=slot.interface_type,
                    security_groups=groups,
                    delete_on_termination="true",
                    associate_public_ip_address="false" if not slot.is_efa else None,
                    description=f"{self._args.pool.name} card {slot.network_card_index} {slot.interface_type}",
                )
            )
        return out

    def _node_group(self) -> aws.eks.NodeGroup:
        a, pool = self._args, self._args.pool
        lo, desired, hi = mng_scaling(pool, a.window, a.now)
        subnets = [a.efa.subnet_id] if a.efa is not None else a.subnet_ids
        lt = self.launch_template
        return aws.eks.NodeGroup(
            f"{self._n}-ng",
            cluster_name=a.cluster_name,
            node_role_arn=a.node_role_arn,
            subnet_ids=subnets,
            ami_type=GPU_AMI_TYPE,
            capacity_type=CAPACITY_TYPES[pool.capacity.type],
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(min_size=lo, desired_size=desired, max_size=hi),
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
                id=lt.id, version=lt.latest_version.apply(template_version)
            ),
            labels={**a.tags.labels(tenant=pool.dedicated_to or SHARED), **mng_labels(a.spec, pool)},
            taints=[mng_taint(t) for t in pool_taints(pool)],
            update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1),
            node_repair_config=aws.eks.NodeGroupNodeRepairConfigArgs(enabled=True),
            tags=self._tags,
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=a.depends_on, ignore_changes=block_ignored_changes(pool)
            ),
        )
