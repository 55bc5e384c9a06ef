"""Pure facts of a bare-metal site: `BaremetalKind` answers `SiteKindFacts` for an existing cluster on owned
servers, whose GPU nodes are inventory servers a pool selects by label."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

# The spec imports this module: project modules by module, so any may be imported first.
from model import catalog, conventions, pricing
from model.kinds.facts import (
    NFS_PORTS,
    ApiClient,
    DriverSource,
    KubeconfigAccess,
    Reach,
    SecretKubeconfig,
    StorageEgress,
)
from model.rules import baremetal as rules
from model.spec.baremetal import BaremetalNodePool, InfinibandFabric, NfsTier, OnPremS3Tier, Server
from model.spec.base import Problem, SystemNodes
from model.spec.sites import BaremetalSite

if TYPE_CHECKING:
    from model.spec.estate import EstateSpec

IMAGE_SHIPS_DRIVER = False  # the GPU Operator or the host image brings the driver; the operator the toolkit

# What the cost envelope of a bare-metal site leaves out.
UNPRICED = ("on-prem shared storage and network (existing systems)",)


@dataclass(frozen=True)
class BaremetalKind:
    """An existing Kubernetes cluster reached by a kubeconfig held as a secret; GPU servers from an inventory."""

    site: BaremetalSite

    def _pool(self, name: str) -> BaremetalNodePool:
        return next(p for p in self.site.node_pools if p.name == name)

    # -- capacity: the servers a pool selects
    def pool_gpu_model(self, spec: EstateSpec, pool: str) -> catalog.GpuModel:
        """Its servers' model (one model per pool, a schema rule)."""
        return catalog.gpu_model(self._servers(spec, pool)[0].gpu_model)

    def pool_gpu_models(self, spec: EstateSpec, pool: str) -> set[str]:
        return {x.gpu_model for x in self._servers(spec, pool)}

    def pool_gpus_per_node(self, spec: EstateSpec, pool: str) -> int:
        """The largest server's GPUs."""
        return max((s.gpu_count for s in self._servers(spec, pool)), default=0)

    def pool_gpu_capacity(self, spec: EstateSpec, pool: str) -> int:
        return sum(s.gpu_count for s in self._servers(spec, pool))

    def pool_max_nodes(self, spec: EstateSpec, pool: str) -> int:
        return len(self._servers(spec, pool))

    def pool_floor_gpus(self, spec: EstateSpec, pool: str) -> int:
        """Every server: owned, always there."""
        return self.pool_gpu_capacity(spec, pool)

    def pool_instance_type(self, pool: str) -> None:
        return None

    def pool_gpu_hour(self, spec: EstateSpec, pool: str) -> pricing.GpuHourQuote:
        return pricing.onprem_gpu_hour(spec, self.site, self._pool(pool))

    def selected_servers(self, pool: str) -> list[Server]:
        p = self._pool(pool)
        return [x for x in self.site.inventory if all(x.labels.get(k) == v for k, v in p.selector.items())]

    def _servers(self, spec: EstateSpec, pool: str) -> list[Server]:
        return spec.pool_servers(self.site, self._pool(pool))

    @property
    def servers(self) -> list[Server]:
        return list(self.site.inventory)

    def node_network_gbit(self, spec: EstateSpec, pool: str) -> tuple[Fraction | None, str]:
        """The InfiniBand / RoCE rate of the pool's slowest server (ib_rate_gbps x ports), from the inventory."""
        servers = self._servers(spec, pool)
        undeclared = [s.hostname for s in servers if s.ib_rate_gbps is None or not s.ib_ports]
        if undeclared or not servers:
            return None, f"servers {', '.join(undeclared)} declare no ib_rate_gbps / ib_ports in the inventory"
        slowest = min(servers, key=lambda s: (s.ib_rate_gbps or 0) * len(s.ib_ports))
        rate = Fraction((slowest.ib_rate_gbps or 0) * len(slowest.ib_ports))
        return rate, f"inventory {slowest.hostname}: {len(slowest.ib_ports)} ports x {slowest.ib_rate_gbps} Gbit/s"

    # -- the cluster and its API
    @property
    def region(self) -> None:
        return None

    @property
    def manages_cni(self) -> bool:
        return False  # an existing cluster: the site declares its CNI

    @property
    def runs_on_ec2(self) -> bool:
        return False

    @property
    def on_premises(self) -> bool:
        return True

    @property
    def created_network_cidr(self) -> None:
        return None  # the data centre's network exists already

    def interconnect_problems(self, path: str, onprem: list[str]) -> Iterator[Problem]:
        return iter(())  # a VPC declares its interconnect to the data centre

    def api_reach(self, spec: EstateSpec, client: ApiClient, routed: str | None) -> Reach:
        """From inside the site's network, or from a network privately routed to it (the data centre's own
        firewalls are outside the estate's knowledge)."""
        api = self.site.join.api_server
        if client.network == self.site.name:
            return Reach(True, f"{api}, from inside the network of site {self.site.name}")
        if routed is not None:
            return Reach(True, f"{api}, from {routed}")
        return Reach(
            False,
            f"the API of site {self.site.name} ({api}) is reached only from inside its network or from a VPC "
            f"privately connected to it, and {client.name} is neither; set deployer.network: {self.site.name} (a "
            "runner in the data centre, or routed into it)",
        )

    def private_route_to(self, site: str) -> str | None:
        return None  # gpufleet declares no route out of a data centre; a VPC declares its route in

    @property
    def kubernetes_version(self) -> None:
        return None  # an existing cluster: the stack does not set it

    @property
    def system_nodes(self) -> tuple[SystemNodes, ...]:
        return tuple(self.site.system_nodes)

    def kubeconfig_access(self, spec: EstateSpec) -> KubeconfigAccess:
        return SecretKubeconfig(self.site.kubeconfig_config)

    def secrets(self, spec: EstateSpec) -> list[str]:
        """The kubeconfig, the join's secrets, the SSH key when a pool selects servers, on-prem S3 keys, UFM's
        credentials."""
        s = self.site
        keys = [s.kubeconfig_config]
        if not s.join.mints_token:  # kubeadm with `token: minted` (the default) mints its own
            keys.append(s.join.token_config)
        keys.append(s.join.ca_hash_config if s.join.method == "kubeadm" else s.join.activation_id_config)
        if any(spec.pool_servers(s, pool) for pool in s.node_pools):
            keys.append(s.ssh.private_key_config)
        keys += [
            k for t in s.storage if isinstance(t, OnPremS3Tier) for k in (t.access_key_config, t.secret_key_config)
        ]
        for f in s.fabrics:
            if isinstance(f, InfinibandFabric) and f.ufm is not None:  # ib-kubernetes' UFM credentials
                keys += [f.ufm.username_config, f.ufm.password_config, *filter(None, [f.ufm.ca_certificate_config])]
        return keys

    # -- the GPU software stack
    @property
    def driver(self) -> DriverSource:
        return self.site.kubernetes.driver_managed_by

    @property
    def image_ships_toolkit(self) -> bool:
        return IMAGE_SHIPS_DRIVER

    @property
    def has_topology_labels(self) -> bool:
        return True  # rack / leaf of every server, from the inventory

    def pool_topology_levels(self, pool: str) -> tuple[str, ...]:
        """Rack, then the NVLink clique where the pool's NVLink domains span servers, then leaf: the labels the
        bootstrap sets from the inventory (model.nodes.server_topology_labels) and, for the clique, NVIDIA's GPU
        stack. A server's rail is no level: a Topology's levels are immutable, so adding one replaces Topologies,
        flavors and queues on every site, and the MultiKueue manager's fixed levels
        (model.dispatch.MANAGER_TOPOLOGY_LEVELS) would need it too."""
        clique = (conventions.GPU_CLIQUE_LABEL,) if self._pool(pool).nvlink_domain_nodes > 1 else ()
        return (conventions.RACK_LABEL, *clique, conventions.LEAF_LABEL)

    def storage_egress(self) -> list[StorageEgress]:
        """An NFS server or S3 endpoint at the tier's `cidr`, or a /32 when given as an IP address; a host name
        without `cidr` cannot be resolved here and is reported with cidr None."""
        out: list[StorageEgress] = []
        for tier in self.site.storage:
            if isinstance(tier, NfsTier):
                out.append(StorageEgress(tier.name, tier.cidr or _ip_cidr(tier.server), tuple(NFS_PORTS), tier.server))
            elif isinstance(tier, OnPremS3Tier):
                url = urlsplit(tier.endpoint)
                host = url.hostname or ""
                ports = ({"protocol": "TCP", "port": url.port or 443},)
                out.append(StorageEgress(tier.name, tier.cidr or _ip_cidr(host), ports, host))
        return out

    @property
    def aws_site(self) -> None:
        return None

    @property
    def metrics_volume_class(self) -> str | None:
        return self.site.kubernetes.monitoring.storage_class

    # -- cost and diagram
    @property
    def bill_excludes(self) -> tuple[str, ...]:
        mon = self.site.kubernetes.monitoring
        if not mon.installed:
            return UNPRICED
        where = f"StorageClass {mon.storage_class}" if mon.storage_class else "the cluster's default StorageClass"
        return (
            *UNPRICED,
            f"Prometheus's {mon.storage_gib} GiB volume on site {self.site.name} (owned storage, {where})",
        )

    @property
    def diagram_where(self) -> str:
        return "bare metal"

    def pool_diagram(self, spec: EstateSpec, pool: str) -> str:
        model = self.pool_gpu_model(spec, pool).id
        per_node, servers = self.pool_gpus_per_node(spec, pool), len(self._servers(spec, pool))
        return f"{model} × {per_node} × {servers} servers = {self.pool_gpu_capacity(spec, pool)} GPUs"

    # -- schema rules (model.rules.baremetal)
    def site_problems(self, spec: EstateSpec, path: str) -> Iterator[Problem]:
        return rules.site_problems(path, self.site)

    def pool_problems(self, spec: EstateSpec, path: str) -> Iterator[Problem]:
        return rules.pool_problems(spec, path, self.site)

    def inventory_problems(self, spec: EstateSpec, path: str) -> Iterator[Problem]:
        return rules.inventory_problems(spec, path, self.site)

    def unpriced_problems(self, path: str) -> Iterator[Problem]:
        return iter(())  # owned servers are priced by the stack's OnPremCost, or named unpriced by the review


def _ip_cidr(host: str) -> str | None:
    try:
        return f"{ipaddress.ip_address(host)}/32"
    except ValueError:
        return None
