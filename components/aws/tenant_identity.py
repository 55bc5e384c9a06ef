"""TenantS3Identity: a tenant's own AWS identity on an AWS site, for the buckets it is granted (tenant `s3`).

EKS Pod Identity (https://docs.aws.amazon.com/eks/latest/userguide/pod-identities.html): the site's
`eks-pod-identity-agent` add-on (components.aws.cluster) hands the pods of one service account in one namespace the
credentials of one IAM role. Per tenant with grants on the site's buckets: a role that trusts only
pods.eks.amazonaws.com for this cluster, the tenant's namespace and its `s3-access` service account; an S3 policy
scoped to `arn:aws:s3:::<bucket>/<prefix>*` per grant (model.tenant_s3 resolves the grants); a KMS
policy for the buckets' tier keys through S3 only; and the association. The tenant bundle creates the service
account and the egress to the region's S3 ranges.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.aws import iam
from model.conventions import TENANT_S3_SERVICE_ACCOUNT
from model.spec import AwsSite, Tenant
from model.tags import Tags
from model.tenant_s3 import TenantS3Access

KEY_ARN_KNOWN_AT_APPLY = "KMS_KEY_ARN_KNOWN_AT_APPLY"


@dataclass(frozen=True)
class TenantS3IdentityArgs:
    site: AwsSite
    tenant: Tenant
    tags: Tags
    cluster_name: str
    access: list[TenantS3Access]
    bucket_keys: dict[str, pulumi.Input[str]]  # bucket name -> ARN of its tier's KMS key
    depends_on: list[pulumi.Resource]  # the cluster (the association needs it)


class TenantS3Identity(pulumi.ComponentResource):
    """Creates the tenant's S3 role, its S3 and KMS role policies and its Pod Identity association."""

    role: aws.iam.Role

    def __init__(self, name: str, args: TenantS3IdentityArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:TenantS3Identity", name, None, opts)
        a, t = args, args.tenant
        tags = a.tags.aws(tenant=t.name, cost_center=t.cost_center)
        child = pulumi.ResourceOptions(parent=self)
        self.role = aws.iam.Role(
            f"{name}-role",
            assume_role_policy=iam.pod_identity_trust_policy(a.cluster_name, t.name, TENANT_S3_SERVICE_ACCOUNT),
            description=f"S3 access of tenant {t.name} on {a.cluster_name} (EKS Pod Identity)",
            tags=tags,
            opts=child,
        )
        grants = sorted({(x.bucket.name, x.prefix, x.access == "readwrite") for x in a.access})
        s3 = aws.iam.RolePolicy(
            f"{name}-s3", role=self.role.id, policy=iam.tenant_s3_policy(a.site.region, grants), opts=child
        )
        read = sorted({x.bucket.name for x in a.access})
        write = sorted({x.bucket.name for x in a.access if x.access == "readwrite"})

        def document(arns: list[list[str | None]]) -> str:
            # Offline (Pulumi mocks) a key has no ARN yet; the engine always knows it before the policy is sent.
            r, w = ([arn or KEY_ARN_KNOWN_AT_APPLY for arn in found] for found in arns)
            return iam.tenant_s3_key_policy(a.site.region, (sorted(set(r)), read), (sorted(set(w)), write))

        keys = pulumi.Output.all([a.bucket_keys[b] for b in read], [a.bucket_keys[b] for b in write]).apply(document)
        kms = aws.iam.RolePolicy(f"{name}-kms", role=self.role.id, policy=keys, opts=child)
        aws.eks.PodIdentityAssociation(
            f"{name}-identity",
            cluster_name=a.cluster_name,
            namespace=t.name,
            service_account=TENANT_S3_SERVICE_ACCOUNT,
            role_arn=self.role.arn,
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*a.depends_on, s3, kms]),
        )
        self.register_outputs({"role_arn": self.role.arn})
