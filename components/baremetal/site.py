"""BaremetalSiteStack: an existing cluster reached by kubeconfig, and its inventory servers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.spec import BaremetalSite, EstateSpec
from components.tags import Tags


@dataclass(frozen=True)
class BaremetalSiteArgs:
    spec: EstateSpec
    site: BaremetalSite
    tags: Tags
    secret: Callable[[str], pulumi.Output[str]]


class BaremetalSiteStack(pulumi.ComponentResource):
    """Creates the site's Kubernetes provider and (to come) bootstrap, node patches, fabric and storage."""

    k8s_provider: k8s.Provider

    def __init__(self, name: str, args: BaremetalSiteArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:baremetal:Site", name, None, opts)
        self.k8s_provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=args.secret(args.site.kubeconfig_config),
            enable_server_side_apply=True,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({})
