"""Pure facts of an AWS site: `AwsKind` answers `SiteKindFacts` for it; its EKS cluster's name and kubeconfig, and
the tags its autoscaled groups are found by.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

# The spec imports this module: project modules by module, so any may be imported first.
from model import catalog, conventions, pricing, subnets, tags
from model.catalog import topology
from model.kinds.facts import (
    LUSTRE_PORTS,
    NFS_PORTS,
    ApiClient,
    DriverSource,
    EksToken,
    KubeconfigAccess,
    Reach,
    StorageEgress,
)
from model.rules import aws as rules
from model.spec.access import PrivateInterconnect, PublicInterconnect
from model.spec.aws import AwsNodePool, EfsTier, FsxLustreTier
from model.spec.base import Problem
from model.spec.sites import AwsSite

if TYPE_CHECKING:
    from fractions import Fraction

    from model.nodes import Taint
    from model.spec.baremetal import Server
    from model.spec.estate import EstateSpec
    from model.tags import Tags

IMAGE_SHIPS_DRIVER = True  # EKS NVIDIA AMIs ship the NVIDIA driver and container toolkit

# What no catalog entry or usage figure prices yet: named in every envelope of an AWS site, never $0.
UNPRICED = (
    "load balancers",
    "cross-AZ data transfer",
)
# Only a created cluster sends control-plane logs to a log group (components/aws/cluster.py); an adopted one not.
CONTROL_PLANE_LOGS = "CloudWatch logs (EKS control-plane logs)"


@dataclass(frozen=True)
class AwsKind:
    """An EKS cluster the stack creates or adopts, whose GPU nodes are EC2 instances of a catalog type."""

    site: AwsSite

    def _pool(self, name: str) -> AwsNodePool:
        return next(p for p in self.site.node_pools if p.name == name)

    # -- capacity: the instance type's GPUs (catalog), times nodes
    def pool_gpu_model(self, spec: EstateSpec, pool: str) -> catalog.GpuModel:
        return self._pool(pool).gpu_model

    def pool_gpu_models(self, spec: EstateSpec, pool: str) -> set[str]:
        return {self._pool(pool).gpu_model.id}

    def pool_gpus_per_node(self, spec: EstateSpec, pool: str) -> int:
        return self._pool(pool).gpus_per_node

    def pool_gpu_capacity(self, spec: EstateSpec, pool: str) -> int:
        """GPUs at the most nodes the pool can have (its max only where the autoscaler reaches it)."""
        p = self._pool(pool)
        return p.reachable_nodes * p.gpus_per_node

    def pool_max_nodes(self, spec: EstateSpec, pool: str) -> int:
        return self._pool(pool).reachable_nodes

    def pool_floor_gpus(self, spec: EstateSpec, pool: str) -> int:
        """Its min nodes: the autoscaler removes idle nodes above it."""
        p = self._pool(pool)
        return p.scaling.min * p.gpus_per_node

    def pool_instance_type(self, pool: str) -> str:
        return self._pool(pool).instance_type

    def pool_gpu_hour(self, spec: EstateSpec, pool: str) -> pricing.GpuHourQuote:
        return pricing.aws_pool_gpu_hour(self.site, self._pool(pool))

    def selected_servers(self, pool: str) -> list[Server]:
        return []

    @property
    def servers(self) -> list[Server]:
        return []

    def node_network_gbit(self, spec: EstateSpec, pool: str) -> tuple[Fraction | None, str]:
        """The instance type's fixed network rate (catalog, from EC2 DescribeInstanceTypes)."""
        it = self._pool(pool).instance
        rate = it.network_gbit_per_s
        where = f"catalog {it.name} network_performance {it.network_performance!r} (EC2 DescribeInstanceTypes)"
        return rate, where if rate is not None else f"{where} is not a fixed rate"

    # -- the cluster and its API
    @property
    def region(self) -> str:
        return self.site.region

    @property
    def manages_cni(self) -> bool:
        """gpufleet manages the EKS vpc-cni add-on (network policy on) of a cluster it creates."""
        return self.site.cluster.adopt_name is None

    @property
    def runs_on_ec2(self) -> bool:
        return True

    @property
    def on_premises(self) -> bool:
        return False

    @property
    def created_network_cidr(self) -> str | None:
        vpc = self.site.vpc
        return vpc.cidr if vpc.cidr and not vpc.vpc_id else None

    def interconnect_problems(self, path: str, onprem: list[str]) -> Iterator[Problem]:
        if self.site.interconnect is None:
            return iter(())
        return rules.interconnect_problems(path, self.site, onprem)

    def api_reach(self, spec: EstateSpec, client: ApiClient, routed: str | None) -> Reach:
        return _api_reach(self.site, client)

    def private_route_to(self, site: str) -> str | None:
        ic = self.site.interconnect
        if isinstance(ic, PrivateInterconnect) and ic.site == site:
            return f"the VPC of site {self.site.name} through its {ic.kind}"
        return None

    @property
    def kubernetes_version(self) -> str:
        return self.site.cluster.version

    @property
    def system_nodes(self) -> None:
        return None  # a cluster the stack creates: its node groups are in the plan

    def kubeconfig_access(self, spec: EstateSpec) -> KubeconfigAccess:
        return EksToken(cluster_name(tags.Tags.from_spec(spec), self.site), self.site.region)

    def secrets(self, spec: EstateSpec) -> list[str]:
        return []

    # -- the GPU software stack
    @property
    def driver(self) -> DriverSource:
        return "image"

    @property
    def image_ships_toolkit(self) -> bool:
        return IMAGE_SHIPS_DRIVER

    @property
    def has_topology_labels(self) -> bool:
        return False  # EKS nodes have no rack / leaf facts

    def pool_topology_levels(self, pool: str) -> tuple[str, ...]:
        """EKS's network-node layers of the pool's instance type in the site's Region (model.catalog.topology),
        widest first; none where EC2 describes no topology of the type, or none in the Region."""
        layers = topology.network_layers(self._pool(pool).instance_type, self.site.region)
        return conventions.EKS_NETWORK_LAYER_LABELS[:layers]

    def storage_egress(self) -> list[StorageEgress]:
        """FSx for Lustre and EFS mount targets live in the VPC: the VPC CIDR of a VPC the stack creates (an adopted
        VPC's CIDR is not in the spec). S3 is reached through the VPC's gateway endpoint at S3's public ranges: a
        tenant granted S3 gets those in its own policy (components.kubernetes.tenant_s3)."""
        out: list[StorageEgress] = []
        vpc = self.site.vpc.cidr if self.site.vpc.vpc_id is None else None
        for tier in self.site.storage:
            if isinstance(tier, FsxLustreTier):
                out.append(StorageEgress(tier.name, vpc, tuple(LUSTRE_PORTS), "vpc"))
            elif isinstance(tier, EfsTier):
                out.append(StorageEgress(tier.name, vpc, tuple(NFS_PORTS), "vpc"))
        return out

    @property
    def aws_site(self) -> AwsSite:
        return self.site

    @property
    def metrics_volume_class(self) -> str | None:
        mon = self.site.kubernetes.monitoring
        if mon.storage_class or self.site.cluster.adopt_name is not None:
            return mon.storage_class
        return conventions.EBS_GP3_CLASS  # components/aws/storage/ebs.py

    @property
    def prices_metrics_volume(self) -> bool:
        """Whether Prometheus's volume is gp3 from gpufleet's own class, so the bill prices it."""
        return self.site.kubernetes.monitoring.installed and self.metrics_volume_class == conventions.EBS_GP3_CLASS

    # -- cost and diagram
    @property
    def bill_excludes(self) -> tuple[str, ...]:
        extra = []
        mon = self.site.kubernetes.monitoring
        if mon.installed and not self.prices_metrics_volume:
            where = f"StorageClass {mon.storage_class}" if mon.storage_class else "the cluster's default StorageClass"
            extra.append(f"Prometheus's {mon.storage_gib} GiB volume on site {self.site.name} ({where})")
        kinds = {t.kind for t in self.site.storage}
        # Named only where the stack makes them: FSx backups (7-day automatic backups) and its CloudWatch logs
        # (components/aws/storage/fsx.py), AWS Backup of EFS (components/aws/storage/efs.py), S3 requests.
        if "fsx-lustre" in kinds:
            extra += ["FSx backups (per GB-month)", "FSx logs in CloudWatch (per GB)"]
        if "efs" in kinds:
            extra += ["EFS backups (AWS Backup, per GB-month)", "EFS throughput"]
        if "s3" in kinds:
            extra.append("S3 requests")
        ic = self.site.interconnect
        if ic is not None and ic.kind == "transit-gateway":
            extra.append("the transit gateway attachment (hourly and per GB)")
        if self.site.vpc.interface_endpoints:
            extra.append("interface VPC endpoints (hourly per AZ and per GB)")
        logs = (CONTROL_PLANE_LOGS,) if self.site.cluster.adopt_name is None else ()
        return (*logs, *UNPRICED, *extra)

    @property
    def diagram_where(self) -> str:
        return f"aws {self.site.region}"

    def pool_diagram(self, spec: EstateSpec, pool: str) -> str:
        p = self._pool(pool)
        model, per_node, nodes = p.gpu_model.id, p.gpus_per_node, p.scaling.max
        what = f"{p.instance_type}<br/>{model} × {per_node} × {nodes} max nodes = {nodes * per_node} GPUs"
        return what + " (burst: 0 outside windows)" if p.burst else what

    # -- schema rules (model.rules.aws)
    def site_problems(self, spec: EstateSpec, path: str) -> Iterator[Problem]:
        return rules.site_problems(path, self.site)

    def pool_problems(self, spec: EstateSpec, path: str) -> Iterator[Problem]:
        return rules.pool_problems(path, self.site)

    def inventory_problems(self, spec: EstateSpec, path: str) -> Iterator[Problem]:
        return iter(())

    def unpriced_problems(self, path: str) -> Iterator[Problem]:
        return rules.unpriced_problems(path, self.site)


