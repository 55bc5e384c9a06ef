"""What every site kind answers: the `SiteKindFacts` protocol, and the kind-neutral values its answers are made of.

A kind module (`model.kinds.aws`, `model.kinds.baremetal`) implements the protocol for one site of its kind;
`model.kinds.of` picks it. The rest of gpufleet asks these facts and never tests a site's class.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from fractions import Fraction

    from model import catalog, pricing
    from model.spec.baremetal import Server
    from model.spec.base import Problem, SystemNodes
    from model.spec.estate import EstateSpec
    from model.spec.sites import AwsSite

ClientRole = Literal["deployer", "multikueue-manager"]
# Who installs the NVIDIA driver: the node image (EKS NVIDIA AMIs), the GPU Operator's driver container, or the
# host image of an owned server (checked by the preflight).
DriverSource = Literal["image", "operator", "host"]


@dataclass(frozen=True)
class ApiClient:
    """Someone who must reach a site's Kubernetes API."""

    role: ClientRole
    name: str  # how messages call it
    path: str  # YAML path (relative to the estate value) of what places it
    network: str | None  # the site whose network it sits in; None: outside every site network
    cidrs: tuple[str, ...]  # its source addresses; empty: anywhere in its network


@dataclass(frozen=True)
class Reach:
    """Whether a client reaches an API: `via` says through which path, or why not and what to declare."""

    ok: bool
    via: str

    def __bool__(self) -> bool:
        return self.ok


@dataclass(frozen=True)
class EksToken:
    """A kubeconfig built from the EKS cluster `cluster` in `region`, authenticated with `aws eks get-token`."""

    cluster: str
    region: str


@dataclass(frozen=True)
class SecretKubeconfig:
    """A kubeconfig held as a Pulumi secret under the config key `config_key`."""

    config_key: str


KubeconfigAccess = EksToken | SecretKubeconfig


# Ports of storage endpoints: Lustre (LNet 988; FSx also 1018-1023), NFSv4 / EFS 2049 (S3: tenant_s3).
LUSTRE_PORTS = [{"protocol": "TCP", "port": 988}, {"protocol": "TCP", "port": 1018, "endPort": 1023}]
NFS_PORTS = [{"protocol": "TCP", "port": 2049}]


@dataclass(frozen=True)
class StorageEgress:
    """One storage endpoint tenant pods may reach."""

    tier: str
    cidr: str | None  # None: the address is a host name or unknown; the tenant lists it in egress_cidrs
    ports: tuple[dict[str, Any], ...]
    address: str = ""


