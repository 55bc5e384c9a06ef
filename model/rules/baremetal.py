"""Cross-field rules of a bare-metal site: each server in one pool, SSH host keys, InfiniBand partition keys, and
how GPUDirect RDMA works on host-driver sites (rules in the style of model.rules.estate)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from model.spec.baremetal import InfinibandFabric, RoceFabric
from model.spec.base import Problem
from model.spec.sites import BaremetalSite

if TYPE_CHECKING:
    from model.spec.estate import EstateSpec


def baremetal_inventory(spec: EstateSpec) -> Iterator[Problem]:
    tenants = {t.name for t in spec.tenants}
    for i, s in enumerate(spec.sites):
        if not isinstance(s, BaremetalSite):
            continue
        owner: dict[str, str] = {}
        for j, p in enumerate(s.node_pools):
            for server in spec.pool_servers(s, p):
                if server.hostname in owner:
                    yield Problem(
                        f"sites[{i}].node_pools[{j}].selector",
                        f"server {server.hostname} is selected by pools {owner[server.hostname]} and {p.name}; "
                        "a server is bootstrapped into exactly one pool",
                    )
                else:
                    owner[server.hostname] = p.name
        yield from _host_keys(f"sites[{i}]", spec, s)
        for j, f in enumerate(s.fabrics):
            if not isinstance(f, InfinibandFabric):
                continue
            seen: dict[int, str] = {}
            for tenant, pkey in f.partition_keys.items():
                path = f"sites[{i}].fabrics[{j}].partition_keys.{tenant}"
                if tenant not in tenants:
                    yield Problem(path, f"{tenant} is not a tenant of the estate")
                if int(pkey, 16) in seen:
                    yield Problem(path, f"tenants {seen[int(pkey, 16)]} and {tenant} share partition key {pkey}")
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


def gpudirect_rdma_declared(spec: EstateSpec) -> Iterator[Problem]:
    """A host-driver bare-metal site with pools on an RDMA fabric says how GPUDirect RDMA works (the operator,
    which installs no driver there, cannot load nvidia-peermem); nowhere else is the setting meaningful."""
    for i, s in enumerate(spec.sites):
        path = f"sites[{i}].kubernetes.gpudirect_rdma"
        k = s.kubernetes
        rdma = {f.name for f in s.fabrics if isinstance(f, InfinibandFabric | RoceFabric)}
        fabric_pools = isinstance(s, BaremetalSite) and any(p.fabric in rdma for p in s.node_pools)
        if isinstance(s, BaremetalSite) and k.driver_managed_by == "host" and fabric_pools:
            if k.gpudirect_rdma is None:
                yield Problem(
                    path,
                    "a site whose hosts bring the NVIDIA driver and whose pools use an InfiniBand / RoCE fabric "
                    "must say how GPUDirect RDMA works: dma-buf (the host runs NVIDIA's open kernel module; the "
                    "preflight checks it) or off",
                )
        elif k.gpudirect_rdma is not None:
            yield Problem(
                path,
                "only for a bare-metal site with driver_managed_by: host and pools on an InfiniBand / RoCE fabric "
                "(with driver_managed_by: operator gpufleet loads nvidia-peermem on the fabric's nodes itself)",
            )
