"""The EBS CSI driver and gpufleet's gp3 StorageClass, for Prometheus's volume on an EKS cluster gpufleet creates.

- Such a cluster has no default StorageClass: EKS stopped marking `gp2` default from Kubernetes 1.30 (EKS user
  guide, kubernetes-versions-extended, "Kubernetes 1.30"). Even `gp2` provisions only through the EBS CSI driver,
  which EKS does not install. So without this a claim with no class, or `gp2`, never binds.
- The driver is the EKS add-on `aws-ebs-csi-driver`. Its controller's service account `ebs-csi-controller-sa`
  gets a role with AmazonEBSCSIDriverPolicy through EKS Pod Identity
  (https://docs.aws.amazon.com/eks/latest/userguide/ebs-csi.html).
- The class (conventions.EBS_GP3_CLASS) asks for encrypted gp3 volumes (kubernetes-sigs/aws-ebs-csi-driver
  docs/parameters.md), made in the AZ of the pod's node (WaitForFirstConsumer). Volumes outlive their claims.
"""

from __future__ import annotations

import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.aws import iam
from components.aws.storage.context import StorageContext
from model.conventions import EBS_GP3_CLASS

EBS_CSI = "ebs.csi.aws.com"
EBS_CSI_ADDON = "aws-ebs-csi-driver"
EBS_CONTROLLER_SA = "ebs-csi-controller-sa"


def metrics_volume_class(ctx: StorageContext) -> k8s.storage.v1.StorageClass:
    """The EBS CSI add-on with its Pod Identity role, then the gp3 StorageClass Prometheus claims."""
    a = ctx.a
    role = aws.iam.Role(
        f"{ctx.n}-ebs-csi",
        assume_role_policy=iam.assume_role_policy("pods.eks.amazonaws.com", tag_session=True),
        description=f"EBS CSI controller of {a.cluster_name} (EKS Pod Identity)",
        tags=a.tags.aws(),
        opts=ctx.opts(),
    )
    attachment = aws.iam.RolePolicyAttachment(
        f"{ctx.n}-ebs-csi",
        role=role.name,
        policy_arn=iam.managed_policy(ctx.region, "service-role/AmazonEBSCSIDriverPolicy"),
        opts=ctx.opts(),
    )
    addon = aws.eks.Addon(
        f"{ctx.n}-ebs-csi",
        cluster_name=a.cluster_name,
        addon_name=EBS_CSI_ADDON,
        pod_identity_associations=[
            aws.eks.AddonPodIdentityAssociationArgs(role_arn=role.arn, service_account=EBS_CONTROLLER_SA)
        ],
        resolve_conflicts_on_create="OVERWRITE",
        resolve_conflicts_on_update="PRESERVE",
        tags=a.tags.aws(),
        opts=ctx.opts(depends_on=[attachment, *a.depends_on]),
    )
    return k8s.storage.v1.StorageClass(
        f"{ctx.n}-{EBS_GP3_CLASS}-sc",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=EBS_GP3_CLASS, labels=a.tags.labels()),
        provisioner=EBS_CSI,
        parameters={"type": "gp3", "encrypted": "true"},
        reclaim_policy="Retain",
        volume_binding_mode="WaitForFirstConsumer",
        allow_volume_expansion=True,
        opts=ctx.k8s(depends_on=[addon]),
    )