def _api_reach(site: AwsSite, client: ApiClient) -> Reach:
    ic = site.interconnect
    public = site.cluster.endpoint_public_cidrs
    if client.network == site.name:
        if client.role == "multikueue-manager" and not vpc_range(site):
            return Reach(
                False,
                f"{client.name} sits in the VPC of site {site.name}, but the API security group admits it by the "
                "VPC's range and vpc.cidr is not declared; declare the adopted VPC's CIDR in vpc.cidr",
            )
        return Reach(True, f"the private endpoint, from inside the VPC of site {site.name}")
    if client.network is not None:
        if isinstance(ic, PrivateInterconnect) and ic.site == client.network:
            stray = subnets.outside(client.cidrs, ic.onprem_cidrs)
            if stray:
                return Reach(
                    False,
                    f"{client.name} sends from {', '.join(stray)}, which the {ic.kind} interconnect of site "
                    f"{site.name} does not route (interconnect.onprem_cidrs: {', '.join(ic.onprem_cidrs)})",
                )
            return Reach(True, f"the private endpoint, through the {ic.kind} interconnect from {ic.site}")
        if isinstance(ic, PublicInterconnect) and ic.site == client.network:
            stray = subnets.outside(ic.egress_cidrs, public)
            if stray:
                admits = ", ".join(public) if public else "nothing (private only)"
                return Reach(
                    False,
                    f"{client.name} leaves {ic.site} from {', '.join(stray)} (interconnect.egress_cidrs), but the "
                    f"public endpoint of site {site.name} admits {admits}; add them to cluster.endpoint_public_cidrs",
                )
            return Reach(True, f"the public endpoint, from {ic.site}'s egress addresses")
        return Reach(
            False,
            f"{client.name} sits in site {client.network}'s network, which the VPC of site {site.name} is not "
            f"connected to; declare interconnect (vpn, transit-gateway, existing or public) with site: "
            f"{client.network} on site {site.name}",
        )
    if not public:
        return Reach(
            False,
            f"the API of site {site.name} is private (cluster.endpoint_public_cidrs is empty) and {client.name} sits "
            f"outside every network connected to it; run it inside the VPC or a connected network (deployer.network), "
            f"or admit its addresses in cluster.endpoint_public_cidrs",
        )
    stray = subnets.outside(client.cidrs, public)
    if stray:
        return Reach(
            False,
            f"the public endpoint of site {site.name} admits only {', '.join(public)} "
            f"(cluster.endpoint_public_cidrs); {client.name} sends from {', '.join(stray)}",
        )
    return Reach(True, "the public endpoint, which admits its addresses")


