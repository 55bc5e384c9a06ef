"""A site: one place with one Kubernetes cluster, of kind aws or baremetal, with its fabrics and storage tiers."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from model import catalog, conventions
from model.frameworks import DEFAULT_FRAMEWORKS, FrameworkName, offered
from model.spec.access import Interconnect
from model.spec.alerts import AlertReceiver
from model.spec.aws import (
    AwsNodePool,
    EfaFabric,
    EfsTier,
    EksCluster,
    FsxLustreTier,
    PriceOverride,
    S3Tier,
    ServicePriceOverride,
    SitePrice,
    Vpc,
)
from model.spec.baremetal import (
    BaremetalNodePool,
    InfinibandFabric,
    Join,
    NfsTier,
    OnPremCost,
    OnPremS3Tier,
    ParallelFsTier,
    RoceFabric,
    Server,
    SshAccess,
)
from model.spec.base import SYSTEM_NODES_HELP, Model, Name, SystemNodes
from model.spec.host import DriverVersion, MountPath

Fabric = Annotated[EfaFabric | InfinibandFabric | RoceFabric, Field(discriminator="kind")]


class ScratchTier(Model):
    """Node-local NVMe (instance store on AWS, listed devices on bare metal) as scratch space."""

    kind: Literal["scratch"]
    name: Name
    mount_path: MountPath = Field(default="/scratch", description="Where the NVMe array is mounted on nodes.")


StorageTier = Annotated[
    ScratchTier | FsxLustreTier | EfsTier | S3Tier | NfsTier | ParallelFsTier | OnPremS3Tier,
    Field(discriminator="kind"),
]
# File systems many tenants mount at once; each tenant gets a directory of its own (tenants[].file_systems).
SHARED_FILE_SYSTEM_KINDS = frozenset({"fsx-lustre", "efs", "nfs", "parallel-fs"})
AWS_STORAGE = frozenset({"scratch", "fsx-lustre", "efs", "s3"})
BAREMETAL_STORAGE = frozenset({"scratch", "nfs", "parallel-fs", "s3-onprem"})


NetworkPolicyCni = Literal["calico", "cilium", "antrea", "kube-router", "vpc-cni", "none"]


class Monitoring(Model):
    """How a site's cluster is monitored: the one setting every chart value that needs the Prometheus Operator's
    CRDs (monitoring.coreos.com/v1 ServiceMonitor) follows."""

    prometheus_operator: Literal["none", "existing", "install"] = Field(
        default="none",
        description=(
            "`install`: gpufleet installs kube-prometheus-stack (Prometheus, its operator, node exporter, "
            "kube-state-metrics, Grafana) with gpufleet's GPU and Kueue rules, alerts and dashboards. `existing`: a "
            "Prometheus Operator already runs on the cluster, so its ServiceMonitor CRD exists before `up`. With "
            "either, gpufleet adds ServiceMonitors for DCGM exporter and Kueue. `none`: no ServiceMonitor anywhere."
        ),
    )
    service_monitor_labels: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "With `existing`: the labels the operator's Prometheus selects ServiceMonitors by (its "
            "serviceMonitorSelector); kube-prometheus-stack's default selects `release: <its Helm release name>`. "
            "With `install` gpufleet sets them."
        ),
    )
    retention_days: int = Field(
        default=15, ge=1, le=3650, description="With `install`: how many days Prometheus keeps its samples."
    )
    storage_gib: int = Field(
        default=50,
        ge=10,
        le=65536,
        description=(
            "With `install`: the size of Prometheus's persistent volume. Prometheus also stops keeping samples "
            "once they fill 85% of it, whatever retention_days says."
        ),
    )
    storage_class: str | None = Field(
        default=None,
        pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$",
        max_length=253,
        description=(
            "With `install`: the StorageClass of Prometheus's volume. Unset on an EKS cluster gpufleet creates, "
            "gpufleet adds the EBS CSI driver and a gp3 class (gpufleet-gp3) and prices the volume; unset "
            "elsewhere, the cluster's default StorageClass."
        ),
    )

    alerts: AlertReceiver | None = Field(
        default=None,
        description=(
            "With `install`: where alerts go, an Alertmanager receiver (a webhook and/or Slack and PagerDuty keys "
            "held in Secrets of the `monitoring` namespace). Unset, the chart sends every alert to its 'null' "
            "receiver, so none reaches anyone, and preview warns."
        ),
    )

    @model_validator(mode="after")
    def _settings_need_their_mode(self) -> Monitoring:
        if self.service_monitor_labels and self.prometheus_operator != "existing":
            raise ValueError(
                "service_monitor_labels need prometheus_operator: existing (with install gpufleet sets them)"
            )
        installed = ("retention_days", "storage_gib", "storage_class", "alerts")
        if self.prometheus_operator != "install" and (set_here := [k for k in installed if k in self.model_fields_set]):
            raise ValueError(f"{', '.join(set_here)} need prometheus_operator: install")
        return self

    @property
    def service_monitors(self) -> bool:
        return self.prometheus_operator != "none"

    @property
    def installed(self) -> bool:
        return self.prometheus_operator == "install"

    @property
    def monitor_labels(self) -> dict[str, str]:
        """The labels every ServiceMonitor and PrometheusRule of gpufleet carries, so the Prometheus selects it."""
        return dict(conventions.METRICS_SELECTOR) if self.installed else dict(self.service_monitor_labels)


class KubernetesStack(Model):
    """The GPU software stack and scheduler on a site's cluster."""

    gpu_stack: Literal["gpu-operator", "device-plugin"] = Field(
        default="gpu-operator", description="NVIDIA GPU Operator, or the standalone device plugin."
    )
    mig_strategy: Literal["single", "mixed"] = Field(
        default="single",
        description="How MIG devices are advertised (single: nvidia.com/gpu; mixed: per profile).",
    )
    monitoring: Monitoring = Field(default_factory=Monitoring, description="Prometheus Operator on the cluster.")
    network_policy_cni: NetworkPolicyCni | None = Field(
        default=None,
        description=(
            "The CNI of a cluster gpufleet does not build (bare metal, an adopted EKS cluster) and whether it "
            "enforces NetworkPolicy: calico, cilium, antrea, kube-router, vpc-cni (an adopted EKS cluster whose "
            "add-on sets enableNetworkPolicy), or none. Tenants rely on their default-deny policies, so a site "
            "hosting tenants needs an enforcing CNI. Leave unset on a cluster gpufleet creates (it manages vpc-cni "
            "with network policy on)."
        ),
    )
    job_frameworks: list[Annotated[FrameworkName, BeforeValidator(offered)]] = Field(
        default_factory=lambda: list(DEFAULT_FRAMEWORKS),
        description=(
            "Job kinds Kueue manages here (Kueue integration names): batch/job, pod, deployment, statefulset "
            "(built in) and jobset.x-k8s.io/jobset (gpufleet installs JobSet). MPIJob, PyTorchJob, TrainJob and "
            "the other operator kinds are not offered: run MPI jobs as a JobSet. In a hybrid estate every worker "
            "site lists the same ones: the MultiKueue manager enables exactly those."
        ),
    )
    sandbox_runtime_class: str | None = Field(
        default=None,
        description="RuntimeClass (e.g. `kata`, `gvisor`) the site provides for untrusted tenants.",
    )
    driver_version: DriverVersion | None = Field(
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

    gpudirect_rdma: Literal["dma-buf", "off"] | None = Field(
        default=None,
        description=(
            "Bare metal with driver_managed_by: host and an InfiniBand / RoCE fabric (required there, refused "
            "elsewhere): how GPUDirect RDMA works, since the GPU Operator installs no driver and so no "
            "nvidia-peermem. `dma-buf`: the host runs NVIDIA's open kernel module, which exports GPU memory as "
            "DMA-BUF to the Network Operator's DOCA-OFED (the preflight checks the module); `off`: RDMA traffic is "
            "staged through host memory. With driver_managed_by: operator gpufleet loads nvidia-peermem on the "
            "fabric's nodes itself."
        ),
    )


class SiteBase(Model):
    name: Name
    kubernetes: KubernetesStack = Field(default_factory=KubernetesStack, description="GPU stack options.")
    fabrics: list[Fabric] = Field(default_factory=list, description="Fabrics pools can join.")
    storage: list[StorageTier] = Field(default_factory=list, description="Storage tiers.")


class AwsSite(SiteBase):
    """An EKS cluster and its GPU pools in one region."""

    def price_override(self, instance_type: str) -> PriceOverride | None:
        """The stack's own price for `instance_type` on this site, if it sets one."""
        return next((p for p in self.prices if isinstance(p, PriceOverride) and p.instance_type == instance_type), None)

    def service_price_override(self, key: str) -> ServicePriceOverride | None:
        """The stack's own price for the bill line `key` (a catalog SERVICES key) on this site, if it sets one."""
        return next((p for p in self.prices if isinstance(p, ServicePriceOverride) and p.service == key), None)

    kind: Literal["aws"]
    region: str = Field(description="AWS commercial region, e.g. `us-east-1` (one of the catalog's aws_regions.json).")
    availability_zones: list[str] = Field(
        min_length=2, description="AZs the VPC spans (EKS needs two); fabrics pick one of them."
    )
    vpc: Vpc = Field(default_factory=Vpc)
    cluster: EksCluster = Field(default_factory=EksCluster)
    node_pools: list[AwsNodePool] = Field(default_factory=list)
    system_instance_type: str = Field(
        default="m7i.xlarge",
        pattern=r"^[a-z0-9-]+\.[a-z0-9-]+$",
        max_length=64,
        description="Instance type of the CPU system pool.",
    )
    prices: list[SitePrice] = Field(
        default_factory=list,
        max_length=64,
        description=(
            "The stack's own dated prices on this site, used instead of the catalog's: instance types "
            "(`instance_type`, `usd_per_hour`) and the rest of the bill (`service`, `usd`), each with `date` and `source`."
        ),
    )
    interconnect: Interconnect | None = Field(
        default=None,
        description=(
            "How the on-prem site reaches this cluster's API (a hybrid estate's Kueue manager, an on-prem deployer): "
            "vpn, transit-gateway, existing (an adopted VPC already routed) or public."
        ),
    )

    @field_validator("system_instance_type")
    @classmethod
    def _real_instance_type(cls, v: str) -> str:
        why = catalog.unknown_instance_type_name(v)
        if why:
            raise ValueError(why)
        return v


class BaremetalSite(SiteBase):
    """An existing Kubernetes cluster on owned servers, reached by a kubeconfig held as a secret."""

    kind: Literal["baremetal"]
    kubeconfig_config: str = Field(default="kubeconfig", description="Config key holding the kubeconfig (secret).")
    ssh: SshAccess
    join: Join
    inventory: list[Server] = Field(min_length=1)
    node_pools: list[BaremetalNodePool] = Field(default_factory=list)
    cost: OnPremCost | None = Field(default=None, description="Default amortisation inputs for this site's pools.")
    system_nodes: list[SystemNodes] = Field(default_factory=list, max_length=16, description=SYSTEM_NODES_HELP)

    @model_validator(mode="after")
    def _pool_cost_has_a_price(self) -> BaremetalSite:
        for i, pool in enumerate(self.node_pools):
            if pool.cost is not None and pool.cost.server_price_usd is None and self.cost is None:
                raise ValueError(
                    f"node_pools[{i}].cost.server_price_usd: unset, and the site has no `cost` to take it from; "
                    "set it on the pool or give the site a cost"
                )
        return self


# Every site kind. Code that treats kinds differently asks model.kinds.of(site) for the kind's facts; the few
# matches on the kind end with assert_never, so a new kind fails type checking wherever it is not handled.
Site = Annotated[AwsSite | BaremetalSite, Field(discriminator="kind")]
NodePool = AwsNodePool | BaremetalNodePool
