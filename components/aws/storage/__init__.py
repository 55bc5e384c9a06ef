"""SiteStorage: the storage tiers of an AWS site, each with its CSI driver and StorageClass. One module per tier:

- scratch: instance-store NVMe, striped RAID0 by nodeadm from the GPU launch templates (launch.py); no cloud
  resource. Pods reach it as node-local storage.
- shared-hot (`fsx`): FSx for Lustre with a data repository on S3 and a directory per tenant.
- shared-warm (`efs`): EFS with an access point per tenant and one per dynamic claim.
- object (`s3`): S3 buckets per purpose: SSE-KMS, TLS only, versioned, logged.
- `csi`, `ebs`: the CSI drivers, StorageClasses (Prometheus's gp3 one too) and tenants' pre-bound volumes.

Why:
- A tenant gets volumes only on the shared file systems it may mount (`tenants[].file_systems`), and only on
  sites where it has a namespace. By default a trusted tenant mounts all, an untrusted one none.
- File systems, buckets and their keys are protected and retained on delete.
"""

from __future__ import annotations

import pulumi

from components.aws.storage.context import SiteStorageArgs, StorageContext
from components.aws.storage.csi import efs_driver, fsx_driver, tenant_uid
from components.aws.storage.ebs import metrics_volume_class
from components.aws.storage.efs import efs_tier
from components.aws.storage.fsx import DataRepositoryLink, fsx_tier, throughput_warning, training_need_gbps
from components.aws.storage.s3 import EstateBucket, bucket_name, grant_fsx_access, s3_tier
from model import conventions, kinds
from model.spec import EfsTier, FsxLustreTier, S3Tier

__all__ = [
    "SiteStorage",
    "SiteStorageArgs",
    "bucket_name",
    "tenant_uid",
    "throughput_warning",
    "training_need_gbps",
]


class SiteStorage(pulumi.ComponentResource):
    """Creates the site's S3, FSx for Lustre and EFS tiers with their keys, security groups, CSI drivers,
    StorageClasses and tenant volumes (see the module docstring); warns when a shared-hot tier is too slow for the
    training pools. Buckets come first: a data repository links one, and its key then admits FSx."""

    def __init__(self, name: str, args: SiteStorageArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:Storage", name, None, opts)
        ctx = StorageContext(self, name, args)
        site = args.site
        single_s3 = sum(isinstance(t, S3Tier) for s in args.spec.sites for t in s.storage) == 1
        buckets: dict[str, EstateBucket] = {}
        for b in (t for t in site.storage if isinstance(t, S3Tier)):
            buckets |= s3_tier(ctx, b, single_s3)
        fsx = [t for t in site.storage if isinstance(t, FsxLustreTier)]
        links: list[DataRepositoryLink] = []
        if fsx:
            driver = fsx_driver(ctx)
            links = [link for f in fsx if (link := fsx_tier(ctx, f, driver, buckets)) is not None]
        self._grant_fsx_access(ctx, links)
        self.buckets = buckets  # tenant S3 identities grant on these (components.aws.tenant_identity)
        efs = [t for t in site.storage if isinstance(t, EfsTier)]
        if efs:
            driver = efs_driver(ctx)
            for e in efs:
                efs_tier(ctx, e, driver)
        # the class Prometheus's volume claims, which its release waits for (components.kubernetes.metrics_stack)
        self.metrics_class: pulumi.Resource | None = None
        if site.kubernetes.monitoring.installed and kinds.of(site).metrics_volume_class == conventions.EBS_GP3_CLASS:
            self.metrics_class = metrics_volume_class(ctx)
        self.register_outputs({})

    @staticmethod
    def _grant_fsx_access(ctx: StorageContext, links: list[DataRepositoryLink]) -> None:
        """One key policy per S3 tier whose buckets FSx data repositories link."""
        by_tier: dict[str, list[DataRepositoryLink]] = {}
        for link in links:
            by_tier.setdefault(link.bucket.tier, []).append(link)
        for tier, tier_links in by_tier.items():
            grant_fsx_access(
                ctx,
                tier,
                tier_links[0].bucket.key,
                [(link.file_system_id, link.bucket.name) for link in tier_links],
                depends_on=[link.association for link in tier_links],
            )
