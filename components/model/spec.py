"""The estate schema: the only config contract between stack files and components.

A stack file `stacks/Pulumi.<env>.yaml` carries the estate under the config key `gpufleet:estate`, and an
optional burst window under `gpufleet:burstWindow`. Everything here is pydantic v2 with `extra="forbid"`;
cross-field rules live in `EstateSpec`'s validators, each with a message that names the field and says what
is allowed. GPU counts, memory and EFA limits come from the catalog, never from the stack file.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import re
from collections import Counter
from functools import cached_property
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from components.model import catalog

DNS1123 = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
Name = Annotated[
    str,
    Field(
        pattern=DNS1123,
        max_length=40,
        description="A DNS-1123 label: lower-case letters, digits and '-', at most 40 characters.",
    ),
]
Role = Literal["training", "inference", "interactive", "batch"]
CapacityType = Literal["on-demand", "spot", "capacity-reservation", "capacity-block"]


class SpecFieldError(ValueError):
    """A cross-field rule broken at a known YAML path (relative to the estate value)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


# ----------------------------------------------------------------------------------------------- metadata


class Metadata(Model):
    """Who owns the estate and how its spend is attributed."""

    name: Name = Field(description="Estate name; prefixes cloud resource names and the `cluster` tag.")
    environment: Name = Field(description="Environment (dev, staging, prod, ...); the `env` tag.")
    owner: str = Field(min_length=1, description="Owning team or person; the `owner` tag.")
    cost_center: str = Field(min_length=1, description="Cost centre spend is booked to; the `cost-center` tag.")
    tags: dict[str, str] = Field(
        default_factory=dict,
        description="Extra tags set on every taggable resource (in addition to the required ones).",
    )
    required_tags: list[str] = Field(
        default_factory=lambda: ["owner", "cost-center", "env", "cluster", "tenant"],
        description="Tag keys the cost-tags policy pack requires on every taggable AWS resource.",
    )


# ------------------------------------------------------------------------------------------------- pools


class Sharing(Model):
    """How the GPUs of a pool are handed out."""

    mode: Literal["whole", "mig", "time-slicing"] = Field(
        default="whole",
        description="whole GPUs, MIG slices (hardware isolated) or time-slicing (no isolation).",
    )
    mig_profile: str | None = Field(
        default=None, description="MIG profile applied to every GPU of the pool (mode mig), e.g. `1g.10gb`."
    )
    replicas: int | None = Field(
        default=None, ge=2, le=48, description="Time-slicing replicas per GPU (mode time-slicing)."
    )

    @model_validator(mode="after")
    def _mode_fields(self) -> Sharing:
        if self.mode == "mig" and not self.mig_profile:
            raise ValueError("mode mig needs mig_profile (for example `1g.10gb`)")
        if self.mode != "mig" and self.mig_profile:
            raise ValueError("mig_profile is only allowed with mode mig")
        if self.mode == "time-slicing" and self.replicas is None:
            raise ValueError("mode time-slicing needs replicas (2 to 48)")
        if self.mode != "time-slicing" and self.replicas is not None:
            raise ValueError("replicas is only allowed with mode time-slicing")
        return self


class Scaling(Model):
    """Node-count bounds of a pool."""

    min: int = Field(default=0, ge=0, description="Minimum nodes.")
    desired: int | None = Field(default=None, ge=0, description="Desired nodes (defaults to min).")
    max: int = Field(ge=0, description="Maximum nodes.")

    @model_validator(mode="after")
    def _ordered(self) -> Scaling:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) must not exceed max ({self.max})")
        if self.desired is not None and not self.min <= self.desired <= self.max:
            raise ValueError(f"desired ({self.desired}) must lie between min ({self.min}) and max ({self.max})")
        return self

    @property
    def desired_nodes(self) -> int:
        return self.min if self.desired is None else self.desired


class Capacity(Model):
    """How cloud capacity is bought."""

    type: CapacityType = Field(
        default="on-demand", description="on-demand, spot, capacity-reservation or capacity-block."
    )
    reservation_id: str | None = Field(
        default=None,
        pattern=r"^cr-[0-9a-f]{8,17}$",
        description="EC2 capacity reservation id (types capacity-reservation and capacity-block).",
    )
    checkpointing: bool = Field(
        default=False, description="The pool's jobs checkpoint; required for spot training pools."
    )

    @model_validator(mode="after")
    def _reservation(self) -> Capacity:
        reserved = self.type in ("capacity-reservation", "capacity-block")
        if reserved and not self.reservation_id:
            raise ValueError(f"type {self.type} needs reservation_id (cr-...)")
        if not reserved and self.reservation_id:
            raise ValueError("reservation_id is only allowed with type capacity-reservation or capacity-block")
        return self


class PoolBase(Model):
    name: Name = Field(description="Pool name, unique in the estate; becomes the Kueue ResourceFlavor name.")
    role: Role = Field(description="What the pool runs: training, inference, interactive or batch.")
    sharing: Sharing = Field(default_factory=Sharing, description="How GPUs are shared.")
    fabric: Name | None = Field(default=None, description="Name of the site fabric the pool's nodes join.")
    dedicated_to: Name | None = Field(
        default=None, description="Tenant that owns the pool alone (tainted and labelled for that tenant)."
    )
    labels: dict[str, str] = Field(default_factory=dict, description="Extra node labels.")


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

    @field_validator("instance_type")
    @classmethod
    def _known_instance(cls, v: str) -> str:
        catalog.instance_type(v)  # raises CatalogError (a LookupError) with the known types
        return v

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


class BaremetalNodePool(PoolBase):
    """A group of inventory servers selected by their labels."""

    selector: dict[str, str] = Field(
        min_length=1, description="Inventory labels a server must carry to belong to this pool."
    )
    cost: OnPremCost | None = Field(
        default=None, description="Amortised price per GPU-hour inputs; defaults to the site's."
    )


