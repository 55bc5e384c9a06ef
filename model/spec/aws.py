"""The AWS side of the schema: EC2 node pools, the EFA fabric, FSx for Lustre / EFS / S3 tiers, VPC and EKS."""

from __future__ import annotations

import datetime as dt
import ipaddress
from typing import Annotated, Literal

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from model import catalog, versions
from model.spec.base import Model, Name
from model.spec.health import AwsHealth
from model.spec.net import CidrRange
from model.spec.pools import Capacity, PoolBase, Scaling

# AWS VPC and subnet IPv4 ranges are /16 to /28 (VPC user guide, "VPC CIDR blocks" and "Subnet CIDR blocks":
# https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html); gpufleet creates them host bits clear.
VPC = CidrRange(16, 28, ipv4_only=True, strict=True)
SUBNET = CidrRange(16, 28, ipv4_only=True, strict=True)


class AwsNodePool(PoolBase):
    """An EKS managed node group with a launch template; GPU facts come from the catalog."""

    instance_type: str = Field(description="EC2 GPU instance type from the catalog, e.g. `p5.48xlarge`.")
    availability_zone: str | None = Field(
        default=None, description="AZ of a pool without a fabric (pools on a fabric use the fabric's AZ)."
    )
    capacity: Capacity = Field(default_factory=Capacity, description="How capacity is bought.")
    scaling: Scaling = Field(description="Node-count bounds.")
    root_volume_gib: int = Field(default=200, ge=50, le=16384, description="Encrypted gp3 root volume size.")
    pods_need_imds: bool = Field(
        default=False, description="Pods need instance metadata (IMDSv2 hop limit 2 instead of 1)."
    )
    burst: bool = Field(
        default=False,
        description="A burst pool: idles at zero and grows only inside a burst window (hybrid).",
    )
    ami_release: str | None = Field(
        default=None,
        pattern=r"^1\.\d{2}\.\d{1,3}-\d{8}$",
        description=(
            "EKS-optimized AL2023 NVIDIA AMI release for this pool's node group (`<kubernetes patch>-<YYYYMMDD>`, "
            "e.g. `1.34.9-20260714`), for the cluster's minor. Unset: the release gpufleet pins for the minor. The "
            "GPU driver comes with the AMI, so a new release is a driver bump: nodes are replaced rolling."
        ),
    )
    health: AwsHealth = Field(
        default_factory=AwsHealth, description="What watches the nodes and the one remediator that repairs them."
    )
    renamed_from: Name | None = Field(
        default=None,
        description=(
            "The pool's name before a rename. Its node group, launch template and Auto Scaling group tags are then "
            "the same resources under the new name (Pulumi aliases), not replaced: no second node group. Keep it "
            "until every stack with the pool has run `up` once after the rename. Not for burst pools: their node "
            "group is named after the pool, and EKS cannot rename a node group, so a rename replaces it."
        ),
    )

    @field_validator("instance_type")
    @classmethod
    def _known_instance(cls, v: str) -> str:
        catalog.instance_type(v)  # raises CatalogError (a LookupError) with the known types
        return v

    @model_validator(mode="after")
    def _no_commitment_on_burst(self) -> AwsNodePool:
        # A commitment is paid every hour of its term whether or not nodes run, and a burst pool idles at zero
        # outside its windows (https://docs.aws.amazon.com/savingsplans/latest/userguide/what-is-savings-plans.html).
        if self.burst and self.capacity.commitment is not None:
            raise ValueError(
                f"pool {self.name}: a burst pool idles at zero outside its windows, and capacity.commitment is paid "
                "every hour of its term whether or not nodes run: put the commitment on a steady pool"
            )
        return self

    @property
    def instance(self) -> catalog.InstanceType:
        return catalog.instance_type(self.instance_type)

    @property
    def gpus_per_node(self) -> int:
        return self.instance.gpu_count

    @property
    def gpu_model(self) -> catalog.GpuModel:
        return self.instance.gpu

    @property
    def max_nodes(self) -> int:
        return self.scaling.max

    @property
    def autoscaled(self) -> bool:
        """cluster-autoscaler sizes the pool's node group between its bounds: a burst pool (within its window's cap,
        model.burst) and every pool whose min is below its max. A pool with min == max has nothing to scale, so
        nothing scales it: it keeps its size and its quota stays at that size."""
        return self.burst or self.scaling.min < self.scaling.max

    @property
    def reachable_nodes(self) -> int:
        """The most nodes the pool can have: its max when autoscaled, else the size it is given."""
        return self.scaling.max if self.autoscaled else self.scaling.desired_nodes