def vpc_range(site: AwsSite) -> str | None:
    """The VPC's CIDR when it is known: the one the stack creates it with, or one declared for an adopted VPC
    (`vpc.cidr` has a default that describes only a VPC the stack creates)."""
    if site.vpc.vpc_id is None or "cidr" in site.vpc.model_fields_set:
        return site.vpc.cidr
    return None


# gpufleet's own discovery tag: EKS tags every managed node group's Auto Scaling group with the two
# cluster-autoscaler keys itself ("Nodes launched as part of a managed node group are automatically tagged for
# auto-discovery by the Kubernetes Cluster Autoscaler": https://docs.aws.amazon.com/eks/latest/userguide/
# managed-node-groups.html), the system node group's included. This third key, set only on autoscaled pools, is what
# keeps the autoscaler and its IAM policy to those.
AUTOSCALED_TAG = "gpufleet.io/autoscaled-pool"
CA_TAG_PREFIX = "k8s.io/cluster-autoscaler"
NODE_TEMPLATE = f"{CA_TAG_PREFIX}/node-template"


def autoscaled_pools(site: AwsSite) -> list[AwsNodePool]:
    """The site's pools cluster-autoscaler sizes (AwsNodePool.autoscaled); the site runs one where any exists."""
    return [p for p in site.node_pools if p.autoscaled]


def discovery_tags(cluster: str, pool: str) -> dict[str, str]:
    """The Auto Scaling group tags the autoscaler discovers an autoscaled pool by: an Auto Scaling group is
    discovered only when it has all of them (cluster-autoscaler cloudprovider/aws/README.md, "Auto-Discovery
    Setup", at tag cluster-autoscaler-<versions.CLUSTER_AUTOSCALER_APP>). gpufleet sets the two EKS sets too, so the
    set does not rest on EKS alone."""
    return {f"{CA_TAG_PREFIX}/enabled": "true", f"{CA_TAG_PREFIX}/{cluster}": "owned", AUTOSCALED_TAG: pool}


