"""Cross-field rules of a bare-metal site: fabrics, storage and driver settings, pools that select servers, each
server in one pool, SSH host keys and InfiniBand partition keys.

model.kinds.baremetal runs them in the phases of the estate's rules (model.rules.estate).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import TYPE_CHECKING

# The spec imports the kinds, which import this module: project modules by module, so any may be imported first.
from model import catalog
from model.rules import storage
from model.spec.aws import EfaFabric
from model.spec.baremetal import InfinibandFabric, RoceFabric, Server
from model.spec.base import Problem
from model.spec.sites import BAREMETAL_STORAGE, BaremetalSite

if TYPE_CHECKING:
    from model.spec.estate import EstateSpec


def site_problems(path: str, s: BaremetalSite) -> Iterator[Problem]:
    yield from storage.storage_kinds(path, s.kind, [t.kind for t in s.storage], BAREMETAL_STORAGE)
    for j, f in enumerate(s.fabrics):
        if isinstance(f, EfaFabric):
            yield Problem(f"{path}.fabrics[{j}].kind", "a baremetal site's fabrics are infiniband or roce, not efa")
        if isinstance(f, InfinibandFabric) and f.ipoib and f.ipoib_interface is None:
            # No default: hosts name IPoIB interfaces by PCI slot, so `ib0` is often absent (DGX H100/H200 User
            # Guide, "Network Modules": ibp24s0 for mlx5_0 ... ibp220s0 for mlx5_11;
            # https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html).
            yield Problem(
                f"{path}.fabrics[{j}].ipoib_interface",
                "ipoib (on by default) needs the host IPoIB interface its networks create child links from, named "
                "alike on every server of the fabric, e.g. `ipoib_interface: ibp24s0` on DGX H100 (`ip -br link "
                "show type ipoib` on a server lists them); or set `ipoib: false`",
            )
    partitioned = [f.name for f in s.fabrics if isinstance(f, InfinibandFabric) and f.partition_keys]
    if len(partitioned) > 1:
        # The cluster's one NicClusterPolicy runs one ib-kubernetes, with one UFM (its `ibKubernetes` section).
        yield Problem(
            f"{path}.fabrics",
            f"fabrics {', '.join(partitioned)} all set partition_keys, but a cluster runs one ib-kubernetes with "
            "one UFM; give partition keys on one fabric only",
        )
    if s.kubernetes.driver_managed_by == "operator":
        if s.kubernetes.gpu_stack == "device-plugin":
            yield Problem(
                f"{path}.kubernetes.driver_managed_by",
                "with gpu_stack device-plugin nothing installs the NVIDIA driver; set driver_managed_by: "
                "host (the host image brings it)",
            )
        for j, server in enumerate(s.inventory):
            if server.driver_version:
                yield Problem(
                    f"{path}.inventory[{j}].driver_version",
                    "the GPU Operator installs one driver per site (kubernetes.driver_version); a server "
                    "driver_version needs kubernetes.driver_managed_by: host",
                )


def pool_problems(spec: EstateSpec, path: str, s: BaremetalSite) -> Iterator[Problem]:
    for j, p in enumerate(s.node_pools):
        servers = spec.pool_servers(s, p)
        if not servers:
            yield Problem(f"{path}.node_pools[{j}].selector", f"selects no server of site {s.name} ({p.selector})")
        models = sorted({x.gpu_model for x in servers})
        if len(models) > 1:
            yield Problem(f"{path}.node_pools[{j}].selector", f"pool {p.name} mixes GPU models {models}; split it")
        if p.nvlink_domain_nodes > 1:
            yield from _nvlink_domains(path, s, j, servers)
    yield from _address_blocks(spec, path, s)


def _nvlink_domains(path: str, s: BaremetalSite, j: int, servers: list[Server]) -> Iterator[Problem]:
    """A multi-node NVLink pool's servers each name their domain, and no domain holds more servers than the pool's
    nvlink_domain_nodes: a domain is the set of servers one NVLink fabric joins (NVIDIA IMEX guide, "Overview"),
    so the inventory is where a ComputeDomain gang's reach is known before any node exists."""
    pool = s.node_pools[j]
    yield from _nvlink_reach(path, j, pool.name, pool.nvlink_domain_nodes, servers)
    index = {x.hostname: i for i, x in enumerate(s.inventory)}
    members: dict[str, list[str]] = {}
    for server in servers:
        if server.nvlink_domain is None:
            yield Problem(
                f"{path}.inventory[{index[server.hostname]}].nvlink_domain",
                f"server {server.hostname} is in pool {pool.name}, whose nvlink_domain_nodes is "
                f"{pool.nvlink_domain_nodes}: name the NVLink domain its GPUs belong to",
            )
        else:
            members.setdefault(server.nvlink_domain, []).append(server.hostname)
    for domain, hosts in sorted(members.items()):
        if len(hosts) > pool.nvlink_domain_nodes:
            yield Problem(
                f"{path}.node_pools[{j}].nvlink_domain_nodes",
                f"NVLink domain {domain} holds {len(hosts)} servers of pool {pool.name} ({', '.join(hosts)}), more "
                f"than its nvlink_domain_nodes ({pool.nvlink_domain_nodes}); fix the inventory or the pool",
            )


