"""The shared-warm tier: EFS with elastic throughput, a customer-managed key, mount targets in the private subnets,
a file-system policy, per-tenant access points and pre-bound volumes, and a StorageClass provisioning an access
point per claim.

Mounts. The EFS CSI driver mounts through the EFS mount helper with TLS on by default (`encryptInTransit`
defaults to true, and an access point in the volume handle adds `tls` itself) and without the `iam` option, so
EFS sees an anonymous client arriving through a mount target (aws-efs-csi-driver pkg/driver/node.go
NodePublishVolume at the pinned chart's tag). The file-system policy (iam.efs_file_system_policy) allows exactly
that (mount and write through a mount target) and denies anything without TLS; `tls` is therefore not repeated
in mount options, where the driver logs it as deprecated.
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.aws import iam
from components.aws.storage.context import StorageContext
from components.aws.storage.csi import EFS_CSI, static_volume, storage_class, tenant_uid
from model.spec import EfsTier

NFS_PORT = 2049
TENANTS_DIR = "/tenants"


def efs_tier(ctx: StorageContext, tier: EfsTier, driver: k8s.helm.v3.Release) -> None:
    a = ctx.a
    key = ctx.tier_key(tier.name, "EFS data")
    fs = aws.efs.FileSystem(
        f"{ctx.n}-{tier.name}",
        encrypted=True,
        kms_key_id=key.arn,
        throughput_mode="elastic",
        performance_mode="generalPurpose",
        tags=a.tags.aws(Name=f"{a.cluster_name}-{tier.name}", tier=tier.name),
        # Explicit: offline plans never learn ARNs, and should still show which key encrypts the tier.
        opts=ctx.stateful(depends_on=[key]),
    )
    aws.efs.BackupPolicy(
        f"{ctx.n}-{tier.name}",
        file_system_id=fs.id,
        backup_policy=aws.efs.BackupPolicyBackupPolicyArgs(status="ENABLED"),
        opts=ctx.opts(),
    )
    policy = aws.efs.FileSystemPolicy(
        f"{ctx.n}-{tier.name}",
        file_system_id=fs.id,
        policy=fs.arn.apply(iam.efs_file_system_policy),
        opts=ctx.opts(),
    )
    sg = aws.ec2.SecurityGroup(
        f"{ctx.n}-{tier.name}-sg",
        vpc_id=a.vpc_id,
        description=f"EFS {tier.name}: NFS from cluster nodes only",
        ingress=[
            aws.ec2.SecurityGroupIngressArgs(
                protocol="tcp",
                from_port=NFS_PORT,
                to_port=NFS_PORT,
                security_groups=[a.cluster_security_group_id],
                description="NFS from cluster nodes",
            )
        ],
        egress=[],
        tags=a.tags.aws(Name=f"{a.cluster_name}-{tier.name}", tier=tier.name),
        opts=ctx.opts(),
    )
    targets = [
        aws.efs.MountTarget(
            f"{ctx.n}-{tier.name}-{i}",
            file_system_id=fs.id,
            subnet_id=subnet,
            security_groups=[sg.id],
            opts=ctx.opts(),
        )
        for i, subnet in enumerate(a.private_subnet_ids)
    ]
    storage_class(
        ctx,
        tier.name,
        EFS_CSI,
        driver,
        # Each claim gets its own access point: root directory under /dynamic, POSIX ids from the range.
        parameters={
            "provisioningMode": "efs-ap",
            "fileSystemId": fs.id,
            "directoryPerms": "700",
            "basePath": "/dynamic",
            "gidRangeStart": "60000",
            "gidRangeEnd": "61000",
            "ensureUniqueDirectory": "true",
        },
    )
    for tenant in ctx.tenants_mounting(tier.name):
        ap = _tenant_access_point(ctx, tier, fs, tenant.name)
        static_volume(
            ctx,
            f"{tier.name}-{tenant.name}",
            (tenant.name, tier.name),
            storage_class_name=tier.name,
            capacity="1Ti",  # EFS is elastic; PV capacity is required by the API but not enforced
            csi={"driver": EFS_CSI, "volumeHandle": pulumi.Output.concat(fs.id, "::", ap.id)},
            mount_options=[],
            # Mountable only once the policy allows the mount and a mount target answers.
            depends_on=[driver, policy, *targets],
            tenant=tenant.name,
        )


def _tenant_access_point(
    ctx: StorageContext, tier: EfsTier, fs: aws.efs.FileSystem, tenant: str
) -> aws.efs.AccessPoint:
    """The tenant's directory (`/tenants/<tenant>`, created by EFS on first use) and POSIX identity."""
    uid = tenant_uid(tenant)
    return aws.efs.AccessPoint(
        f"{ctx.n}-{tier.name}-{tenant}",
        file_system_id=fs.id,
        root_directory=aws.efs.AccessPointRootDirectoryArgs(
            path=f"{TENANTS_DIR}/{tenant}",
            creation_info=aws.efs.AccessPointRootDirectoryCreationInfoArgs(
                owner_uid=uid, owner_gid=uid, permissions="750"
            ),
        ),
        posix_user=aws.efs.AccessPointPosixUserArgs(uid=uid, gid=uid),
        tags=ctx.a.tags.aws(tenant=tenant, tier=tier.name),
        opts=ctx.opts(),
    )
