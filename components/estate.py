"""Estate: composes each site (its cluster, pools, fabrics, storage), each site's Kubernetes stack and
tenants, and, in a hybrid estate, the MultiKueue wiring between sites."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import assert_never

import pulumi

from components.aws.site import AwsSiteArgs, AwsSiteStack
from components.baremetal.site import BaremetalSiteArgs, BaremetalSiteStack
from components.hybrid.multikueue import MultiKueueArgs, MultiKueueWiring, WorkerSite
from components.kubernetes.cluster import ClusterStack, ClusterStackArgs
from model.spec import AwsSite, BaremetalSite, BurstWindow, EstateSpec
from model.tags import Tags

SecretLookup = Callable[[str], pulumi.Output[str]]


@dataclass(frozen=True)
class EstateArgs:
    spec: EstateSpec
    window: BurstWindow | None  # the burst window in stack config, open or not
    now: dt.datetime  # the moment windows are judged against
    secret: SecretLookup  # config key -> secret Output (SSH keys, kubeconfigs, join tokens)


class Estate(pulumi.ComponentResource):
    """The whole estate: one child component per site, each with its Kubernetes stack."""

    def __init__(self, name: str, args: EstateArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:index:Estate", name, None, opts)
        spec = args.spec
        tags = Tags.from_spec(spec)
        self.sites: dict[str, AwsSiteStack | BaremetalSiteStack] = {}
        self.clusters: dict[str, ClusterStack] = {}
        autoscaling_role: pulumi.Resource | None = None  # one per account: the first AWS site makes or reads it
        for site in spec.sites:
            site_opts = pulumi.ResourceOptions(parent=self)
            built: AwsSiteStack | BaremetalSiteStack
            match site:
                case AwsSite():
                    site_args = AwsSiteArgs(spec, site, tags, args.window, args.now, autoscaling_role)
                    built = AwsSiteStack(site.name, site_args, site_opts)
                    autoscaling_role = autoscaling_role or built.cluster.autoscaling_role
                case BaremetalSite():
                    built = BaremetalSiteStack(site.name, BaremetalSiteArgs(spec, site, tags, args.secret), site_opts)
                case _:
                    assert_never(site)
            self.sites[site.name] = built
            crd = built.autoscaler.crd if isinstance(built, AwsSiteStack) and built.autoscaler else None
            self.clusters[site.name] = ClusterStack(
                f"{site.name}-k8s",
                ClusterStackArgs(spec, site, tags, args.window, args.now, crd),
                pulumi.ResourceOptions(parent=built, providers={"kubernetes": built.k8s_provider}),
            )
            if isinstance(built, BaremetalSiteStack):
                built.add_fabrics(self.clusters[site.name])  # after the CRDs and namespaces its objects need
        if spec.burst is not None:
            self._hybrid(spec, tags, args)
        self.register_outputs({})

    def _hybrid(self, spec: EstateSpec, tags: Tags, args: EstateArgs) -> None:
        """The MultiKueue manager and its workers (components.hybrid)."""
        assert spec.burst is not None
        sites: dict[str, WorkerSite] = {}
        for site in spec.sites:
            built = self.sites[site.name]
            kubeconfig: pulumi.Input[str]
            if isinstance(built, AwsSiteStack):
                kubeconfig = built.kubeconfig
            else:
                assert isinstance(site, BaremetalSite)
                kubeconfig = args.secret(site.kubeconfig_config)
            sites[site.name] = WorkerSite(built.k8s_provider, self.clusters[site.name], kubeconfig)
        MultiKueueWiring(
            f"{spec.metadata.name}-multikueue",
            MultiKueueArgs(spec, tags, sites, args.secret(spec.burst.manager.kubeconfig_config), args.window, args.now),
            pulumi.ResourceOptions(parent=self),
        )