class OnPremCost(Model):
    """Amortised cost of owned GPU servers, so on-prem and cloud are priced side by side."""

    server_price_usd: float = Field(gt=0, description="Purchase price of one server, all-in.")
    lifetime_years: float = Field(default=4, gt=0, le=10, description="Depreciation period.")
    power_kw: float = Field(default=10.0, ge=0, description="Average power draw of one server in kW, incl. cooling.")
    usd_per_kwh: float = Field(default=0.12, ge=0, description="Electricity price.")
    ops_usd_per_server_month: float = Field(
        default=500.0, ge=0, description="Operations: space, support contracts, staff share."
    )

    @property
    def usd_per_server_hour(self) -> float:
        """Depreciation + power + operations for one server-hour (8,760 hours a year, 730 a month)."""
        depreciation = self.server_price_usd / (self.lifetime_years * 8760)
        return depreciation + self.power_kw * self.usd_per_kwh + self.ops_usd_per_server_month / 730


BaremetalNodePool.model_rebuild()

# ----------------------------------------------------------------------------------------------- fabrics


class EfaFabric(Model):
    """AWS EFA: one AZ and subnet, a self-only security group, an optional cluster placement group."""

    kind: Literal["efa"]
    name: Name
    availability_zone: str = Field(description="The one AZ every pool on this fabric runs in.")
    subnet_cidr: str | None = Field(default=None, description="CIDR of the fabric's private subnet (created VPC).")
    subnet_id: str | None = Field(default=None, description="Existing private subnet id (adopted VPC).")
    placement_group: bool = Field(
        default=True,
        description="Create a cluster placement group (not used by pools on capacity reservations or blocks).",
    )
    placement_group_name: str | None = Field(
        default=None, description="Existing placement group matching a capacity reservation, used instead."
    )


class InfinibandFabric(Model):
    """InfiniBand through the NVIDIA Network Operator."""

    kind: Literal["infiniband"]
    name: Name
    device_plugin: Literal["rdma-shared", "sriov"] = Field(
        default="rdma-shared", description="RDMA shared device plugin or SR-IOV VFs per pod."
    )
    ipoib: bool = Field(default=True, description="Create IPoIB secondary networks.")
    ipoib_cidr: str = Field(default="192.168.64.0/18", description="IP range handed out on IPoIB networks.")
    partition_keys: dict[Name, str] = Field(
        default_factory=dict, description="Per-tenant InfiniBand partition keys (`0x0001` ...) for isolation."
    )
    hca_device_ids: list[str] = Field(
        default_factory=lambda: ["101b", "1021"], description="PCI device ids of the HCAs (ConnectX-6/7)."
    )
    ipoib_interface: str = Field(
        default="ib0", description="Host IPoIB interface the IPoIB networks create child links from."
    )
    vfs_per_port: int = Field(
        default=8, ge=1, le=127, description="SR-IOV virtual functions per HCA port (device_plugin sriov)."
    )

    @field_validator("partition_keys")
    @classmethod
    def _pkeys(cls, v: dict[str, str]) -> dict[str, str]:
        for tenant, pkey in v.items():
            if not re.fullmatch(r"0x[0-9a-fA-F]{1,4}", pkey) or int(pkey, 16) in (0, 0x7FFF, 0xFFFF):
                raise ValueError(
                    f"partition key {pkey!r} of tenant {tenant} must be a hex pkey 0x0001..0x7ffe "
                    "(0x7fff/0xffff is the default partition every port is in)"
                )
        return v

    @model_validator(mode="after")
    def _pkeys_need_sriov(self) -> InfinibandFabric:
        if self.partition_keys and self.device_plugin != "sriov":
            raise ValueError(
                "partition_keys need device_plugin: sriov (a partition isolates SR-IOV virtual functions through "
                "ib-kubernetes; with rdma-shared every pod shares the HCA in the default partition)"
            )
        return self


class RoceFabric(Model):
    """RoCE through SR-IOV networks and network attachment definitions."""

    kind: Literal["roce"]
    name: Name
    interfaces: list[str] = Field(min_length=1, description="Host interface names carrying RoCE (e.g. `ens1f0np0`).")
    cidr: str = Field(default="192.168.128.0/18", description="IP range on the RoCE networks.")
    vfs_per_interface: int = Field(default=8, ge=1, le=127, description="SR-IOV virtual functions per interface.")


Fabric = Annotated[EfaFabric | InfinibandFabric | RoceFabric, Field(discriminator="kind")]

# ----------------------------------------------------------------------------------------------- storage


class ScratchTier(Model):
    """Node-local NVMe (instance store on AWS, listed devices on bare metal) as scratch space."""

    kind: Literal["scratch"]
    name: Name
    mount_path: str = Field(default="/scratch", description="Where the NVMe array is mounted on nodes.")


class FsxLustreTier(Model):
    """FSx for Lustre PERSISTENT_2 in a fabric's subnet and AZ (shared-hot)."""

    kind: Literal["fsx-lustre"]
    name: Name
    fabric: Name = Field(description="EFA fabric (its AZ and subnet) the file system sits in.")
    capacity_gib: int = Field(ge=1200, description="Storage capacity in GiB (multiples of 2400 above 1200).")
    throughput_per_tib: Literal[125, 250, 500, 1000] = Field(default=250, description="PERSISTENT_2 MB/s per TiB.")
    s3_import_path: str | None = Field(default=None, description="s3:// prefix linked as a data repository.")
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
    noncurrent_days: int = Field(default=30, ge=1, description="Days before noncurrent versions expire.")