class EfaFabric(Model):
    """AWS EFA: one AZ and subnet, a self-only security group, an optional cluster placement group."""

    kind: Literal["efa"]
    name: Name
    availability_zone: str = Field(description="The one AZ every pool on this fabric runs in.")
    subnet_cidr: Annotated[str, SUBNET] | None = Field(
        default=None, description="CIDR of the fabric's private subnet (created VPC)."
    )
    subnet_id: str | None = Field(default=None, description="Existing private subnet id (adopted VPC).")
    placement_group: bool = Field(
        default=True,
        description="Create a cluster placement group (not used by pools on capacity reservations or blocks).",
    )
    placement_group_name: str | None = Field(
        default=None, description="Existing placement group matching a capacity reservation, used instead."
    )


class FsxLustreTier(Model):
    """FSx for Lustre PERSISTENT_2 in a fabric's subnet and AZ (shared-hot)."""

    kind: Literal["fsx-lustre"]
    name: Name
    fabric: Name = Field(description="EFA fabric (its AZ and subnet) the file system sits in.")
    capacity_gib: int = Field(
        ge=1200, le=10_000_000, description="Storage capacity in GiB (multiples of 2400 above 1200)."
    )
    throughput_per_tib: Literal[125, 250, 500, 1000] = Field(default=250, description="PERSISTENT_2 MB/s per TiB.")
    s3_import_path: str | None = Field(
        default=None,
        description=(
            "s3:// bucket or prefix linked as a data repository at /s3 (tenants mount it read-only). A bucket of "
            "this stack's S3 tier is created first and its key admits this file system's FSx S3 role; another "
            "SSE-KMS bucket's key policy must admit AWSServiceRoleForFSxS3Access_<file system id> itself."
        ),
    )
    min_gbps_per_training_node: float = Field(
        default=5.0,
        gt=0,
        description="Throughput warning threshold: GB/s each training node needs at max size.",
    )

    @field_validator("capacity_gib")
    @classmethod
    def _steps(cls, v: int) -> int:
        if v != 1200 and v % 2400:
            raise ValueError("capacity_gib must be 1200 or a multiple of 2400")
        return v

    @property
    def throughput_gbps(self) -> float:
        return self.capacity_gib / 1024 * self.throughput_per_tib / 1000


class EfsTier(Model):
    """EFS with elastic throughput, encrypted, with access points (shared-warm)."""

    kind: Literal["efs"]
    name: Name


class S3Tier(Model):
    """S3 buckets for datasets, checkpoints and models (object)."""

    kind: Literal["s3"]
    name: Name
    buckets: list[Literal["datasets", "checkpoints", "models"]] = Field(
        default=["datasets", "checkpoints", "models"], description="Buckets to create."
    )
    noncurrent_days: int = Field(default=30, ge=1, le=36_500, description="Days before noncurrent versions expire.")


InterfaceEndpointService = Literal[
    "ecr.api", "ecr.dkr", "sts", "eks", "eks-auth", "ec2", "logs", "ssm", "ssmmessages", "ec2messages",
    "elasticloadbalancing", "autoscaling",
]  # fmt: skip


class PriceOverride(Model):
    """The stack's own price for an instance type on its site (a negotiated rate, reserved instances, a savings
    plan), used instead of the catalog's on-demand price, with its date and source shown wherever it is used."""

    instance_type: str = Field(
        pattern=r"^[a-z0-9-]+\.[a-z0-9-]+$", max_length=64, description="A node pool's or the system pool's type."
    )
    usd_per_hour: float = Field(gt=0, le=10_000, description="USD per node-hour.")
    date: dt.date = Field(description="When the price was agreed or last checked (YYYY-MM-DD).")
    source: str = Field(min_length=3, max_length=200, description="Where it comes from, e.g. `EDP contract 2026`.")


ServiceKey = Literal[
    "eks-cluster", "eks-cluster-extended", "nat-gateway", "nat-gateway-data", "public-ipv4", "ebs-gp3", "data-transfer-out", "efs-standard",
    "s3-standard", "fsx-lustre-persistent-2-125", "fsx-lustre-persistent-2-250", "fsx-lustre-persistent-2-500",
    "fsx-lustre-persistent-2-1000", "aws-budget", "kms-key", "vpn-connection",
]  # fmt: skip