class SiteKindFacts(Protocol):
    """The pure facts of one site, answered by its kind. Pool arguments are names of the site's own pools."""

    # -- capacity
    def pool_gpu_model(self, spec: EstateSpec, pool: str) -> catalog.GpuModel:
        """The pool's GPU model (one per pool)."""
        ...

    def pool_gpu_models(self, spec: EstateSpec, pool: str) -> set[str]:
        """Every GPU model id the pool's nodes have: a schema rule wants exactly one."""
        ...

    def pool_gpus_per_node(self, spec: EstateSpec, pool: str) -> int:
        """GPUs of one node (the largest one where nodes differ)."""
        ...

    def pool_gpu_capacity(self, spec: EstateSpec, pool: str) -> int:
        """GPUs the pool offers at its max size."""
        ...

    def pool_max_nodes(self, spec: EstateSpec, pool: str) -> int:
        """Nodes the pool has at its max size."""
        ...

    def pool_floor_gpus(self, spec: EstateSpec, pool: str) -> int:
        """GPUs the pool runs whatever the demand."""
        ...

    def pool_instance_type(self, pool: str) -> str | None:
        """The cloud instance type of the pool's nodes; None for owned servers."""
        ...

    def pool_gpu_hour(self, spec: EstateSpec, pool: str) -> pricing.GpuHourQuote:
        """What a GPU-hour of the pool costs, as sizing compares it."""
        ...

    def selected_servers(self, pool: str) -> list[Server]:
        """Inventory servers the pool selects; none where nodes come from no inventory."""
        ...

    @property
    def servers(self) -> list[Server]:
        """The site's inventory of owned servers (empty on a cloud)."""
        ...

    def node_network_gbit(self, spec: EstateSpec, pool: str) -> tuple[Fraction | None, str]:
        """A node's network rate in Gbit/s and where it comes from (None with the reason when unknown)."""
        ...

    # -- the cluster and its API
    @property
    def region(self) -> str | None:
        """The cloud region the site's prices and published ranges come from; None off a cloud."""
        ...

    @property
    def manages_cni(self) -> bool:
        """gpufleet manages the cluster's CNI (and so its NetworkPolicy enforcement)."""
        ...

    @property
    def runs_on_ec2(self) -> bool:
        """The nodes are EC2 instances, where the Amazon VPC CNI can run."""
        ...

    @property
    def on_premises(self) -> bool:
        """The site is a data centre's own network, which a cloud site's interconnect can route to."""
        ...

    @property
    def created_network_cidr(self) -> str | None:
        """The range of the network the stack creates for the site (its VPC); None where it creates none."""
        ...

    def interconnect_problems(self, path: str, onprem: list[str]) -> Iterator[Problem]:
        """The site's interconnect against the estate's on-prem sites (`onprem`, by name) and its own network."""
        ...

    def api_reach(self, spec: EstateSpec, client: ApiClient, routed: str | None) -> Reach:
        """Whether `client` reaches the site's API; `routed`: how the client's own network routes privately to
        this site, if it does (`private_route_to` of the site it sits in)."""
        ...

    def private_route_to(self, site: str) -> str | None:
        """How this site's network routes privately to the network of `site`, in words; None: it does not."""
        ...

    @property
    def kubernetes_version(self) -> str | None:
        """The Kubernetes minor the stack sets for the cluster; None where it does not."""
        ...

    @property
    def system_nodes(self) -> tuple[SystemNodes, ...] | None:
        """The nodes an existing cluster has besides its GPU servers, as the site's `system_nodes` states them;
        None for a cluster the stack creates, whose node groups are in the plan."""
        ...

    def kubeconfig_access(self, spec: EstateSpec) -> KubeconfigAccess:
        """How a client outside Pulumi gets the cluster's kubeconfig."""
        ...

    def secrets(self, spec: EstateSpec) -> list[str]:
        """Config keys the program reads as secrets for this site, in first-use order."""
        ...

    # -- the GPU software stack
    @property
    def driver(self) -> DriverSource:
        """Who installs the NVIDIA driver on the GPU nodes."""
        ...

    @property
    def image_ships_toolkit(self) -> bool:
        """The node image brings the NVIDIA container toolkit, so the GPU Operator installs none."""
        ...

    @property
    def has_topology_labels(self) -> bool:
        """Every node carries rack / leaf labels from the inventory: every flavor of the site is topology-aware."""
        ...

    def pool_topology_levels(self, pool: str) -> tuple[str, ...]:
        """Node labels that place each node of the pool in the network, widest first, without the hostname: the
        levels of a Kueue Topology for it. Empty when its nodes carry none."""
        ...

    def storage_egress(self) -> list[StorageEgress]:
        """Storage endpoints tenant pods may reach, derived from the site's tiers."""
        ...

    @property
    def aws_site(self) -> AwsSite | None:
        """The site as the features only AWS offers take it (burst windows on Auto Scaling groups, S3 buckets
        granted through IAM); None for a kind that offers none of them."""
        ...

    @property
    def metrics_volume_class(self) -> str | None:
        """The StorageClass of Prometheus's volume where the site installs the metrics stack: the stack file's,
        else one gpufleet makes for it; None: the cluster's default."""
        ...

    # -- cost and diagram
    @property
    def bill_excludes(self) -> tuple[str, ...]:
        """What the cost envelope leaves out for the site, in words."""
        ...

    @property
    def diagram_where(self) -> str:
        """Where the site is, as the diagram names it."""
        ...

    def pool_diagram(self, spec: EstateSpec, pool: str) -> str:
        """The pool's size, as the diagram shows it."""
        ...

    # -- schema rules of the kind, each in the phase of the estate's rules it belongs to
    def site_problems(self, spec: EstateSpec, path: str) -> Iterator[Problem]:
        """The site's own fields against each other (fabrics, storage kinds, region, prices)."""
        ...

    def pool_problems(self, spec: EstateSpec, path: str) -> Iterator[Problem]:
        """The site's pools against the site."""
        ...

    def inventory_problems(self, spec: EstateSpec, path: str) -> Iterator[Problem]:
        """The site's inventory: each server in one pool, host keys, partition keys."""
        ...

    def unpriced_problems(self, path: str) -> Iterator[Problem]:
        """Every line the site bills that nothing prices."""
        ...
