"""GpuNodePool: one EKS managed node group and its launch template per pool (never a resource per node).

An autoscaled pool's group (AwsNodePool.autoscaled: min below max, or a burst pool) is sized by the cluster
autoscaler inside its bounds; a burst pool's bounds are the burst window's (0 to the window's nodes, model.burst).
Its desired size is the autoscaler's after creation (never reset by an `up`), and its Auto Scaling group carries
the tags the autoscaler discovers it and scales it from zero by (components.aws.autoscaler). While a window
holds capacity, a backstop scales a burst group to zero at the window's expiry + grace with no runner
(components.aws.backstop). It is built first and the group depends on it, so the capacity never exists without it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.aws import autoscaler
from components.aws.backstop import NodeGroupBackstop, NodeGroupBackstopArgs
from components.aws.launch import (
    launch_template_args,
    mounts_lustre,
    nodeadm_user_data,
    template_version,
    update_config,
)
from model import clock
from model.blocks import block_phase, block_warning
from model.burst import backstop, burst_group_size, effective_scaling, group_stopped
from model.conventions import BURST_STOPPED_TAINT, BURST_TAG, POOL_TAG, SHARED, Taint, eks_rejects_label
from model.efa import EFA_HUGEPAGES, efa_interfaces, efa_node_hugepages
from model.health import eks_node_repair
from model.kinds import aws as aws_kind
from model.kinds.aws import burst_node_group_name
from model.node_groups import CAPACITY_TYPES
from model.nodes import pool_labels, pool_taints
from model.queues import gpu_resource_name
from model.rdma import EFA_RESOURCE
from model.spec import AwsNodePool, AwsSite, BurstWindow, EfaFabric, EstateSpec
from model.tags import Tags
from model.versions import kubernetes_minor

# EKS-optimized AL2023 NVIDIA AMI types by the instance's architecture (EKS API AMITypes, e.g. CloudFormation
# AWS::EKS::Nodegroup AmiType; pulumi-aws eks.NodeGroup amiType). Grace-based types (p6e-gb200) are arm64, and the
# EKS user guide (ml-eks-nvidia-ultraserver) prescribes the AL2023 ARM NVIDIA AMI for them.
GPU_AMI_TYPES = {"x86_64": "AL2023_x86_64_NVIDIA", "arm64": "AL2023_ARM_64_NVIDIA"}
# The EKS AL2023 NVIDIA AMIs are Linux; a block's platform must match its instances' AMI (EC2 user guide,
# capacity-blocks-launch: an instance "can't launch using an AMI with a different platform").
BLOCK_PLATFORM = "Linux/UNIX"


def ami_release(pool: AwsNodePool) -> str | None:
    """The pool's AL2023 NVIDIA AMI release when it pins one; None: EKS takes the newest release for the group's
    `version` when it creates or upgrades the group. No default pin: EKS refuses to move a group to an older AMI
    release ("You cannot roll back a node group to an earlier Kubernetes version or AMI version",
    API_UpdateNodegroupVersion), so a pin older than what a group already runs would fail the `up`."""
    return pool.ami_release


def gpu_ami_type(pool: AwsNodePool) -> str:
    """The node group's AMI type, from the catalog's architecture of the pool's instance type."""
    return GPU_AMI_TYPES[pool.instance.architecture]


def imds_hop_limit(pool: AwsNodePool) -> int:
    return 2 if pool.pods_need_imds else 1


def node_repair_config(pool: AwsNodePool) -> aws.eks.NodeGroupNodeRepairConfigArgs:
    """EKS node repair as the pool's health says (model.health.eks_node_repair): off when another remediator owns
    the nodes, else with explicit limits and per-condition overrides."""
    cfg = eks_node_repair(pool.health)
    overrides = [
        aws.eks.NodeGroupNodeRepairConfigNodeRepairConfigOverrideArgs(**o)
        for o in cfg.pop("node_repair_config_overrides", [])
    ]
    return aws.eks.NodeGroupNodeRepairConfigArgs(**cfg, node_repair_config_overrides=overrides or None)