class ServicePriceOverride(Model):
    """The stack's own price for a line of its site's bill besides instances (EKS, NAT, public IPv4, EBS gp3, data
    transfer, EFS, S3, an FSx for Lustre tier): a quote, a contract, or a region the catalog holds no price for.
    Used instead of the catalog's list price, with its date and source shown wherever it is used."""

    service: ServiceKey = Field(
        description=(
            "The line it prices, in its unit: eks-cluster and eks-cluster-extended (cluster-hour: a minor in "
            "standard or extended support), nat-gateway (gateway-hour), "
            "nat-gateway-data (GB), public-ipv4 (address-hour), ebs-gp3 (GB-month), data-transfer-out (GB), "
            "efs-standard and s3-standard (GB-month), fsx-lustre-persistent-2-<125|250|500|1000> (GB-month), "
            "aws-budget (budget-day), kms-key (key-month), vpn-connection (connection-hour)."
        )
    )
    usd: float = Field(gt=0, le=10_000, description="USD per the service's unit.")
    date: dt.date = Field(description="When the price was agreed or last checked (YYYY-MM-DD).")
    source: str = Field(min_length=3, max_length=200, description="Where it comes from, e.g. `AWS quote Q-1234`.")


def _price_kind(value: object) -> str | None:
    if isinstance(value, dict):
        return "service-price" if "service" in value else "instance-price" if "instance_type" in value else None
    return "service-price" if isinstance(value, ServicePriceOverride) else "instance-price"


SitePrice = Annotated[
    Annotated[PriceOverride, Tag("instance-price")] | Annotated[ServicePriceOverride, Tag("service-price")],
    Discriminator(
        _price_kind,
        custom_error_type="price_kind",
        custom_error_message="a price names `instance_type` (USD per node-hour: usd_per_hour) or `service` "
        "(USD per the service's unit: usd), with its date and source",
    ),
]


class Vpc(Model):
    """The VPC of an AWS site: created from a CIDR, or adopted by id."""

    cidr: Annotated[str, VPC] | None = Field(default="10.0.0.0/16", description="CIDR of a VPC the stack creates.")
    vpc_id: str | None = Field(default=None, description="Existing VPC id to adopt instead.")
    private_subnet_ids: list[str] = Field(default_factory=list, description="Existing private subnets (adopted).")
    interface_endpoints: list[InterfaceEndpointService] = Field(
        default_factory=list,
        description=(
            "AWS services reached through interface endpoints in the private subnets instead of the NAT gateways "
            "(created VPC), e.g. ecr.api, ecr.dkr and sts. S3 always gets a gateway endpoint (image layers, "
            "datasets and checkpoints stay off NAT)."
        ),
    )

    @model_validator(mode="after")
    def _one_way(self) -> Vpc:
        if self.vpc_id and not self.private_subnet_ids:
            raise ValueError("an adopted vpc_id needs private_subnet_ids")
        if self.cidr is None and not self.vpc_id:
            raise ValueError(
                "needs a cidr (a VPC the stack creates) or a vpc_id with private_subnet_ids (one it adopts)"
            )
        return self


class EksCluster(Model):
    """The EKS cluster of an AWS site."""

    version: str = Field(
        default="1.34",
        pattern=r"^1\.\d{2}$",
        description=(
            "Kubernetes minor version, one of the minors gpufleet pins add-ons, AMI releases and the autoscaler for "
            "(model.versions.EKS_MINORS). An upgrade moves one minor at a time: EKS refuses a skip "
            "(UpdateClusterVersion), and `gpufleet diff` refuses it before any `up`."
        ),
    )
    support_type: Literal["STANDARD", "EXTENDED"] = Field(
        default="EXTENDED",
        description=(
            "EKS upgrade policy (https://docs.aws.amazon.com/eks/latest/userguide/view-upgrade-policy.html). "
            "EXTENDED, the default: past the end of standard support the cluster stays on its minor, billed at the "
            "extended-support rate, so the stack's `version` stays true until you bump it. STANDARD: at the end of "
            "standard support EKS upgrades the control plane alone to the next minor, behind the stack, leaving "
            "node groups and add-ons on the old one. `preview` warns 60 days before the end of standard support."
        ),
    )
    adopt_name: str | None = Field(default=None, description="Adopt an existing cluster by name instead.")
    endpoint_public_cidrs: list[Annotated[str, CidrRange(0, 128)]] = Field(
        default_factory=list, description="CIDRs allowed to the public endpoint; empty means private only."
    )
    admin_role_arns: list[str] = Field(default_factory=list, description="IAM roles given cluster-admin access.")

    @field_validator("version")
    @classmethod
    def _pinned_minor(cls, v: str) -> str:
        if versions.eks_minor(v) is None:
            raise ValueError(
                f"gpufleet pins no add-ons, AMI release or autoscaler for Kubernetes {v}; supported minors: "
                f"{', '.join(versions.EKS_MINORS)}"
            )
        return v

    @field_validator("endpoint_public_cidrs")
    @classmethod
    def _cidrs(cls, v: list[str]) -> list[str]:
        for c in v:
            net = ipaddress.ip_network(c, strict=False)
            if net.prefixlen == 0:
                raise ValueError("0.0.0.0/0 is not allowed; list the CIDRs that need the API")
        return v