class NfsTier(Model):
    """An existing NFS export through the NFS CSI driver (shared-warm)."""

    kind: Literal["nfs"]
    name: Name
    server: str = Field(description="NFS server address.")
    path: str = Field(description="Exported path.")
    cidr: str | None = Field(
        default=None,
        description="Network range of the server, for tenant NetworkPolicies (needed when server is a host name).",
    )


class ParallelFsTier(Model):
    """An existing parallel file system (Lustre, GPFS, WEKA, ...) through its CSI driver (shared-hot)."""

    kind: Literal["parallel-fs"]
    name: Name
    csi_driver: str = Field(description="CSI driver name, e.g. `lustre.csi.k8s.io`.")
    parameters: dict[str, str] = Field(default_factory=dict, description="StorageClass parameters.")
    throughput_gbps: float = Field(gt=0, description="Aggregate throughput the file system delivers.")


class OnPremS3Tier(Model):
    """An on-prem S3 endpoint (MinIO, Ceph RGW, ...) as the object tier; credentials are Pulumi secrets."""

    kind: Literal["s3-onprem"]
    name: Name
    endpoint: str = Field(pattern=r"^https://", description="HTTPS endpoint.")
    cidr: str | None = Field(
        default=None,
        description="Network range of the endpoint, for tenant NetworkPolicies (needed when it is a host name).",
    )
    access_key_config: str = Field(description="Config key holding the access key id (a Pulumi secret).")
    secret_key_config: str = Field(description="Config key holding the secret access key (a Pulumi secret).")


StorageTier = Annotated[
    ScratchTier | FsxLustreTier | EfsTier | S3Tier | NfsTier | ParallelFsTier | OnPremS3Tier,
    Field(discriminator="kind"),
]
STATEFUL_KINDS = frozenset({"fsx-lustre", "efs", "s3"})
AWS_STORAGE = frozenset({"scratch", "fsx-lustre", "efs", "s3"})
BAREMETAL_STORAGE = frozenset({"scratch", "nfs", "parallel-fs", "s3-onprem"})

# -------------------------------------------------------------------------------------- kubernetes stack


class KubernetesStack(Model):
    """The GPU software stack and scheduler on a site's cluster."""

    gpu_stack: Literal["gpu-operator", "device-plugin"] = Field(
        default="gpu-operator", description="NVIDIA GPU Operator, or the standalone device plugin."
    )
    mig_strategy: Literal["single", "mixed"] = Field(
        default="single",
        description="How MIG devices are advertised (single: nvidia.com/gpu; mixed: per profile).",
    )
    prometheus: bool = Field(default=False, description="A Prometheus operator is present (ServiceMonitors).")
    sandbox_runtime_class: str | None = Field(
        default=None,
        description="RuntimeClass (e.g. `kata`, `gvisor`) the site provides for untrusted tenants.",
    )
    driver_version: str | None = Field(
        default=None, description="Pinned NVIDIA driver on bare metal (defaults to the operator's pin)."
    )
    driver_managed_by: Literal["operator", "host"] = Field(
        default="operator",
        description=(
            "Bare metal: who installs the NVIDIA driver — the GPU Operator's driver container, pinned to "
            "driver_version and upgraded one node at a time (operator), or the host image, pre-installed and "
            "checked by the preflight (host). EKS NVIDIA AMIs always bring their own driver."
        ),
    )


# -------------------------------------------------------------------------------------------------- sites


class Vpc(Model):
    """The VPC of an AWS site: created from a CIDR, or adopted by id."""

    cidr: str | None = Field(default="10.0.0.0/16", description="CIDR of a VPC the stack creates.")
    vpc_id: str | None = Field(default=None, description="Existing VPC id to adopt instead.")
    private_subnet_ids: list[str] = Field(default_factory=list, description="Existing private subnets (adopted).")

    @model_validator(mode="after")
    def _one_way(self) -> Vpc:
        if self.vpc_id and not self.private_subnet_ids:
            raise ValueError("an adopted vpc_id needs private_subnet_ids")
        return self


class EksCluster(Model):
    """The EKS cluster of an AWS site."""

    version: str = Field(default="1.34", pattern=r"^1\.\d{2}$", description="Kubernetes minor version.")
    adopt_name: str | None = Field(default=None, description="Adopt an existing cluster by name instead.")
    endpoint_public_cidrs: list[str] = Field(
        default_factory=list, description="CIDRs allowed to the public endpoint; empty means private only."
    )
    admin_role_arns: list[str] = Field(default_factory=list, description="IAM roles given cluster-admin access.")

    @field_validator("endpoint_public_cidrs")
    @classmethod
    def _cidrs(cls, v: list[str]) -> list[str]:
        for c in v:
            net = ipaddress.ip_network(c, strict=False)
            if net.prefixlen == 0:
                raise ValueError("0.0.0.0/0 is not allowed; list the CIDRs that need the API")
        return v


class SiteBase(Model):
    name: Name
    kubernetes: KubernetesStack = Field(default_factory=KubernetesStack, description="GPU stack options.")
    fabrics: list[Fabric] = Field(default_factory=list, description="Fabrics pools can join.")
    storage: list[StorageTier] = Field(default_factory=list, description="Storage tiers.")


class AwsSite(SiteBase):
    """An EKS cluster and its GPU pools in one region."""

    kind: Literal["aws"]
    region: str = Field(pattern=r"^[a-z]{2}(-[a-z]+)+-\d$", description="AWS region, e.g. `us-east-1`.")
    availability_zones: list[str] = Field(
        min_length=2, description="AZs the VPC spans (EKS needs two); fabrics pick one of them."
    )
    vpc: Vpc = Field(default_factory=Vpc)
    cluster: EksCluster = Field(default_factory=EksCluster)
    node_pools: list[AwsNodePool] = Field(default_factory=list)
    system_instance_type: str = Field(default="m7i.xlarge", description="Instance type of the CPU system pool.")