def mng_labels(spec: EstateSpec, pool: AwsNodePool) -> dict[str, str]:
    """The pool's node labels the node-group API accepts. The others (TENANT_NODE_LABEL) kubelets may not
    self-apply either (NodeRestriction); the tenant taint and DEDICATED_TENANT_LABEL mark such pools instead."""
    return {k: v for k, v in pool_labels(spec, pool).items() if not eks_rejects_label(k)}


def mng_taint(t: Taint) -> aws.eks.NodeGroupTaintArgs:
    return aws.eks.NodeGroupTaintArgs(**t.as_eks())


def mng_taints(spec: EstateSpec, pool: AwsNodePool, window: BurstWindow | None, now: dt.datetime) -> list[Taint]:
    """The node group's taints: the pool's, and on a stopped burst group the stopped taint its AWS stop adds
    (model.burst.group_stopped), so a refreshing `up` keeps it. Kueue's flavors never tolerate it."""
    stopped = pool.burst and group_stopped(spec, pool, window, now)
    return [*pool_taints(pool), *([BURST_STOPPED_TAINT] if stopped else [])]


def mng_scaling(
    spec: EstateSpec, pool: AwsNodePool, window: BurstWindow | None, now: dt.datetime
) -> tuple[int, int, int]:
    """(min, desired, max) for the node group. A burst pool: 0, 0 (sent only when idle: model.burst.
    burst_group_size) and the window's cap. EKS requires maxSize >= 1, so an idle burst pool keeps max 1: the
    autoscaler could start one node there only for a pod outside Kueue (the cloud queues hold outside windows)
    that tolerates the GPU taint and selects the pool. An idle pool is sent desired 0, so the group empties. A
    capacity-block pool starts at desired 0 until its block starts (block_not_started), and holds no node once its
    block has ended (EKS requires a max of at least 1; the expired reservation launches nothing). A block is
    judged by the program's clock (model.clock), not by `now`, which is the moment the burst window is judged at."""
    if pool.burst:
        desired, most, _ = burst_group_size(spec, pool, window, now)
        return 0, desired, most
    if block_phase(pool, clock.now()) == "ended":
        return 0, 0, 1
    s = effective_scaling(spec, pool, window, now)
    return s.min, 0 if block_not_started(pool, clock.now()) else s.desired_nodes, max(1, s.max)


def block_not_started(pool: AwsNodePool, now: dt.datetime) -> bool:
    """A capacity-block pool whose block has not started, or whose start the stack does not give.

    Its node group is created at desired 0: before the reservation is active the Auto Scaling group cannot
    launch into it, and its scaling activities fail (EKS user guide, capacity-blocks-mng: "if the create request
    is made before the capacity reservation is active, then the ASG won't be able to launch Amazon EC2
    instances until it becomes active"). The cluster autoscaler grows the group once the block is active and
    work waits (a block pool's min is 0, below its max). The desired size is the group's after creation
    (ignored_changes), so this is what the group starts at."""
    if pool.capacity.type != "capacity-block":
        return False
    block = pool.capacity.block
    return block is None or block.start is None or now < block.start


