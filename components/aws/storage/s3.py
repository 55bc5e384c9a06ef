"""The object tier: S3 buckets per purpose with public access blocked, SSE-KMS with a bucket key under the tier's
customer-managed key, versioning, a TLS-only policy, lifecycle rules and access logging into a log bucket.

When an FSx for Lustre tier links one of these buckets as a data repository, the tier key's policy also lets
that file system's FSx S3 service-linked role use the key through S3 (`grant_fsx_access`): without it FSx can
list the bucket but not read or write its SSE-KMS objects.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.aws import iam
from components.aws.storage.context import StorageContext
from model import tenant_s3
from model.spec import AwsSite, S3Tier
from model.tags import Tags


def bucket_name(tags: Tags, site: AwsSite, tier: S3Tier, purpose: str, single_tier: bool) -> str:
    """The bucket's name (model.tenant_s3.bucket_name, which tenants' grants name too)."""
    base = tags.base
    return tenant_s3.bucket_name(base["cluster"], base["env"], site.name, tier.name, purpose, single_tier=single_tier)


@dataclass(frozen=True)
class EstateBucket:
    """A bucket this stack creates, with what an S3 client of it (an FSx data repository) must wait for."""

    name: str
    tier: str
    key: aws.kms.Key
    ready: list[pulumi.Resource]  # the bucket, its default encryption and its policy


def s3_tier(ctx: StorageContext, tier: S3Tier, single: bool) -> dict[str, EstateBucket]:
    """The tier's key, buckets and log bucket; returns the buckets by name."""
    a = ctx.a
    key = ctx.tier_key(tier.name, "S3 objects")
    logs = _log_bucket(ctx, tier, single)
    out = {}
    for purpose in tier.buckets:
        name = bucket_name(a.tags, a.site, tier, purpose, single)
        r = f"{ctx.n}-{tier.name}-{purpose}"
        tags = a.tags.aws(Name=name, tier=tier.name, purpose=purpose)
        bucket = aws.s3.Bucket(r, bucket=name, tags=tags, opts=ctx.stateful())
        sse = _bucket_baseline(ctx, r, bucket, key_arn=key.arn)
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
            opts=ctx.opts(),
        )
        aws.s3.BucketLogging(r, bucket=bucket.id, target_bucket=logs.id, target_prefix=f"{name}/", opts=ctx.opts())
        policy = iam.tls_only_bucket_policy(f"arn:{iam.partition(ctx.region)}:s3:::{name}")
        bucket_policy = aws.s3.BucketPolicy(r, bucket=bucket.id, policy=policy, opts=ctx.opts())
        out[name] = EstateBucket(name, tier.name, key, [bucket, sse, bucket_policy])
    return out


def grant_fsx_access(
    ctx: StorageContext,
    tier: str,
    key: aws.kms.Key,
    grants: list[tuple[pulumi.Output[str], str]],
    depends_on: list[pulumi.Resource],
) -> aws.kms.KeyPolicy:
    """The tier key's policy with a statement per (file system id, bucket) data repository link.

    The FSx S3 role of a file system exists only once the file system is linked to S3, and KMS refuses a key
    policy naming a principal that does not exist, so the policy is its own resource applied after the data
    repository associations (`depends_on`) rather than the key's creation-time policy.
    """
    ids = pulumi.Output.all(*[fs for fs, _ in grants])
    policy = pulumi.Output.all(ctx.account(), ids).apply(
        lambda v: iam.bucket_key_policy(
            ctx.region, v[0], [(fs, bucket) for fs, (_, bucket) in zip(v[1], grants, strict=True)]
        )
    )
    return aws.kms.KeyPolicy(
        f"{ctx.n}-{tier}-key-policy", key_id=key.id, policy=policy, opts=ctx.opts(depends_on=depends_on)
    )


def _log_bucket(ctx: StorageContext, tier: S3Tier, single: bool) -> aws.s3.Bucket:
    a = ctx.a
    name = bucket_name(a.tags, a.site, tier, "access-logs", single)
    r = f"{ctx.n}-{tier.name}-access-logs"
    logs = aws.s3.Bucket(
        r, bucket=name, tags=a.tags.aws(Name=name, tier=tier.name, purpose="access-logs"), opts=ctx.stateful()
    )
    # S3 server access logs can only be delivered to a bucket with SSE-S3 default encryption.
    _bucket_baseline(ctx, r, logs, key_arn=None)
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
        opts=ctx.opts(),
    )
    arn = f"arn:{iam.partition(ctx.region)}:s3:::"
    sources = [arn + bucket_name(a.tags, a.site, tier, p, single) for p in tier.buckets]
    aws.s3.BucketPolicy(
        r,
        bucket=logs.id,
        policy=ctx.account().apply(lambda account: iam.log_delivery_bucket_policy(arn + name, sources, account)),
        opts=ctx.opts(),
    )
    return logs


def _bucket_baseline(
    ctx: StorageContext, r: str, bucket: aws.s3.Bucket, *, key_arn: pulumi.Input[str] | None
) -> aws.s3.BucketServerSideEncryptionConfiguration:
    """Public access blocked, ACLs off, default encryption (SSE-KMS with a bucket key, or SSE-S3), versioning."""
    aws.s3.BucketPublicAccessBlock(
        r,
        bucket=bucket.id,
        block_public_acls=True,
        block_public_policy=True,
        ignore_public_acls=True,
        restrict_public_buckets=True,
        opts=ctx.opts(),
    )
    aws.s3.BucketOwnershipControls(
        r,
        bucket=bucket.id,
        rule=aws.s3.BucketOwnershipControlsRuleArgs(object_ownership="BucketOwnerEnforced"),  # ACLs off
        opts=ctx.opts(),
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
    sse = aws.s3.BucketServerSideEncryptionConfiguration(
        r,
        bucket=bucket.id,
        rules=[
            aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                apply_server_side_encryption_by_default=default, bucket_key_enabled=key_arn is not None
            )
        ],
        opts=ctx.opts(),
    )
    aws.s3.BucketVersioning(
        r,
        bucket=bucket.id,
        versioning_configuration=aws.s3.BucketVersioningVersioningConfigurationArgs(status="Enabled"),
        opts=ctx.opts(),
    )
    return sse