def asg_tag_name(pool_component: str, key: str) -> str:
    """The Pulumi name of a pool's Auto Scaling group tag `key` (components/aws/node_pool.py): the pool component's
    name and the key as a name fragment, unique per key. The burst commands target the burst pools' by it."""
    short = key.removeprefix(f"{CA_TAG_PREFIX}/")
    return f"{pool_component}-asg-" + "".join(c if c.isalnum() else "-" for c in short.lower())


def discovery_keys(cluster: str) -> list[str]:
    """`autoDiscovery.tags` of the chart: the keys of `discovery_tags`."""
    return list(discovery_tags(cluster, "").keys())


def node_template_tags(
    labels: dict[str, str],
    taints: list[Taint],
    gpu_resource: str,
    gpu_units_per_node: int,
    devices: dict[str, int] | None = None,
) -> dict[str, str]:
    """Node-template tags of an autoscaled pool's Auto Scaling group: its node labels and taints, its GPU resource
    and the node's other devices (`devices`, e.g. its EFA interfaces): a pending pod asking for a resource no
    template offers never scales a group up from zero (`node-template/resources/<name>`, the same README).

    The GPU resource is tagged for whole GPUs too, so the template states what the device plugin advertises;
    otherwise the autoscaler counts the instance type's GPUs (cloudprovider/aws/aws_manager.go,
    buildNodeFromTemplate, where resource tags override the instance type's figures).

    The autoscaler learns a group's labels and taints from EKS DescribeNodegroup only while the group has never had
    nodes; after that only from these tags (cluster-autoscaler cloudprovider/aws/README.md, "Auto-discovery setup"
    and the eks:DescribeNodegroup note, at the pinned tag). EKS does not copy node group tags to its Auto Scaling
    group, so gpufleet tags the group itself.
    """
    tags = {f"{NODE_TEMPLATE}/label/{k}": v for k, v in sorted(labels.items())}
    tags |= {f"{NODE_TEMPLATE}/taint/{t.key}": f"{t.value}:{t.effect}" for t in taints}
    tags[f"{NODE_TEMPLATE}/resources/{gpu_resource}"] = str(gpu_units_per_node)
    tags |= {f"{NODE_TEMPLATE}/resources/{name}": str(n) for name, n in sorted((devices or {}).items())}
    return tags


def cluster_name(tags: Tags, site: AwsSite) -> str:
    """EKS cluster names are unique per account and region: estate, environment and site."""
    return site.cluster.adopt_name or f"{tags.base['cluster']}-{tags.base['env']}-{site.name}"


# EventBridge Scheduler schedule and schedule group names, and IAM role names: at most 64 characters
# (Scheduler API reference, CreateSchedule / CreateScheduleGroup `Name`; IAM API reference, CreateRole `RoleName`).
AWS_NAME_MAX = 64


def bounded_name(base: str, limit: int, *salt: str) -> str:
    """A name of at most `limit` characters: the head of `base`, `-` and 8 hex digits of a hash of `base` and
    `salt`. So two names that share a long head, or the same base in two regions, still differ."""
    digest = hashlib.sha256("|".join((base, *salt)).encode()).hexdigest()[:8]
    return f"{base[: limit - 9].rstrip('-_')}-{digest}"


def burst_node_group_name(pool: AwsNodePool) -> str:
    """A burst pool's node group name, fixed so its backstop can name it before the group is created or raised."""
    # A DNS-1123 label of at most 40 characters, unique in the cluster: a valid EKS node group name (at most 63
    # characters, a letter or digit first, then hyphens and underscores too: pulumi-aws aws.eks.NodeGroup
    # `nodeGroupName`, after the EKS API).
    return pool.name


def backstop_name(cluster: str, region: str, pool: str) -> str:
    """The name of a burst pool's backstop schedule, schedule group and role (IAM role names are unique per
    account, across regions: the region salts the hash)."""
    return bounded_name(f"{cluster}-{pool}-stop", AWS_NAME_MAX, region)


def kubeconfig(name: str, endpoint: str | None, ca_data: str | None, region: str) -> str:
    """A kubeconfig that authenticates with `aws eks get-token` (the deployer's AWS credentials)."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": name, "cluster": {"server": endpoint or "", "certificate-authority-data": ca_data or ""}}
        ],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
        "users": [
            {
                "name": name,
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "aws",
                        "args": ["eks", "get-token", "--cluster-name", name, "--region", region, "--output", "json"],
                        "interactiveMode": "Never",
                    }
                },
            }
        ],
    }
    return json.dumps(doc)
