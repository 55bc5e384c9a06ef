"""ClusterStack: everything gpufleet installs into one site's cluster (metrics, GPU stack, Kueue, tenants)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pulumi

from components.kubernetes.admission import TenantTolerations, TenantVolumes
from components.kubernetes.gpu_stack import GpuStack, GpuStackArgs
from components.kubernetes.job_operators import JobOperators
from components.kubernetes.kueue import Kueue, KueueArgs
from components.kubernetes.metrics_stack import MetricsStack, MetricsStackArgs
from components.kubernetes.priorities import Priorities, PrioritiesArgs
from components.kubernetes.tenancy import TenantBundle, TenantBundleArgs
from model.frameworks import enabled, operators
from model.nodes import shared_pools
from model.queues import tenants_on_site
from model.spec import BurstWindow, EstateSpec, Site
from model.tags import Tags


@dataclass(frozen=True)
class ClusterStackArgs:
    spec: EstateSpec
    site: Site
    tags: Tags
    window: BurstWindow | None
    now: dt.datetime
    provisioning_crd: pulumi.Resource | None = None  # the site's ProvisioningRequest CRD (burst sites)
    metrics_class: pulumi.Resource | None = None  # the StorageClass Prometheus's volume claims, where gpufleet makes it


class ClusterStack(pulumi.ComponentResource):
    """The Kubernetes side of a site; uses the `kubernetes` provider passed in through opts.providers."""

    def __init__(self, name: str, args: ClusterStackArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:kubernetes:ClusterStack", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        # -- metrics first: its CRDs come before every ServiceMonitor ------------------------------------------
        self.metrics: MetricsStack | None = None
        if args.site.kubernetes.monitoring.installed:
            self.metrics = MetricsStack(
                f"{name}-metrics", MetricsStackArgs(args.site, args.tags, args.metrics_class), child
            )
        after: list[pulumi.Resource] = [self.metrics.release] if self.metrics else []
        # -- GPU software stack (GPU Operator / device plugin, EFA plugin, Network Operator) -------------
        self.gpu_stack = GpuStack(f"{name}-gpu", GpuStackArgs(args.spec, args.site, args.tags, after), child)
        # -- scheduling and tenants (Kueue, priorities, tenant bundles) -----------------------------------
        self.tenants = {
            t.name: TenantBundle(f"{name}-tenant-{t.name}", TenantBundleArgs(args.spec, args.site, t, args.tags), child)
            for t in tenants_on_site(args.spec, args.site)
        }
        if self.tenants:
            TenantTolerations(f"{name}-tenant-tolerations", args.tags, child, shared_pools(args.site.node_pools))
            TenantVolumes(f"{name}-tenant-volumes", args.tags, child)
        namespaces = {t: b.namespace for t, b in self.tenants.items()}
        crds: list[pulumi.Resource] = [args.provisioning_crd] if args.provisioning_crd is not None else []
        frameworks = args.site.kubernetes.job_frameworks
        if operators(enabled(frameworks)):  # job kinds beyond Kubernetes' own: their operators first
            crds.append(JobOperators(f"{name}-job-operators", frameworks, opts=child))
        kueue_args = KueueArgs(
            args.spec, args.site, args.tags, namespaces, crds, args.provisioning_crd is not None,
            metrics=self.metrics.release if self.metrics else None,
        )  # fmt: skip
        self.kueue = Kueue(f"{name}-kueue", kueue_args, child)
        self.priorities = Priorities(f"{name}-priorities", PrioritiesArgs(args.tags, self.kueue.release), child)
        self.register_outputs({})
