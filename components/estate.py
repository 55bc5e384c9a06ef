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
        kubeconfigs: dict[str, pulumi.Input[str]] = {}  # each site's, for the MultiKueue manager
        for site in spec.sites:
            site_opts = pulumi.ResourceOptions(parent=self)
            # The one dispatch on the kind here: which component folder builds the site. Everything else the
            # estate needs of a site it takes from what that component built.
            built: AwsSiteStack | BaremetalSiteStack
            crd: pulumi.Resource | None = None  # the autoscaler's CRD the cluster's objects wait for
            metrics_class: pulumi.Resource | None = None  # the StorageClass Prometheus's volume claims
            after_cluster: Callable[[ClusterStack], None] | None = None
            match site:
                case AwsSite():
                    site_args = AwsSiteArgs(spec, site, tags, args.window, args.now)
                    aws = AwsSiteStack(site.name, site_args, site_opts)
                    built, crd = aws, aws.autoscaler.crd if aws.autoscaler else None
                    metrics_class = aws.storage.metrics_class
                    kubeconfigs[site.name] = aws.kubeconfig
                case BaremetalSite():
                    bm = BaremetalSiteStack(site.name, BaremetalSiteArgs(spec, site, tags, args.secret), site_opts)
                    built, after_cluster = bm, bm.add_fabrics  # after the CRDs and namespaces its objects need
                    kubeconfigs[site.name] = args.secret(site.kubeconfig_config)
                case _:
                    assert_never(site)
            self.sites[site.name] = built
            self.clusters[site.name] = ClusterStack(
                f"{site.name}-k8s",
                ClusterStackArgs(spec, site, tags, args.window, args.now, crd, metrics_class),
                pulumi.ResourceOptions(parent=built, providers={"kubernetes": built.k8s_provider}),
            )
            if after_cluster is not None:
                after_cluster(self.clusters[site.name])
        if spec.burst is not None:
            self._hybrid(spec, tags, args, kubeconfigs)
        self.register_outputs({})

    def _hybrid(
        self, spec: EstateSpec, tags: Tags, args: EstateArgs, kubeconfigs: dict[str, pulumi.Input[str]]
    ) -> None:
        """The MultiKueue manager and its workers (components.hybrid)."""
        assert spec.burst is not None
        sites = {
            s.name: WorkerSite(self.sites[s.name].k8s_provider, self.clusters[s.name], kubeconfigs[s.name])
            for s in spec.sites
        }
        MultiKueueWiring(
            f"{spec.metadata.name}-multikueue",
            MultiKueueArgs(spec, tags, sites, args.secret(spec.burst.manager.kubeconfig_config), args.window, args.now),
            pulumi.ResourceOptions(parent=self),
        )
