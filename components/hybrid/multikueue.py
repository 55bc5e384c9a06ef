"""MultiKueueWiring: the on-prem cluster hosts the Kueue manager, the cloud site is a MultiKueue worker."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.kubernetes.cluster import ClusterStack
from components.spec import AwsSite, BaremetalSite, EstateSpec


@dataclass(frozen=True)
class MultiKueueArgs:
    spec: EstateSpec
    manager: AwsSite | BaremetalSite
    worker: AwsSite | BaremetalSite
    manager_provider: k8s.Provider
    worker_provider: k8s.Provider
    manager_stack: ClusterStack
    worker_stack: ClusterStack


class MultiKueueWiring(pulumi.ComponentResource):
    def __init__(self, name: str, args: MultiKueueArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:hybrid:MultiKueue", name, None, opts)
        self.register_outputs({})
