"""Shared helpers for the bare-metal tests: the onprem example spec and a sample server's rendered scripts."""

from __future__ import annotations

from typing import Any

from components.baremetal.bootstrap import ServerScripts, render_server
from model.load import parse_estate
from model.spec import BaremetalNodePool, BaremetalSite, EstateSpec, Server
from tests.conftest import example_estate

SAMPLE = "gpu-r1-01"  # the onprem example's first training server


def onprem_spec(mutate: Any = None) -> EstateSpec:
    estate = example_estate("onprem")
    if mutate is not None:
        mutate(estate)
    return parse_estate(estate, "stacks/Pulumi.onprem.yaml")


def host_driver(estate: dict[str, Any]) -> None:
    """The onprem example with the NVIDIA driver on the host image, not the GPU Operator's."""
    estate["sites"][0]["kubernetes"]["driver_managed_by"] = "host"
    estate["sites"][0]["kubernetes"]["gpudirect_rdma"] = "off"  # GPUDirect RDMA not used (its own tests set dma-buf)


def nvl72(estate: dict[str, Any]) -> None:
    """The onprem example's first pool as GB200 NVL72 trays on a host driver: 4 GPUs a server, 18 a domain."""
    host_driver(estate)
    site = estate["sites"][0]
    site["node_pools"][0]["nvlink_domain_nodes"] = 18
    for server in site["inventory"]:
        if server["labels"] == site["node_pools"][0]["selector"]:
            server.update(gpu_model="GB200-185GB", gpu_count=4, nvlink_domain="rack-a1-nvl")
    for tenant in estate["tenants"]:  # 4 GPUs a tray, not 8: the quotas halve
        if "train" in tenant["gpu_quota"]:
            tenant["gpu_quota"]["train"] //= 2


def server_of(spec: EstateSpec, hostname: str) -> tuple[BaremetalSite, BaremetalNodePool, Server]:
    for site in spec.sites:
        if isinstance(site, BaremetalSite):
            for pool in site.node_pools:
                for server in spec.pool_servers(site, pool):
                    if server.hostname == hostname:
                        return site, pool, server
    raise KeyError(hostname)


def scripts_for(spec: EstateSpec, hostname: str = SAMPLE) -> ServerScripts:
    site, pool, server = server_of(spec, hostname)
    return render_server(spec, site, pool, server)
