"""The CSI drivers of the AWS storage tiers, their StorageClasses, and the pre-bound volumes tenants claim.

A tenant's volume on a shared file system is a PersistentVolume pre-bound (claimRef) to a claim named after the
tier in the tenant's namespace; tenants cannot create PersistentVolumes (cluster-scoped, not in their Role), so
what the volume mounts (an EFS access point, a Lustre directory) is the most of the file system they reach.
A tenant's files belong to one POSIX uid/gid per tenant, the same on every tier (`tenant_uid`).
"""

from __future__ import annotations

import zlib
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.aws import iam
from components.aws.storage.context import StorageContext
from components.kubernetes import helm
from model import versions
from model.conventions import SHARED

FSX_CSI = "fsx.csi.aws.com"
EFS_CSI = "efs.csi.aws.com"
CSI_NAMESPACE = "kube-system"
EFS_CONTROLLER_SA = "efs-csi-controller-sa"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
TENANT_UID_BASE = 50_000


def tenant_uid(tenant: str) -> int:
    """A stable POSIX uid/gid per tenant (does not change when tenants are added or reordered)."""
    return TENANT_UID_BASE + zlib.crc32(tenant.encode()) % 10_000


def fsx_driver(ctx: StorageContext) -> k8s.helm.v3.Release:
    return helm.release(
        f"{ctx.n}-fsx-csi",
        versions.AWS_FSX_CSI_DRIVER,
        name="aws-fsx-csi-driver",
        namespace=CSI_NAMESPACE,
        # The node plugin must run on tainted GPU nodes; static volumes need no AWS API access.
        values={"node": {"tolerateAllTaints": True}, "controller": {"replicaCount": 2}},
        opts=ctx.k8s(depends_on=ctx.a.depends_on),
    )


def efs_driver(ctx: StorageContext) -> k8s.helm.v3.Release:
    """The EFS CSI driver; its controller creates access points for dynamic claims with EKS Pod Identity."""
    a = ctx.a
    role = aws.iam.Role(
        f"{ctx.n}-efs-csi",
        assume_role_policy=iam.assume_role_policy("pods.eks.amazonaws.com", tag_session=True),
        description=f"EFS CSI controller of {a.cluster_name} (EKS Pod Identity)",
        tags=a.tags.aws(),
        opts=ctx.opts(),
    )
    aws.iam.RolePolicyAttachment(
        f"{ctx.n}-efs-csi",
        role=role.name,
        policy_arn=iam.managed_policy(ctx.region, "service-role/AmazonEFSCSIDriverPolicy"),
        opts=ctx.opts(),
    )
    association = aws.eks.PodIdentityAssociation(
        f"{ctx.n}-efs-csi",
        cluster_name=a.cluster_name,
        namespace=CSI_NAMESPACE,
        service_account=EFS_CONTROLLER_SA,
        role_arn=role.arn,
        tags=a.tags.aws(),
        opts=ctx.opts(depends_on=a.depends_on),
    )
    return helm.release(
        f"{ctx.n}-efs-csi",
        versions.AWS_EFS_CSI_DRIVER,
        name="aws-efs-csi-driver",
        namespace=CSI_NAMESPACE,
        values={
            "controller": {"serviceAccount": {"create": True, "name": EFS_CONTROLLER_SA}},
            "node": {"tolerations": [{"operator": "Exists"}]},  # GPU and tenant taints
        },
        opts=ctx.k8s(depends_on=[association, *a.depends_on]),
    )


def storage_class(
    ctx: StorageContext, tier: str, provisioner: str, driver: k8s.helm.v3.Release, **fields: Any
) -> k8s.storage.v1.StorageClass:
    """The tier's StorageClass, named after the tier; volumes outlive their claims (Retain)."""
    return k8s.storage.v1.StorageClass(
        f"{ctx.n}-{tier}-sc",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=tier, labels=ctx.a.tags.labels()),
        provisioner=provisioner,
        reclaim_policy="Retain",
        volume_binding_mode="Immediate",
        opts=ctx.k8s(depends_on=[driver]),
        **fields,
    )


def static_volume(
    ctx: StorageContext,
    name: str,
    claim: tuple[str, str],
    *,
    storage_class_name: str,
    capacity: str,
    csi: dict[str, Any],
    mount_options: list[str],
    depends_on: list[pulumi.Resource],
    tenant: str | None = None,
    read_only: bool = False,
    resource_name: str | None = None,
    retain_on_delete: bool = False,
) -> k8s.core.v1.PersistentVolume:
    """A PersistentVolume named `name`, pre-bound to claim (namespace, name), never deleted with its claim.

    `resource_name` (default `name`) names the Pulumi resource, so a volume can change names and be replaced.
    With `retain_on_delete`, a replaced or removed volume stays in the cluster: Pulumi never waits on a bound
    volume's `kubernetes.io/pv-protection` finalizer.
    """
    source: Any = {**csi, "readOnly": True} if read_only else csi  # a plain dict: the provider takes camelCase
    return k8s.core.v1.PersistentVolume(
        f"{ctx.n}-{resource_name or name}",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=name, labels=ctx.a.tags.labels(tenant=tenant or SHARED)),
        spec=k8s.core.v1.PersistentVolumeSpecArgs(
            capacity={"storage": capacity},
            access_modes=["ReadOnlyMany" if read_only else "ReadWriteMany"],
            persistent_volume_reclaim_policy="Retain",
            storage_class_name=storage_class_name,
            mount_options=mount_options or None,
            csi=source,
            claim_ref=k8s.core.v1.ObjectReferenceArgs(namespace=claim[0], name=claim[1]),
        ),
        opts=ctx.k8s(depends_on=depends_on, retain_on_delete=retain_on_delete),
    )