def ignored_changes(spec: EstateSpec, pool: AwsNodePool, window: BurstWindow | None, now: dt.datetime) -> list[str]:
    """Node groups whose desired size is not the stack's after creation: an autoscaled group's belongs to the
    cluster autoscaler (EKS API reference, NodegroupScalingConfig: with the Cluster Autoscaler "you shouldn't
    change the desiredSize value directly"), a capacity-block group's to EKS, which scales it to 0 forty minutes
    before the block ends ("Amazon EKS Node Group Capacity Scaledown Before Reservation End"; EKS user guide,
    capacity-blocks-mng), so a later `up` must not raise it again into a finished block. A burst group's is sent
    only when idle (model.burst.burst_group_size).

    Pulumi then uses the desired size its state holds, never the stack's: when min or max changes the whole
    scaling config is sent with that state value, the size at the last refresh
    (https://www.pulumi.com/docs/iac/concepts/options/ignorechanges/, "How ignoreChanges works"). So
    `pulumi up --refresh` keeps the autoscaler's count."""
    if pool.capacity.type == "capacity-block":
        # Once the block has ended, desired 0 is sent: no later `up` may leave a size the group cannot hold.
        return [] if block_phase(pool, clock.now()) == "ended" else ["scalingConfig.desiredSize"]
    if pool.burst:
        return [] if burst_group_size(spec, pool, window, now)[2] else ["scalingConfig.desiredSize"]
    return ["scalingConfig.desiredSize"] if pool.autoscaled else []


def burst_node_labels(pool: AwsNodePool) -> dict[str, str]:
    """Labels autoscaled nodes carry for the autoscaler: its AWS GPU label (autoscaler.GPU_LABEL)."""
    return {autoscaler.GPU_LABEL: pool.gpu_model.id.lower()} if pool.autoscaled else {}


def _asg_name(groups: Sequence[aws.eks.outputs.NodeGroupResource] | None) -> str:
    """The Auto Scaling group EKS made for a node group ("" until it exists)."""
    asgs = groups[0].autoscaling_groups if groups else None
    return (asgs[0].name or "") if asgs else ""


def asg_tags(spec: EstateSpec, site: AwsSite, pool: AwsNodePool, cluster: str) -> dict[str, str]:
    """Tags on an autoscaled pool's Auto Scaling group: discovery by the autoscaler and its node template (labels,
    taints, GPU resources, EFA interfaces and huge pages) for scaling from zero."""
    labels = {**mng_labels(spec, pool), **burst_node_labels(pool)}
    units = pool.gpus_per_node * spec.pool_gpu_units(pool.name) // max(1, spec.pool_gpu_capacity(pool.name))
    on_efa = any(isinstance(f, EfaFabric) and f.name == pool.fabric for f in site.fabrics)
    devices: dict[str, int] = {}
    if on_efa:
        devices = {EFA_RESOURCE: sum(1 for s in efa_interfaces(pool.instance_type) if s.is_efa), **efa_node_hugepages()}
    template = aws_kind.node_template_tags(labels, pool_taints(pool), gpu_resource_name(site, pool), units, devices)
    return {**aws_kind.discovery_tags(cluster, pool.name), **template}


@dataclass(frozen=True)
class EfaAttachment:
    subnet_id: pulumi.Input[str]
    security_group_id: pulumi.Input[str]
    placement_group: str | None


@dataclass(frozen=True)
class GpuNodePoolArgs:
    spec: EstateSpec
    site: AwsSite
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
    alert_topic_arn: pulumi.Input[str] | None = None  # the burst alert topic, for the backstop's alarm
    cluster_version: pulumi.Input[str] | None = None  # the control plane's minor as its resource reports it


