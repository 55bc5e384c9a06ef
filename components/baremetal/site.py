"""BaremetalSiteStack: an existing cluster reached by kubeconfig, and its inventory servers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.baremetal.bootstrap import ServerBootstrap, ServerBootstrapArgs, join_stdin, render_server
from components.baremetal.fabric import BaremetalFabric, FabricArgs
from components.baremetal.node_patch import node_patch
from components.baremetal.storage import BaremetalStorage, StorageArgs
from components.kubernetes.cluster import ClusterStack
from model.cni import k8s_provider_name
from model.conventions import BAREMETAL_SITE_TYPE
from model.spec import BaremetalSite, EstateSpec, InfinibandFabric, RoceFabric
from model.tags import Tags


def insecure_ssh_warning(site: BaremetalSite) -> str:
    return (
        f"site {site.name}: ssh.insecure_skip_host_key_check is set, so SSH connections to servers without a "
        "host_key in the inventory are not verified; whoever can intercept them can impersonate a server and "
        "read the join token sent to it"
    )


@dataclass(frozen=True)
class BaremetalSiteArgs:
    spec: EstateSpec
    site: BaremetalSite
    tags: Tags
    secret: Callable[[str], pulumi.Output[str]]


class BaremetalSiteStack(pulumi.ComponentResource):
    """A bare-metal site: the cluster's Kubernetes provider; per pool server a ServerBootstrap (preflight, scratch
    NVMe, join, clean leave) and a NodePatch (pool, topology and cost labels; pool taints); the storage tiers'
    drivers and classes; and, once the estate has built the site's cluster stack, per fabric its Network Operator
    objects (add_fabrics).

    Servers that no pool selects are inventory only: nothing is run on them.
    """

    k8s_provider: k8s.Provider
    servers: dict[str, ServerBootstrap]
    node_patches: dict[str, k8s.core.v1.NodePatch]

    def __init__(self, name: str, args: BaremetalSiteArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(BAREMETAL_SITE_TYPE, name, None, opts)
        self._prefix = name
        self._args = args
        self.k8s_provider = k8s.Provider(
            k8s_provider_name(name),
            kubeconfig=args.secret(args.site.kubeconfig_config),
            enable_server_side_apply=True,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self._k8s = pulumi.ResourceOptions(parent=self, providers={"kubernetes": self.k8s_provider})
        self.servers = {}
        self.node_patches = {}
        if args.site.ssh.insecure_skip_host_key_check:
            pulumi.log.warn(insecure_ssh_warning(args.site), resource=self)
        self._bootstrap_servers()
        self._storage()
        self.register_outputs({"nodes": sorted(self.servers)})

    def _bootstrap_servers(self) -> None:
        spec, site = self._args.spec, self._args.site
        stdin = None if site.join.mints_token else join_stdin(site, self._args.secret)
        for pool in site.node_pools:
            for server in spec.pool_servers(site, pool):
                bootstrap = ServerBootstrap(
                    f"{self._prefix}-{server.hostname}",
                    ServerBootstrapArgs(
                        spec=spec,
                        site=site,
                        pool=pool,
                        server=server,
                        scripts=render_server(spec, site, pool, server),
                        secret=self._args.secret,
                        join_stdin=stdin,
                    ),
                    pulumi.ResourceOptions(parent=self),
                )
                self.servers[server.hostname] = bootstrap
                self.node_patches[server.hostname] = node_patch(
                    f"{self._prefix}-{server.hostname}-node",
                    bootstrap.node_name,
                    spec,
                    self._args.tags,
                    pool,
                    server,
                    pulumi.ResourceOptions.merge(self._k8s, pulumi.ResourceOptions(depends_on=[bootstrap.ready])),
                )

    def add_fabrics(self, cluster: ClusterStack) -> None:
        """Per fabric its Network Operator objects, once the site's cluster stack exists: their CRDs come from its
        Network Operator (chart and NicClusterPolicy) and their namespaces from its tenant bundles."""
        operator = cluster.gpu_stack.network_operator
        fabrics = [f for f in self._args.site.fabrics if isinstance(f, InfinibandFabric | RoceFabric)]
        if not fabrics:
            return
        assert operator is not None  # the GPU stack installs it whenever the site has an InfiniBand / RoCE fabric
        namespaces = {t: bundle.namespace for t, bundle in cluster.tenants.items()}
        for fabric in fabrics:
            args = FabricArgs(
                self._args.spec,
                self._args.site,
                fabric,
                operator.release,
                operator.policy,
                self._args.secret,
                namespaces,
            )
            BaremetalFabric(f"{self._prefix}-{fabric.name}", args, self._k8s)

    def _storage(self) -> None:
        if self._args.site.storage:
            BaremetalStorage(
                f"{self._prefix}-storage",
                StorageArgs(self._args.site, self._args.tags, self._args.secret),
                self._k8s,
            )
