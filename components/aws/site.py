"""AwsSiteStack: one EKS cluster with its VPC, GPU node pools, EFA fabrics and storage tiers."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.spec import AwsSite, BurstWindow, EstateSpec
from components.tags import Tags


@dataclass(frozen=True)
class AwsSiteArgs:
    spec: EstateSpec
    site: AwsSite
    tags: Tags
    window: BurstWindow | None
    now: dt.datetime


class AwsSiteStack(pulumi.ComponentResource):
    """Creates the site's AWS provider and (to come) cluster, pools, fabrics and storage."""

    k8s_provider: k8s.Provider

    def __init__(self, name: str, args: AwsSiteArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:Site", name, None, opts)
        self.aws_provider = aws.Provider(
            f"{name}-aws",
            region=args.site.region,
            default_tags=aws.ProviderDefaultTagsArgs(tags=args.tags.aws()),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.k8s_provider = k8s.Provider(
            f"{name}-k8s", enable_server_side_apply=True, opts=pulumi.ResourceOptions(parent=self)
        )
        self.register_outputs({})