class GpuNodePool(pulumi.ComponentResource):
    """Creates a launch template (IMDSv2, encrypted gp3 root with the site key, NVMe scratch via nodeadm, EFA
    interfaces from the catalog and the fabric's placement group, reserved or block capacity, tags that reach
    instances, volumes and interfaces) and an EKS managed node group (AL2023 NVIDIA AMI, pool labels and
    taints, scaling from the burst window, node auto repair as the pool's health sets it)."""

    def __init__(self, name: str, args: GpuNodePoolArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:GpuNodePool", name, None, opts)
        self._n = name
        self._args = args
        pool = args.pool
        burst = {BURST_TAG: args.cluster_name} if pool.burst else {}
        self._tags = args.tags.aws(tenant=pool.dedicated_to or SHARED, **{POOL_TAG: pool.name}, **burst)
        self.reservation_id: pulumi.Input[str] | None = pool.capacity.reservation_id
        if pool.capacity.offering_id is not None:
            self.reservation_id = self._bought_block(pool.capacity.offering_id).id
        warning = block_warning(pool, clock.now())
        if warning:
            pulumi.log.warn(warning, resource=self)
        self.launch_template = self._launch_template()
        backstop = self._backstop() if pool.burst else None
        self.node_group = self._node_group([backstop] if backstop is not None else [])
        if pool.autoscaled:
            self._autoscaler_tags()
        self.register_outputs({})

    def _backstop(self) -> NodeGroupBackstop:
        """The pool's AWS-side stop: its queue and alarm always (a failure after the window still tells and keeps
        AWS's answer), the schedule while the window holds the group's capacity. Its time comes from the window, not
        `now` (model.burst.aws_stop), so a later `up` leaves it as is. Within CLOCK_SKEW of the stop the program
        stops the group itself (model.burst.group_stopped) and sends no schedule: none with a time so near that AWS
        could refuse it and hold back the group's update, which depends on it."""
        a = self._args
        stop = backstop(a.spec, a.window, a.now)
        if stop is not None and (stop.pool != a.pool.name or group_stopped(a.spec, a.pool, a.window, a.now)):
            stop = None  # another pool's window, or the program stops this group itself
        return NodeGroupBackstop(
            f"{self._n}-backstop",
            NodeGroupBackstopArgs(
                pool=a.pool.name,
                region=a.site.region,
                cluster_name=a.cluster_name,
                node_group_name=burst_node_group_name(a.pool),
                node_role_arn=a.node_role_arn,
                stop_at=None if stop is None else stop.aws_stop_at,
                scaling=mng_scaling(a.spec, a.pool, a.window, a.now if stop is None else stop.aws_stop_at),  # idle
                tags=self._tags,
                alert_topic_arn=a.alert_topic_arn,
            ),
            pulumi.ResourceOptions(parent=self, depends_on=a.depends_on),
        )

    def _bought_block(self, offering_id: str) -> aws.ec2.CapacityBlockReservation:
        """The Capacity Block bought from the stack's offering. AWS charges it up front and never cancels it:
        "Once created, a reservation is valid for the duration of the provided capacityBlockOfferingId and cannot
        be deleted. Performing a destroy will only remove the resource from state"
        (https://www.pulumi.com/registry/packages/aws/api-docs/ec2/capacityblockreservation/). So it is protected
        (a `destroy` stops before it) and retained on delete (removing it never pretends to cancel it), and an
        offering change is a second purchase only after `pulumi state unprotect`."""
        return aws.ec2.CapacityBlockReservation(
            f"{self._n}-block",
            capacity_block_offering_id=offering_id,
            instance_platform=BLOCK_PLATFORM,
            tags=self._tags,
            opts=pulumi.ResourceOptions(parent=self, protect=True, retain_on_delete=True),
        )

    def _launch_template(self) -> aws.ec2.LaunchTemplate:
        a, pool = self._args, self._args.pool
        kw = launch_template_args(
            instance_type=pool.instance_type,
            hop_limit=imds_hop_limit(pool),
            root_volume_gib=pool.root_volume_gib,
            key_arn=a.key_arn,
            tags=self._tags,
            description=f"gpufleet pool {pool.name}: {pool.instance_type}",
            user_data=nodeadm_user_data(
                a.scratch_mount_path,
                local_storage=bool(pool.instance.local_nvme_disks),
                lustre_client=mounts_lustre(a.site),
                hugepages=EFA_HUGEPAGES if a.efa is not None else 0,
            ),
        )
        if a.efa is not None:
            kw["network_interfaces"] = self._efa_interfaces(a.efa)
            if a.efa.placement_group:
                kw["placement"] = aws.ec2.LaunchTemplatePlacementArgs(group_name=a.efa.placement_group)
        if pool.capacity.type in ("capacity-reservation", "capacity-block"):
            kw["capacity_reservation_specification"] = aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
                capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                    capacity_reservation_id=self.reservation_id
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

    def _group_version(self) -> pulumi.Input[str]:
        """The group's minor: the cluster's pin, and for a burst pool the control plane's own. A burst command's
        `up` targets the burst groups, not the cluster (gpufleet/burst/targets.py), so the cluster resource then
        reports the minor it runs, and a bumped `cluster.version` cannot move the group past the control plane
        ("kubelet must not be newer than kube-apiserver": kubernetes.io/releases/version-skew-policy)."""
        a = self._args
        if a.pool.burst and a.cluster_version is not None:
            return a.cluster_version
        return a.site.cluster.version

    def _group_release(self) -> pulumi.Input[str] | None:
        """The pinned AMI release; for a burst pool only while it is of the group's minor (else EKS's newest)."""
        release = ami_release(self._args.pool)
        version = self._group_version()
        if release is None or isinstance(version, str):
            return release
        live: pulumi.Output[str] = pulumi.Output.from_input(version)
        return live.apply(lambda v: release if kubernetes_minor(release) == v else None)  # type: ignore[arg-type,return-value]

    def _node_group(self, backstop: list[pulumi.Resource]) -> aws.eks.NodeGroup:
        """The node group; a burst one after its backstop, named so the backstop can name it (replaced by delete
        first, as a fixed name cannot exist twice)."""
        a, pool = self._args, self._args.pool
        lo, desired, hi = mng_scaling(a.spec, pool, a.window, a.now)
        subnets = [a.efa.subnet_id] if a.efa is not None else a.subnet_ids
        lt = self.launch_template
        return aws.eks.NodeGroup(
            f"{self._n}-ng",
            node_group_name=burst_node_group_name(pool) if pool.burst else None,
            cluster_name=a.cluster_name,
            node_role_arn=a.node_role_arn,
            subnet_ids=subnets,
            ami_type=gpu_ami_type(pool),
            # The kubelet's minor and the AMI release (which holds the GPU driver) are pinned, so an `up` launches
            # what the last one did; a minor bump moves both, after the add-ons (the pool depends on the cluster).
            version=self._group_version(),
            release_version=self._group_release(),
            capacity_type=CAPACITY_TYPES[pool.capacity.type],
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(min_size=lo, desired_size=desired, max_size=hi),
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
                id=lt.id, version=lt.latest_version.apply(template_version)
            ),
            labels={
                **a.tags.labels(tenant=pool.dedicated_to or SHARED),
                **mng_labels(a.spec, pool),
                **burst_node_labels(pool),
            },
            taints=[mng_taint(t) for t in mng_taints(a.spec, pool, a.window, a.now)],
            update_config=update_config(),
            node_repair_config=node_repair_config(pool),
            tags=self._tags,
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[*a.depends_on, *backstop],
                ignore_changes=ignored_changes(a.spec, pool, a.window, a.now),
                delete_before_replace=pool.burst,
            ),
        )

    def _autoscaler_tags(self) -> None:
        # EKS creates the group's Auto Scaling group and copies none of the node group's tags to it; its name is
        # known only once the node group exists (an Output, passed as input: no resource is made in apply()).
        a = self._args
        asg = self.node_group.resources.apply(_asg_name)
        tags = asg_tags(a.spec, a.site, a.pool, a.cluster_name)
        if a.pool.burst and group_stopped(a.spec, a.pool, a.window, a.now):
            # A stopped burst group is no autoscaled group: the autoscaler no longer discovers it, and its IAM policy
            # lets it scale only groups with this tag (components/aws/autoscaler.py iam_policy).
            del tags[aws_kind.AUTOSCALED_TAG]
        for key, value in tags.items():
            aws.autoscaling.Tag(
                aws_kind.asg_tag_name(self._n, key),
                autoscaling_group_name=asg,
                tag=aws.autoscaling.TagTagArgs(key=key, value=value, propagate_at_launch=False),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.node_group]),
            )