class Server(Model):
    """One racked GPU server of a bare-metal inventory."""

    hostname: Name
    address: str = Field(description="Management IP address or DNS name reached over SSH.")
    gpu_model: str = Field(description="GPU model id from the catalog, e.g. `H100-80GB`.")
    gpu_count: int = Field(ge=1, le=16)
    ib_ports: list[str] = Field(default_factory=list, description="InfiniBand / RoCE ports, e.g. `mlx5_0`.")
    nvme_devices: list[str] = Field(default_factory=list, description="NVMe devices for scratch, e.g. `/dev/nvme1n1`.")
    rack: str = Field(min_length=1)
    leaf: str = Field(min_length=1, description="Leaf switch the server's fabric ports attach to.")
    rail: str | None = Field(default=None, description="Rail (rail-optimised fabrics).")
    bmc_address: str | None = None
    labels: dict[str, str] = Field(default_factory=dict, description="Inventory labels pools select on.")
    driver_version: str | None = Field(
        default=None,
        description=(
            "NVIDIA driver the preflight expects (nvidia-smi) with kubernetes.driver_managed_by: host; defaults to "
            "the site's kubernetes.driver_version."
        ),
    )
    ib_rate_gbps: int | None = Field(
        default=None, gt=0, description="Link rate every ib_port must report (ibstat `Rate:`); unchecked if unset."
    )

    @field_validator("gpu_model")
    @classmethod
    def _known_gpu(cls, v: str) -> str:
        catalog.gpu_model(v)
        return v


class SshAccess(Model):
    """How gpufleet reaches inventory servers."""

    user: str = Field(default="root")
    private_key_config: str = Field(description="Config key holding the SSH private key (a Pulumi secret).")
    bastion: str | None = Field(default=None, description="Bastion host (user@host) to jump through.")


class Join(Model):
    """How servers join the site's cluster."""

    method: Literal["kubeadm", "eks-hybrid"] = "kubeadm"
    api_server: str = Field(description="host:port of the Kubernetes API the nodes join.")
    token_config: str = Field(
        default="joinToken",
        description="Config key holding the kubeadm token or nodeadm activation (secret).",
    )
    ca_hash_config: str = Field(default="caCertHash", description="Config key holding the CA cert hash (secret).")
    cluster_name: str | None = Field(default=None, description="EKS cluster hybrid nodes join (method eks-hybrid).")
    region: str | None = Field(default=None, description="AWS region of that EKS cluster (method eks-hybrid).")
    activation_id_config: str = Field(
        default="ssmActivationId",
        description="Config key holding the SSM hybrid activation id (secret; method eks-hybrid).",
    )

    @model_validator(mode="after")
    def _eks_hybrid(self) -> Join:
        if self.method == "eks-hybrid" and not (self.cluster_name and self.region):
            raise ValueError("method eks-hybrid needs cluster_name and region (the EKS cluster nodeadm joins)")
        return self


class BaremetalSite(SiteBase):
    """An existing Kubernetes cluster on owned servers, reached by a kubeconfig held as a secret."""

    kind: Literal["baremetal"]
    kubeconfig_config: str = Field(default="kubeconfig", description="Config key holding the kubeconfig (secret).")
    ssh: SshAccess
    join: Join
    inventory: list[Server] = Field(min_length=1)
    node_pools: list[BaremetalNodePool] = Field(default_factory=list)
    cost: OnPremCost | None = Field(default=None, description="Default amortisation inputs for this site's pools.")


Site = Annotated[AwsSite | BaremetalSite, Field(discriminator="kind")]

# ------------------------------------------------------------------------------------------------ tenants


class Tenant(Model):
    """A team (or agent) sharing the estate: namespace, quotas, queues, network and RBAC."""

    name: Name = Field(description="Tenant id; the namespace name and the `tenant` label/tag.")
    trust: Literal["trusted", "untrusted"] = Field(
        default="trusted", description="untrusted (e.g. agents running generated code) gets dedicated nodes."
    )
    gpu_quota: dict[Name, int] = Field(
        default_factory=dict,
        description="Nominal GPUs per node pool (Kueue flavor) the tenant is guaranteed.",
    )
    borrowing_limit: int = Field(default=0, ge=0, description="GPUs the tenant may borrow from the cohort.")
    lending_limit: int | None = Field(default=None, ge=0, description="GPUs of its quota others may borrow.")
    members: list[str] = Field(default_factory=list, description="Identity-provider groups bound to the tenant.")
    pod_security: Literal["restricted", "baseline"] = Field(
        default="restricted", description="Pod Security level enforced in the namespace."
    )
    egress_cidrs: list[str] = Field(
        default_factory=list, description="Destinations outside the cluster the tenant may reach."
    )
    cost_center: str | None = Field(default=None, description="Cost centre (defaults to the estate's).")
    burst: bool = Field(default=False, description="May burst to the cloud site of a hybrid estate.")
    cpu_quota: int = Field(default=256, ge=1, description="CPU cores requested in the namespace.")
    memory_quota_gib: int = Field(default=2048, ge=1, description="Memory requested in the namespace.")
    rdma: bool = Field(default=False, description="Namespace may run RDMA/EFA jobs (IPC_LOCK).")

    @field_validator("gpu_quota")
    @classmethod
    def _non_negative(cls, v: dict[str, int]) -> dict[str, int]:
        for pool, n in v.items():
            if n < 0:
                raise ValueError(f"gpu_quota for pool {pool} must not be negative")
        return v


