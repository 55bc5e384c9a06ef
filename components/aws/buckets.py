"""The object tier of an AWS site: S3 buckets per purpose with public access blocked, ACLs off, SSE-KMS with a
bucket key, versioning, a TLS-only policy, lifecycle rules and access logging into a log bucket (SSE-S3, the only
encryption S3 server access logging delivers to). Built as children of `SiteStorage`; buckets are protected and
retained on delete.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pulumi
import pulumi_aws as aws

from components.aws import iam
from components.model.spec import AwsSite, S3Tier
from components.model.tags import Tags

if TYPE_CHECKING:
    from components.aws.storage import SiteStorageArgs


def _opts(parent: pulumi.Resource) -> pulumi.ResourceOptions:
    return pulumi.ResourceOptions(parent=parent)


def _stateful(parent: pulumi.Resource) -> pulumi.ResourceOptions:
    """Options for data-holding resources: no `up`, refactor or `destroy` may delete them."""
    return pulumi.ResourceOptions(parent=parent, protect=True, retain_on_delete=True)


def bucket_name(tags: Tags, site: AwsSite, tier: S3Tier, purpose: str, single_tier: bool) -> str:
    """Globally unique bucket names: `<estate>-<env>-<purpose>` when the estate has one S3 tier."""
    base = tags.base
    name = f"{base['cluster']}-{base['env']}-{purpose}"
    if not single_tier:
        name = f"{base['cluster']}-{base['env']}-{site.name}-{tier.name}-{purpose}"
    return name[:63]


def s3_tier(
    parent: pulumi.Resource, prefix: str, a: SiteStorageArgs, tier: S3Tier, single: bool, key_arn: pulumi.Input[str]
) -> None:
    """The tier's buckets (one per purpose) and their access-log bucket, children of `parent` named `prefix-...`."""
    logs = _log_bucket(parent, prefix, a, tier, single)
    for purpose in tier.buckets:
        name = bucket_name(a.tags, a.site, tier, purpose, single)
        r = f"{prefix}-{tier.name}-{purpose}"
        tags = a.tags.aws(Name=name, tier=tier.name, purpose=purpose)
        bucket = aws.s3.Bucket(r, bucket=name, tags=tags, opts=_stateful(parent))
        _bucket_baseline(parent, r, bucket, key_arn=key_arn)
        aws.s3.BucketLifecycleConfiguration(
            r,
            bucket=bucket.id,
            rules=[
                aws.s3.BucketLifecycleConfigurationRuleArgs(
                    id="expire-noncurrent-versions",
                    status="Enabled",
                    filter=aws.s3.BucketLifecycleConfigurationRuleFilterArgs(prefix=""),
                    noncurrent_version_expiration=aws.s3.BucketLifecycleConfigurationRuleNoncurrentVersionExpirationArgs(
                        noncurrent_days=tier.noncurrent_days
                    ),
                ),
                aws.s3.BucketLifecycleConfigurationRuleArgs(
                    id="abort-incomplete-multipart-uploads",
                    status="Enabled",
                    filter=aws.s3.BucketLifecycleConfigurationRuleFilterArgs(prefix=""),
                    abort_incomplete_multipart_upload=aws.s3.BucketLifecycleConfigurationRuleAbortIncompleteMultipartUploadArgs(
                        days_after_initiation=7
                    ),
                ),
            ],
            opts=_opts(parent),
        )
        aws.s3.BucketLogging(r, bucket=bucket.id, target_bucket=logs.id, target_prefix=f"{name}/", opts=_opts(parent))
        policy = iam.tls_only_bucket_policy(f"arn:{iam.partition(a.site.region)}:s3:::{name}")
        aws.s3.BucketPolicy(r, bucket=bucket.id, policy=policy, opts=_opts(parent))


def _log_bucket(parent: pulumi.Resource, prefix: str, a: SiteStorageArgs, tier: S3Tier, single: bool) -> aws.s3.Bucket:
    name = bucket_name(a.tags, a.site, tier, "access-logs", single)
    r = f"{prefix}-{tier.name}-access-logs"
    logs = aws.s3.Bucket(
        r, bucket=name, tags=a.tags.aws(Name=name, tier=tier.name, purpose="access-logs"), opts=_stateful(parent)
    )
    # S3 server access logs can only be delivered to a bucket with SSE-S3 default encryption.
    _bucket_baseline(parent, r, logs, key_arn=None)
    aws.s3.BucketLifecycleConfiguration(
        r,
        bucket=logs.id,
        rules=[
            aws.s3.BucketLifecycleConfigurationRuleArgs(
                id="expire-access-logs",
                status="Enabled",
                filter=aws.s3.BucketLifecycleConfigurationRuleFilterArgs(prefix=""),
                expiration=aws.s3.BucketLifecycleConfigurationRuleExpirationArgs(days=365),
                noncurrent_version_expiration=aws.s3.BucketLifecycleConfigurationRuleNoncurrentVersionExpirationArgs(
                    noncurrent_days=tier.noncurrent_days
                ),
                abort_incomplete_multipart_upload=aws.s3.BucketLifecycleConfigurationRuleAbortIncompleteMultipartUploadArgs(
                    days_after_initiation=7
                ),
            )
        ],
        opts=_opts(parent),
    )
    arn = f"arn:{iam.partition(a.site.region)}:s3:::"
    sources = [arn + bucket_name(a.tags, a.site, tier, p, single) for p in tier.buckets]
    aws.s3.BucketPolicy(
        r,
        bucket=logs.id,
        policy=pulumi.Output.from_input(a.node_role_arn).apply(
            lambda role: iam.log_delivery_bucket_policy(arn + name, sources, iam.account_of(role))
        ),
        opts=_opts(parent),
    )
    return logs


def _bucket_baseline(
    parent: pulumi.Resource, r: str, bucket: aws.s3.Bucket, *, key_arn: pulumi.Input[str] | None
) -> None:
    aws.s3.BucketPublicAccessBlock(
        r,
        bucket=bucket.id,
        block_public_acls=True,
        block_public_policy=True,
        ignore_public_acls=True,
        restrict_public_buckets=True,
        opts=_opts(parent),
    )
    aws.s3.BucketOwnershipControls(
        r,
        bucket=bucket.id,
        rule=aws.s3.BucketOwnershipControlsRuleArgs(object_ownership="BucketOwnerEnforced"),  # ACLs off
        opts=_opts(parent),
    )
    default = (
        aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(
            sse_algorithm="aws:kms", kms_master_key_id=key_arn
        )
        if key_arn is not None
        else aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(
            sse_algorithm="AES256"
        )
    )
    aws.s3.BucketServerSideEncryptionConfiguration(
        r,
        bucket=bucket.id,
        rules=[
            aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                apply_server_side_encryption_by_default=default, bucket_key_enabled=key_arn is not None
            )
        ],
        opts=_opts(parent),
    )
    aws.s3.BucketVersioning(
        r,
        bucket=bucket.id,
        versioning_configuration=aws.s3.BucketVersioningVersioningConfigurationArgs(status="Enabled"),
        opts=_opts(parent),
    )
