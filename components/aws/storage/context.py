"""What every storage tier module works with: the site's storage args and the component that parents the tiers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.aws import iam
from model.queues import tenants_on_site
from model.spec import AwsSite, EstateSpec, Tenant
from model.tags import Tags


@dataclass(frozen=True)
class SiteStorageArgs:
    spec: EstateSpec
    site: AwsSite
    tags: Tags
    cluster_name: str
    vpc_id: pulumi.Input[str]
    private_subnet_ids: list[pulumi.Output[str]]
    cluster_security_group_id: pulumi.Input[str]
    fabric_subnets: dict[str, pulumi.Input[str]]  # EFA fabric name -> subnet id
    node_role_arn: pulumi.Input[str]  # an ARN of this account (bucket and key policies need the account id)
    k8s_provider: k8s.Provider
    depends_on: list[pulumi.Resource]  # the cluster (and its system nodes) the CSI drivers and jobs run on


class StorageContext:
    """The storage component (parent of every tier resource), its name prefix and args, and option builders."""

    def __init__(self, parent: pulumi.ComponentResource, name: str, args: SiteStorageArgs) -> None:
        self.parent = parent
        self.n = name
        self.a = args
        self.region = args.site.region

    def opts(self, **kw: Any) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self.parent, **kw)

    def stateful(self, **kw: Any) -> pulumi.ResourceOptions:
        """Options for data-holding resources: no `up`, refactor or `destroy` may delete them."""
        return pulumi.ResourceOptions(parent=self.parent, protect=True, retain_on_delete=True, **kw)

    def k8s(self, **kw: Any) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self.parent, provider=self.a.k8s_provider, **kw)

    def account(self) -> pulumi.Output[str]:
        """The site's account id (from an ARN of the account; a placeholder offline, see iam.account_of)."""
        return pulumi.Output.from_input(self.a.node_role_arn).apply(iam.account_of)

    def tier_key(self, tier: str, what: str) -> aws.kms.Key:
        return aws.kms.Key(
            f"{self.n}-{tier}-key",
            description=f"{self.a.cluster_name}: {what} (storage tier {tier})",
            enable_key_rotation=True,
            deletion_window_in_days=30,
            tags=self.a.tags.aws(tier=tier),
            opts=self.stateful(),
        )

    def tenants_mounting(self, tier: str) -> list[Tenant]:
        """Tenants with a namespace on this site that may mount shared file-system tier `tier`."""
        return [t for t in tenants_on_site(self.a.spec, self.a.site) if t.mounts(tier)]