class BurstPolicy(Model):
    """Limits on bursting a hybrid estate to its cloud site."""

    cloud_site: Name = Field(description="The AWS site that bursts.")
    budget_usd: float = Field(gt=0, description="Spend allowed on burst windows per calendar month.")
    max_window_hours: int = Field(default=72, ge=1, le=24 * 14, description="Longest window allowed.")
    allowed_instance_types: list[str] = Field(min_length=1, description="Instance types a window may use.")
    allow_spot: bool = Field(default=False, description="Windows may use spot capacity.")
    allow_capacity_blocks: bool = Field(default=False, description="Windows may use capacity blocks.")

    @field_validator("allowed_instance_types")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        for t in v:
            catalog.instance_type(t)
        return v


class BurstWindow(Model):
    """An open burst: cloud capacity that exists until `expires`. Written by `gpufleet burst open`."""

    pool: Name = Field(description="The burst pool that grows.")
    nodes: int = Field(ge=1, description="Nodes the pool grows to while the window is open.")
    instance_type: str
    availability_zone: str
    start: dt.datetime
    expires: dt.datetime
    opened_by: str = Field(default="gpufleet burst")
    gpus: int | None = Field(default=None, ge=1, description="GPUs asked for when the window was opened.")
    usd_per_hour: float | None = Field(
        default=None, ge=0, description="Catalog price of one node-hour when the window was opened."
    )

    @field_validator("start", "expires")
    @classmethod
    def _utc(cls, v: dt.datetime) -> dt.datetime:
        return v.replace(tzinfo=dt.UTC) if v.tzinfo is None else v.astimezone(dt.UTC)

    @model_validator(mode="after")
    def _order(self) -> BurstWindow:
        if self.expires <= self.start:
            raise ValueError("expires must be after start")
        return self

    def is_open(self, now: dt.datetime) -> bool:
        return self.start <= now < self.expires


class BurstLedgerEntry(Model):
    """One past burst window, kept in the stack file (`gpufleet:burstLedger`) for spend so far."""

    pool: Name = Field(description="The burst pool the window grew.")
    instance_type: str = Field(description="EC2 instance type of the window's nodes.")
    nodes: int = Field(ge=1, description="Nodes the window held.")
    start: dt.datetime = Field(description="When the window opened.")
    end: dt.datetime = Field(description="When it closed, or expired if nobody closed it earlier.")
    usd: float = Field(ge=0, description="Spend booked for the window: node-hour price x nodes x hours open.")
    closed_by: str = Field(default="gpufleet burst close", description="What ended it (close or reconcile).")

    @field_validator("start", "end")
    @classmethod
    def _utc(cls, v: dt.datetime) -> dt.datetime:
        return v.replace(tzinfo=dt.UTC) if v.tzinfo is None else v.astimezone(dt.UTC)

    @model_validator(mode="after")
    def _order(self) -> BurstLedgerEntry:
        if self.end < self.start:
            raise ValueError("end must not be before start")
        return self


class PolicySettings(Model):
    """Policy-pack settings shared by `pulumi preview --policy-pack` and `gpufleet check`."""

    enforcement: dict[str, Literal["mandatory", "advisory", "disabled"]] = Field(
        default_factory=dict, description="Override a rule's enforcement level by rule id."
    )
    budget_usd_per_hour: float | None = Field(
        default=None, gt=0, description="Cap on the estate's hourly cost at max size (cost-tags budget rule)."
    )
    allowed_instance_types: list[str] = Field(
        default_factory=list, description="GPU instance types allowed; empty allows every catalog type."
    )
    imds_hop_limit_exceptions: list[Name] = Field(default_factory=list, description="Pools allowed IMDS hop limit 2.")


# ------------------------------------------------------------------------------------------------- estate


