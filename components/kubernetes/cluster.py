"""ClusterStack: everything gpufleet installs into one site's cluster (GPU stack, Kueue, tenants)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pulumi

from components.kubernetes.gpu_stack import GpuStack, GpuStackArgs
from components.spec import AwsSite, BaremetalSite, BurstWindow, EstateSpec
from components.tags import Tags


@dataclass(frozen=True)
class ClusterStackArgs:
    spec: EstateSpec
    site: AwsSite | BaremetalSite
    tags: Tags
    window: BurstWindow | None
    now: dt.datetime


class ClusterStack(pulumi.ComponentResource):
    """The Kubernetes side of a site; uses the `kubernetes` provider passed in through opts.providers."""

    def __init__(self, name: str, args: ClusterStackArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:kubernetes:ClusterStack", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # -- GPU software stack (GPU Operator / device plugin, EFA plugin, Network Operator) -------------
        self.gpu_stack = GpuStack(f"{name}-gpu", GpuStackArgs(args.spec, args.site, args.tags), child)
        # -- scheduling and tenants (Kueue, priorities, tenant bundles) -----------------------------------
        self.register_outputs({})