def _nvlink_reach(path: str, j: int, pool: str, nodes: int, servers: list[Server]) -> Iterator[Problem]:
    """NVLink joins servers only where the GPU model's domain is larger than one server's GPUs (catalog
    `nvlink_domain_gpus`: 72 for GB200 NVL72, 8 for an HGX board), and a domain holds at most that many GPUs."""
    for model in sorted({x.gpu_model for x in servers}):
        domain = catalog.gpu_model(model).nvlink_domain_gpus
        per_server = max(x.gpu_count for x in servers if x.gpu_model == model)
        if domain <= per_server:
            yield Problem(
                f"{path}.node_pools[{j}].nvlink_domain_nodes",
                f"pool {pool}: {model}'s NVLink domain is {domain} GPUs, no more than one server's {per_server}, so "
                "NVLink cannot join servers; set nvlink_domain_nodes to 1 (multi-node NVLink is GB200-class NVL72)",
            )
        elif nodes * per_server > domain:
            yield Problem(
                f"{path}.node_pools[{j}].nvlink_domain_nodes",
                f"pool {pool}: {nodes} servers of {per_server} {model} GPUs are {nodes * per_server} GPUs, more than "
                f"one NVLink domain of {model} joins ({domain})",
            )


def node_blocks(cidr: str, per_node: int) -> int:
    """How many per-node blocks nv-ipam carves from an IPv4 range. The first block starts after the network
    address and no block may hold the broadcast address (Mellanox/nvidia-k8s-ipam at the tag the Network Operator
    pins, versions.NETWORK_OPERATOR_COMPONENTS_TAG: pkg/ipam-controller/allocator/allocator.go, getFirstStartIP
    and allocationValid)."""
    return (ipaddress.ip_network(cidr, strict=False).num_addresses - 2) // per_node


def fabric_servers(spec: EstateSpec, s: BaremetalSite, fabric: InfinibandFabric | RoceFabric) -> int:
    """Servers on a fabric: those of the pools that name it (the nodes its IPPool selects)."""
    return sum(len(spec.pool_servers(s, p)) for p in s.node_pools if p.fabric == fabric.name)


def _address_blocks(spec: EstateSpec, path: str, s: BaremetalSite) -> Iterator[Problem]:
    """A fabric's range holds one block of `addresses_per_node` per server on it. The block size is fixed, not
    derived from the server count: nv-ipam drops every stored allocation whose size differs from the IPPool's
    (allocator.go, checkAllocation: "ip count mismatch"), so a new size re-carves every node's addresses."""
    for j, f in enumerate(s.fabrics):
        if not isinstance(f, InfinibandFabric | RoceFabric):
            continue
        servers, blocks = fabric_servers(spec, s, f), node_blocks(f.address_range, f.addresses_per_node)
        if servers > blocks:
            key = "ipoib_cidr" if isinstance(f, InfinibandFabric) else "cidr"
            prefix = 32 - (servers * f.addresses_per_node + 1).bit_length()  # the smallest range that holds them
            yield Problem(
                f"{path}.fabrics[{j}].{key}",
                f"{f.address_range} holds {blocks} block(s) of {f.addresses_per_node} addresses (nv-ipam's "
                f"perNodeBlockSize, addresses_per_node), but {servers} servers are on fabric {f.name}; widen "
                f"{key} to a /{prefix} or larger, or lower addresses_per_node before the fabric's first `up` (a "
                "new block size re-carves every node's addresses)",
            )


def inventory_problems(spec: EstateSpec, path: str, s: BaremetalSite) -> Iterator[Problem]:
    """Each server in at most one pool, a host key for every host reached over SSH, and InfiniBand partition keys
    that name tenants, one key each."""
    tenants = {t.name for t in spec.tenants}
    owner: dict[str, str] = {}
    for j, p in enumerate(s.node_pools):
        for server in spec.pool_servers(s, p):
            if server.hostname in owner:
                yield Problem(
                    f"{path}.node_pools[{j}].selector",
                    f"server {server.hostname} is selected by pools {owner[server.hostname]} and {p.name}; "
                    "a server is bootstrapped into exactly one pool",
                )
            else:
                owner[server.hostname] = p.name
    yield from _host_keys(path, spec, s)
    for j, f in enumerate(s.fabrics):
        if not isinstance(f, InfinibandFabric):
            continue
        seen: dict[int, str] = {}
        for tenant, pkey in f.partition_keys.items():
            where = f"{path}.fabrics[{j}].partition_keys.{tenant}"
            if tenant not in tenants:
                yield Problem(where, f"{tenant} is not a tenant of the estate")
            if int(pkey, 16) in seen:
                yield Problem(where, f"tenants {seen[int(pkey, 16)]} and {tenant} share partition key {pkey}")
            else:
                seen[int(pkey, 16)] = tenant


def _host_keys(path: str, spec: EstateSpec, s: BaremetalSite) -> Iterator[Problem]:
    """Every host gpufleet reaches over SSH (servers a pool selects, the bastion) has a host key to check, unless
    the site opts out explicitly: pulumi-command skips the check when none is given, and the join token travels
    over that connection."""
    if s.ssh.insecure_skip_host_key_check:
        return
    selected = {x.hostname for p in s.node_pools for x in spec.pool_servers(s, p)}
    for k, server in enumerate(s.inventory):
        if server.hostname in selected and server.host_key is None:
            yield Problem(
                f"{path}.inventory[{k}].host_key",
                f"server {server.hostname} needs its SSH host key (`ssh-keyscan -t ed25519 {server.address}` over "
                "a network you trust, or its /etc/ssh/ssh_host_ed25519_key.pub); to connect unchecked set "
                "ssh.insecure_skip_host_key_check: true",
            )
    if s.ssh.bastion and s.ssh.bastion_host_key is None:
        yield Problem(
            f"{path}.ssh.bastion_host_key",
            f"bastion {s.ssh.bastion} needs its SSH host key; to connect unchecked set "
            "ssh.insecure_skip_host_key_check: true",
        )
