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