class EstateSpec(Model):
    """A whole GPU estate for one environment."""

    metadata: Metadata
    sites: list[Site] = Field(min_length=1)
    tenants: list[Tenant] = Field(default_factory=list)
    burst: BurstPolicy | None = Field(default=None, description="Burst policy of a hybrid estate.")
    policies: PolicySettings = Field(default_factory=PolicySettings)

    # -- lookups used by components and tools (indexes built once per spec) -----------------------------
    @cached_property
    def _pool_index(self) -> dict[str, tuple[AwsSite | BaremetalSite, AwsNodePool | BaremetalNodePool]]:
        return {p.name: (s, p) for s in self.sites for p in s.node_pools}

    @cached_property
    def _servers_index(self) -> dict[str, list[Server]]:
        out: dict[str, list[Server]] = {}
        for s in self.sites:
            if isinstance(s, BaremetalSite):
                for p in s.node_pools:
                    out[p.name] = [x for x in s.inventory if all(x.labels.get(k) == v for k, v in p.selector.items())]
        return out

    def pools(self) -> list[tuple[AwsSite | BaremetalSite, AwsNodePool | BaremetalNodePool]]:
        return list(self._pool_index.values())

    def pool(self, name: str) -> AwsNodePool | BaremetalNodePool:
        return self._pool_index[name][1]

    def site_of_pool(self, name: str) -> AwsSite | BaremetalSite:
        return self._pool_index[name][0]

    def site(self, name: str) -> AwsSite | BaremetalSite:
        return next(s for s in self.sites if s.name == name)

    def tenant(self, name: str) -> Tenant:
        return next(t for t in self.tenants if t.name == name)

    def pool_servers(self, site: BaremetalSite, pool: BaremetalNodePool) -> list[Server]:
        """Inventory servers whose labels match the pool's selector."""
        return self._servers_index.get(pool.name, [])

    def pool_gpus_per_node(self, name: str) -> int:
        site, pool = self.site_of_pool(name), self.pool(name)
        if isinstance(pool, AwsNodePool):
            return pool.gpus_per_node
        assert isinstance(site, BaremetalSite)
        servers = self.pool_servers(site, pool)
        return max((s.gpu_count for s in servers), default=0)

    def pool_gpu_capacity(self, name: str) -> int:
        """GPUs a pool offers at max size (AWS: max nodes x GPUs per instance; bare metal: its servers)."""
        site, pool = self.site_of_pool(name), self.pool(name)
        if isinstance(pool, AwsNodePool):
            return pool.scaling.max * pool.gpus_per_node
        assert isinstance(site, BaremetalSite)
        return sum(s.gpu_count for s in self.pool_servers(site, pool))

    def pool_gpu_units(self, name: str) -> int:
        """Schedulable GPU units of a pool at max size: MIG slices or time-sliced replicas count apiece."""
        pool = self.pool(name)
        gpus = self.pool_gpu_capacity(name)
        if pool.sharing.mode == "time-slicing":
            return gpus * (pool.sharing.replicas or 1)
        if pool.sharing.mode == "mig":
            model = self.pool_gpu_model(name)
            profile = model.mig_profile(pool.sharing.mig_profile or "")
            return gpus * (profile.per_gpu if profile else 1)
        return gpus

    def pool_gpu_model(self, name: str) -> catalog.GpuModel:
        site, pool = self.site_of_pool(name), self.pool(name)
        if isinstance(pool, AwsNodePool):
            return pool.gpu_model
        assert isinstance(site, BaremetalSite)
        servers = self.pool_servers(site, pool)
        return catalog.gpu_model(servers[0].gpu_model)

    # -- cross-field rules (each raises SpecFieldError with the YAML path it concerns) ------------------
    @model_validator(mode="after")
    def _names_unique(self) -> EstateSpec:
        def dupes(kind: str, path: str, names: list[str]) -> None:
            d = sorted(n for n, c in Counter(names).items() if c > 1)
            if d:
                raise SpecFieldError(path, f"{kind} names must be unique; duplicated: {', '.join(d)}")

        dupes("site", "sites", [s.name for s in self.sites])
        dupes("node pool", "sites", [p.name for s in self.sites for p in s.node_pools])
        dupes("tenant", "tenants", [t.name for t in self.tenants])
        for i, s in enumerate(self.sites):
            dupes("fabric", f"sites[{i}].fabrics", [f.name for f in s.fabrics])
            dupes("storage tier", f"sites[{i}].storage", [t.name for t in s.storage])
            if isinstance(s, BaremetalSite):
                dupes("server", f"sites[{i}].inventory", [x.hostname for x in s.inventory])
        return self

    @model_validator(mode="after")
    def _sites_consistent(self) -> EstateSpec:
        for i, s in enumerate(self.sites):
            allowed = AWS_STORAGE if isinstance(s, AwsSite) else BAREMETAL_STORAGE
            for j, t in enumerate(s.storage):
                if t.kind not in allowed:
                    raise SpecFieldError(
                        f"sites[{i}].storage[{j}].kind",
                        f"a {s.kind} site cannot have a {t.kind} tier; allowed: {', '.join(sorted(allowed))}",
                    )
            for j, f in enumerate(s.fabrics):
                path = f"sites[{i}].fabrics[{j}]"
                if isinstance(s, AwsSite) and f.kind != "efa":
                    raise SpecFieldError(f"{path}.kind", f"an aws site's fabrics must be efa, not {f.kind}")
                if isinstance(s, BaremetalSite) and f.kind == "efa":
                    raise SpecFieldError(f"{path}.kind", "a baremetal site's fabrics are infiniband or roce, not efa")
                if (
                    isinstance(f, EfaFabric)
                    and isinstance(s, AwsSite)
                    and f.availability_zone not in s.availability_zones
                ):
                    raise SpecFieldError(
                        f"{path}.availability_zone",
                        f"{f.availability_zone} is not one of the site's availability_zones "
                        f"({', '.join(s.availability_zones)})",
                    )
                if isinstance(f, EfaFabric) and isinstance(s, AwsSite):
                    _check_efa_subnet(path, s, f)
            if isinstance(s, BaremetalSite) and s.kubernetes.driver_managed_by == "operator":
                if s.kubernetes.gpu_stack == "device-plugin":
                    raise SpecFieldError(
                        f"sites[{i}].kubernetes.driver_managed_by",
                        "with gpu_stack device-plugin nothing installs the NVIDIA driver; set driver_managed_by: "
                        "host (the host image brings it)",
                    )
                for j, server in enumerate(s.inventory):
                    if server.driver_version:
                        raise SpecFieldError(
                            f"sites[{i}].inventory[{j}].driver_version",
                            "the GPU Operator installs one driver per site (kubernetes.driver_version); a server "
                            "driver_version needs kubernetes.driver_managed_by: host",
                        )
            explicit = "driver_managed_by" in s.kubernetes.model_fields_set
            if isinstance(s, AwsSite) and explicit and s.kubernetes.driver_managed_by == "operator":
                raise SpecFieldError(
                    f"sites[{i}].kubernetes.driver_managed_by",
                    "an aws site's EKS NVIDIA AMIs ship the driver; the GPU Operator cannot install it "
                    "(leave it unset or set host)",
                )
            if isinstance(s, AwsSite):
                for j, az in enumerate(s.availability_zones):
                    if not az.startswith(s.region):
                        raise SpecFieldError(f"sites[{i}].availability_zones[{j}]", f"{az} is not in region {s.region}")
        return self

    @model_validator(mode="after")
    def _pools_resolve(self) -> EstateSpec:
        tenants = {t.name for t in self.tenants}
        for i, s in enumerate(self.sites):
            fabrics = {f.name: f for f in s.fabrics}
            for j, p in enumerate(s.node_pools):
                path = f"sites[{i}].node_pools[{j}]"
                if p.fabric is not None and p.fabric not in fabrics:
                    raise SpecFieldError(
                        f"{path}.fabric",
                        f"fabric {p.fabric} does not exist on site {s.name} (fabrics: {', '.join(fabrics) or 'none'})",
                    )
                if p.dedicated_to is not None and p.dedicated_to not in tenants:
                    raise SpecFieldError(f"{path}.dedicated_to", f"{p.dedicated_to} is not a tenant of the estate")
                if isinstance(p, BaremetalNodePool) and isinstance(s, BaremetalSite):
                    servers = self.pool_servers(s, p)
                    if not servers:
                        raise SpecFieldError(f"{path}.selector", f"selects no server of site {s.name} ({p.selector})")
                    models = sorted({x.gpu_model for x in servers})
                    if len(models) > 1:
                        raise SpecFieldError(f"{path}.selector", f"pool {p.name} mixes GPU models {models}; split it")
                self._check_sharing(path, p)
                if isinstance(p, AwsNodePool) and isinstance(s, AwsSite):
                    self._check_aws_pool(path, s, p, fabrics.get(p.fabric) if p.fabric else None)
            for j, t in enumerate(s.storage):
                if isinstance(t, FsxLustreTier) and not isinstance(fabrics.get(t.fabric), EfaFabric):
                    raise SpecFieldError(
                        f"sites[{i}].storage[{j}].fabric", f"{t.fabric} is not an efa fabric of site {s.name}"
                    )
        return self

    def _check_sharing(self, path: str, p: PoolBase) -> None:
        if p.sharing.mode == "mig":
            model = self.pool_gpu_model(p.name)
            if not model.mig_profiles:
                raise SpecFieldError(f"{path}.sharing.mode", f"{model.id} GPUs do not support MIG")
            if model.mig_profile(p.sharing.mig_profile or "") is None:
                raise SpecFieldError(
                    f"{path}.sharing.mig_profile",
                    f"{p.sharing.mig_profile} is not a MIG profile of {model.id}; valid: "
                    f"{', '.join(x.name for x in model.mig_profiles)}",
                )
        if p.sharing.mode == "time-slicing" and p.dedicated_to is None:
            raise SpecFieldError(
                f"{path}.sharing.mode",
                f"pool {p.name} uses time-slicing, which does not isolate tenants: set dedicated_to to the one "
                "tenant that uses it, or use mig",
            )

    def _check_aws_pool(
        self, path: str, s: AwsSite, p: AwsNodePool, fabric: EfaFabric | InfinibandFabric | RoceFabric | None
    ) -> None:
        inst = p.instance
        if isinstance(fabric, EfaFabric):
            if not inst.efa_supported:
                raise SpecFieldError(
                    f"{path}.fabric",
                    f"{p.instance_type} does not support EFA, so pool {p.name} cannot join fabric {fabric.name}; "
                    "EFA and non-EFA pools must not share a fabric",
                )
            if p.availability_zone is not None and p.availability_zone != fabric.availability_zone:
                raise SpecFieldError(
                    f"{path}.availability_zone",
                    f"pool {p.name} is on EFA fabric {fabric.name} in {fabric.availability_zone}; an EFA pool "
                    f"cannot span or move to another AZ ({p.availability_zone})",
                )
        elif p.availability_zone is not None and p.availability_zone not in s.availability_zones:
            raise SpecFieldError(f"{path}.availability_zone", f"{p.availability_zone} is not one of the site's AZs")
        zones = catalog.offered_zones(p.instance_type, s.region)
        az = fabric.availability_zone if isinstance(fabric, EfaFabric) else p.availability_zone
        if zones is not None and az is not None and az not in zones:
            raise SpecFieldError(
                f"{path}.instance_type",
                f"{p.instance_type} is not offered in {az} (offered: {', '.join(zones)})",
            )
        if p.capacity.type == "spot" and p.role == "training" and not p.capacity.checkpointing:
            raise SpecFieldError(
                f"{path}.capacity.checkpointing",
                f"pool {p.name} is a spot training pool; set checkpointing: true (spot reclaims lose "
                "uncheckpointed work) or buy on-demand, reserved or block capacity",
            )
        if p.capacity.type in ("spot", "capacity-block") and p.capacity.type not in inst.usage_classes:
            raise SpecFieldError(f"{path}.capacity.type", f"{p.instance_type} is not sold as {p.capacity.type}")
        for key in p.labels:
            if any(r in key for r in ("kubernetes.io/", "k8s.io/", "eks.amazonaws.com/")):
                raise SpecFieldError(
                    f"{path}.labels",
                    f"{key} uses a prefix EKS node groups reject (kubernetes.io/, k8s.io/, eks.amazonaws.com/); "
                    "use your own prefix, e.g. example.com/",
                )
        if p.capacity.type in ("capacity-reservation", "capacity-block") and az is None:
            raise SpecFieldError(
                f"{path}.availability_zone",
                f"pool {p.name} runs on {p.capacity.type} {p.capacity.reservation_id}, which lives in one AZ; set "
                "availability_zone to the reservation's AZ or put the pool on a fabric in that AZ",
            )

    @model_validator(mode="after")
    def _mig_layouts_consistent(self) -> EstateSpec:
        """Nodes select MIG layouts by the label value `all-<profile>`, one layout per name and site."""
        for i, s in enumerate(self.sites):
            seen: dict[str, tuple[str, int]] = {}
            for j, p in enumerate(s.node_pools):
                model = self.pool_gpu_model(p.name)
                profile = model.mig_profile(p.sharing.mig_profile or "") if p.sharing.mode == "mig" else None
                if profile is None:
                    continue
                other_model, other_count = seen.setdefault(profile.name, (model.id, profile.per_gpu))
                if other_count != profile.per_gpu:
                    raise SpecFieldError(
                        f"sites[{i}].node_pools[{j}].sharing.mig_profile",
                        f"MIG profile {profile.name} fits {profile.per_gpu} per {model.id} GPU but {other_count} per "
                        f"{other_model} GPU on another pool of site {s.name}; one site applies one `all-"
                        f"{profile.name}` layout, so pick a different profile for one of the pools",
                    )
        return self

    @model_validator(mode="after")
    def _tenants_fit(self) -> EstateSpec:
        pools = {p.name for _, p in self.pools()}
        for i, t in enumerate(self.tenants):
            for pool in t.gpu_quota:
                path = f"tenants[{i}].gpu_quota.{pool}"
                if pool not in pools:
                    raise SpecFieldError(path, f"pool {pool} does not exist (pools: {', '.join(sorted(pools))})")
                p = self.pool(pool)
                if p.dedicated_to is not None and p.dedicated_to != t.name:
                    raise SpecFieldError(path, f"pool {pool} is dedicated to tenant {p.dedicated_to}")
                if t.trust == "untrusted" and p.dedicated_to != t.name:
                    raise SpecFieldError(
                        path,
                        f"tenant {t.name} is untrusted, so its quota must be on pools dedicated_to it; pool {pool} "
                        "is shared",
                    )
                if t.trust == "untrusted" and p.sharing.mode == "time-slicing":
                    raise SpecFieldError(
                        path,
                        f"tenant {t.name} is untrusted and pool {pool} uses time-slicing; untrusted tenants get "
                        "whole GPUs or MIG slices only",
                    )
        for i, s in enumerate(self.sites):
            for j, sp in enumerate(s.node_pools):
                if isinstance(sp, AwsNodePool) and sp.burst:
                    continue  # burst pools are sized by burst windows, not by max
                total = sum(t.gpu_quota.get(sp.name, 0) for t in self.tenants)
                units = self.pool_gpu_units(sp.name)
                if total > units:
                    raise SpecFieldError(
                        f"sites[{i}].node_pools[{j}]",
                        f"tenant GPU quotas on pool {sp.name} add up to {total}, but the pool offers only {units} "
                        "GPUs at max size; lower the quotas or raise the pool's max",
                    )
        return self

    @model_validator(mode="after")
    def _burst_policy(self) -> EstateSpec:
        burst_pools = [p for _, p in self.pools() if isinstance(p, AwsNodePool) and p.burst]
        if self.burst is None:
            if burst_pools:
                raise SpecFieldError("burst", f"pool {burst_pools[0].name} has burst: true; add a burst policy")
            return self
        cloud = next((s for s in self.sites if s.name == self.burst.cloud_site), None)
        if not isinstance(cloud, AwsSite):
            raise SpecFieldError("burst.cloud_site", f"{self.burst.cloud_site} must name an aws site of the estate")
        if not any(p.burst for p in cloud.node_pools):
            raise SpecFieldError("burst.cloud_site", f"site {cloud.name} has no node pool with burst: true")
        return self

    @model_validator(mode="after")
    def _baremetal_inventory(self) -> EstateSpec:
        tenants = {t.name for t in self.tenants}
        for i, s in enumerate(self.sites):
            if not isinstance(s, BaremetalSite):
                continue
            owner: dict[str, str] = {}
            for j, p in enumerate(s.node_pools):
                for server in self.pool_servers(s, p):
                    if server.hostname in owner:
                        raise SpecFieldError(
                            f"sites[{i}].node_pools[{j}].selector",
                            f"server {server.hostname} is selected by pools {owner[server.hostname]} and {p.name}; "
                            "a server is bootstrapped into exactly one pool",
                        )
                    owner[server.hostname] = p.name
            for j, f in enumerate(s.fabrics):
                if not isinstance(f, InfinibandFabric):
                    continue
                seen: dict[int, str] = {}
                for tenant, pkey in f.partition_keys.items():
                    path = f"sites[{i}].fabrics[{j}].partition_keys.{tenant}"
                    if tenant not in tenants:
                        raise SpecFieldError(path, f"{tenant} is not a tenant of the estate")
                    if int(pkey, 16) in seen:
                        raise SpecFieldError(
                            path, f"tenants {seen[int(pkey, 16)]} and {tenant} share partition key {pkey}"
                        )
                    seen[int(pkey, 16)] = tenant
        return self


