"""AwsSiteStack: one EKS cluster with its VPC, GPU node pools, EFA fabrics and storage tiers."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.aws.autoscaler import ClusterAutoscaler, ClusterAutoscalerArgs
from components.aws.burst_budget import BurstBudget, BurstBudgetArgs
from components.aws.cluster import EksClusterArgs, EksClusterStack
from components.aws.fabric import EfaFabricArgs, EfaFabricStack, pool_placement_group
from components.aws.interconnect import SiteInterconnect, SiteInterconnectArgs
from components.aws.network import SiteNetwork, SiteNetworkArgs
from components.aws.node_pool import EfaAttachment, GpuNodePool, GpuNodePoolArgs
from components.aws.storage import SiteStorage, SiteStorageArgs
from components.aws.tenant_identity import TenantS3Identity, TenantS3IdentityArgs
from model.cni import k8s_provider_name
from model.conventions import AWS_SITE_TYPE
from model.kinds.aws import autoscaled_pools
from model.spec import AwsNodePool, AwsSite, BurstWindow, EfaFabric, EstateSpec, ScratchTier
from model.tags import Tags
from model.tenant_s3 import tenant_s3_access


@dataclass(frozen=True)
class AwsSiteArgs:
    spec: EstateSpec
    site: AwsSite
    tags: Tags
    window: BurstWindow | None
    now: dt.datetime


class AwsSiteStack(pulumi.ComponentResource):
    """Creates the site's AWS provider, network (VPC or adopted subnets) and its interconnect to on-prem, EKS
    cluster, EFA fabrics, one node group per GPU pool, storage tiers, the Kubernetes provider every in-cluster
    component uses (after the system nodes its releases schedule on), each tenant's S3 identity for the buckets it
    is granted, and where the site has autoscaled pools (min below max, or burst) the cluster autoscaler that sizes
    them; the burst site also gets the burst budget alert."""

    k8s_provider: k8s.Provider
    kubeconfig: pulumi.Output[str]  # secret; also what a MultiKueue manager needs to reach this cluster
    cluster_name: str
    autoscaler: ClusterAutoscaler | None  # sites with autoscaled pools only
    burst_budget: BurstBudget | None  # the burst site only

    def __init__(self, name: str, args: AwsSiteArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(AWS_SITE_TYPE, name, None, opts)
        self._n = name
        self._args = args
        self.aws_provider = aws.Provider(
            f"{name}-aws",
            region=args.site.region,
            default_tags=aws.ProviderDefaultTagsArgs(tags=args.tags.aws()),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.network = SiteNetwork(f"{name}-net", SiteNetworkArgs(args.site, args.tags), self._child())
        if args.site.interconnect is not None and not args.site.vpc.vpc_id:
            SiteInterconnect(
                f"{name}-interconnect",
                SiteInterconnectArgs(
                    args.site,
                    args.tags,
                    self.network.vpc_id,
                    self.network.private_subnet_ids,
                    self.network.private_route_tables,
                ),
                self._child(),
            )
        self.cluster = EksClusterStack(
            f"{name}-cluster",
            EksClusterArgs(
                spec=args.spec,
                site=args.site,
                tags=args.tags,
                vpc_id=self.network.vpc_id,
                subnet_ids=self.network.private_subnet_ids,
            ),
            self._child(),
        )
        self.cluster_name = self.cluster.name
        self.kubeconfig = self.cluster.kubeconfig
        # Charts installed through this provider schedule controllers (Kueue, operators) on the system nodes and
        # wait for them under Helm's timeout; the provider, and so every object sent through it, waits for them.
        system = [self.cluster.system_nodes] if self.cluster.system_nodes is not None else []
        self.k8s_provider = k8s.Provider(
            k8s_provider_name(args.site.name),
            kubeconfig=self.cluster.kubeconfig,
            enable_server_side_apply=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=system),
        )
        self.fabrics = self._fabrics()
        self.burst_budget = None
        if args.spec.burst is not None and args.spec.burst.cloud_site == args.site.name:
            self.burst_budget = BurstBudget(
                f"{name}-burst-budget",
                BurstBudgetArgs(self.cluster_name, args.spec.burst.budget_usd, args.spec.burst.alert_emails,
                                args.tags.aws()),
                self._child(),
            )  # fmt: skip
        self.pools = [self._pool(p) for p in args.site.node_pools]
        self.storage = SiteStorage(
            f"{name}-storage",
            SiteStorageArgs(
                spec=args.spec,
                site=args.site,
                tags=args.tags,
                cluster_name=self.cluster.name,
                vpc_id=self.network.vpc_id,
                private_subnet_ids=self.network.private_subnet_ids,
                cluster_security_group_id=self.cluster.cluster_security_group_id,
                fabric_subnets={f: s.subnet_id for f, s in self.fabrics.items()},
                node_role_arn=self.cluster.node_role_arn,
                k8s_provider=self.k8s_provider,
                depends_on=[self.cluster],
            ),
            self._child(),
        )
        self._tenant_s3_identities()
        self.autoscaler = None
        if autoscaled_pools(args.site):
            self.autoscaler = ClusterAutoscaler(
                f"{name}-autoscaler",
                ClusterAutoscalerArgs(args.spec, args.site, args.tags, self.cluster_name, self.k8s_provider,
                                      depends_on=[self.cluster, *(p.node_group for p in self.pools)]),
                self._child(),
            )  # fmt: skip
        self.register_outputs({"cluster_name": self.cluster_name})

    def _tenant_s3_identities(self) -> None:
        """Per tenant with grants on this site's buckets, its S3 role and Pod Identity association."""
        a = self._args
        keys: dict[str, pulumi.Input[str]] = {n: b.key.arn for n, b in self.storage.buckets.items()}
        for t in a.spec.tenants:
            access = tenant_s3_access(a.spec, a.site, t)
            if access and a.site.cluster.adopt_name:
                pulumi.log.warn(
                    f"tenant {t.name}: S3 on adopted cluster {a.site.cluster.adopt_name} reaches pods only through its "
                    "eks-pod-identity-agent add-on, which gpufleet installs on clusters it creates, not on this one",
                    self,
                )
            if access:
                TenantS3Identity(
                    f"{self._n}-tenant-{t.name}-s3",
                    TenantS3IdentityArgs(a.site, t, a.tags, self.cluster_name, access, keys, [self.cluster]),
                    self._child(),
                )

    def _child(self) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self, providers={"aws": self.aws_provider})

    def _fabrics(self) -> dict[str, EfaFabricStack]:
        site = self._args.site
        out = {}
        for f in site.fabrics:
            if not isinstance(f, EfaFabric):
                continue
            out[f.name] = EfaFabricStack(
                f"{self._n}-{f.name}",
                EfaFabricArgs(
                    site=site,
                    fabric=f,
                    tags=self._args.tags,
                    vpc_id=self.network.vpc_id,
                    private_route_table_id=self.network.private_route_tables.get(
                        # A Local Zone fabric has no site zone of its own: it egresses through the first zone's NAT.
                        f.availability_zone,
                        self.network.private_route_tables.get(site.availability_zones[0]),
                    ),
                ),
                self._child(),
            )
        return out

    def _pool(self, pool: AwsNodePool) -> GpuNodePool:
        a, site = self._args, self._args.site
        efa = None
        fabric = next((f for f in site.fabrics if isinstance(f, EfaFabric) and f.name == pool.fabric), None)
        if fabric is not None:
            stack = self.fabrics[fabric.name]
            efa = EfaAttachment(
                subnet_id=stack.subnet_id,
                security_group_id=stack.security_group_id,
                placement_group=pool_placement_group(pool, fabric, stack.placement_group_name),
            )
        subnets: list[pulumi.Input[str]] = list(self.network.private_subnet_ids)
        if pool.availability_zone and pool.availability_zone in self.network.private_subnets_by_az:
            subnets = [self.network.private_subnets_by_az[pool.availability_zone]]
        scratch = next((t for t in site.storage if isinstance(t, ScratchTier)), None)
        # A renamed pool's component takes its old name as an alias; the engine aliases each child named after it
        # (`<component>-ng`, `-lt`, ...) the same way, so the node group is not replaced (docs/stack-file.md).
        renamed = [pulumi.Alias(name=f"{self._n}-{pool.renamed_from}")] if pool.renamed_from else None
        topic = self.burst_budget.topic if self.burst_budget is not None else None
        return GpuNodePool(
            f"{self._n}-{pool.name}",
            GpuNodePoolArgs(
                spec=a.spec,
                site=site,
                pool=pool,
                tags=a.tags,
                window=a.window,
                now=a.now,
                cluster_name=self.cluster.name,
                node_role_arn=self.cluster.node_role_arn,
                key_arn=self.cluster.key_arn,
                cluster_security_group_id=self.cluster.cluster_security_group_id,
                subnet_ids=subnets,
                efa=efa,
                scratch_mount_path=scratch.mount_path if scratch else None,
                depends_on=[self.cluster],
                alert_topic_arn=topic.arn if topic is not None else None,
                cluster_version=self.cluster.version,
            ),
            pulumi.ResourceOptions.merge(self._child(), pulumi.ResourceOptions(aliases=renamed)),
        )