def _check_efa_subnet(path: str, s: AwsSite, f: EfaFabric) -> None:
    """An EFA fabric names its subnet the way its site's VPC is built: a CIDR inside a created VPC, an id in
    an adopted one."""
    if s.vpc.vpc_id:
        if not f.subnet_id:
            raise SpecFieldError(
                f"{path}.subnet_id", f"site {s.name} adopts VPC {s.vpc.vpc_id}; fabric {f.name} needs subnet_id"
            )
        return
    if not f.subnet_cidr:
        raise SpecFieldError(
            f"{path}.subnet_cidr", f"site {s.name} creates its VPC; fabric {f.name} needs subnet_cidr inside it"
        )
    if f.subnet_id:
        raise SpecFieldError(f"{path}.subnet_id", "subnet_id is only for a site that adopts its VPC (vpc.vpc_id)")
    try:
        net, vpc = ipaddress.ip_network(f.subnet_cidr), ipaddress.ip_network(s.vpc.cidr or "")
    except ValueError as err:
        raise SpecFieldError(f"{path}.subnet_cidr", f"{f.subnet_cidr} is not a valid CIDR: {err}") from None
    if not (net.version == vpc.version and net.subnet_of(vpc)):  # type: ignore[arg-type]
        raise SpecFieldError(f"{path}.subnet_cidr", f"{f.subnet_cidr} is not inside the site's VPC {s.vpc.cidr}")


def json_schema() -> dict[str, object]:
    """JSON Schema of a stack file's `gpufleet:estate` value, for editors."""
    schema = EstateSpec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "gpufleet estate (config key gpufleet:estate)"
    return schema
