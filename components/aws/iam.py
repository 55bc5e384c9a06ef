"""IAM and KMS documents of an AWS site. Pure; the policies are plain dicts, JSON-encoded by callers."""

from __future__ import annotations

import json
import re
from typing import Any

EKS_CLUSTER_ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
CONTROL_PLANE_LOG_TYPES = ["api", "audit", "authenticator", "controllerManager", "scheduler"]


def partition(region: str) -> str:
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def managed_policy(region: str, name: str) -> str:
    return f"arn:{partition(region)}:iam::aws:policy/{name}"


def assume_role_policy(service: str, *, tag_session: bool = False) -> str:
    actions = ["sts:AssumeRole", "sts:TagSession"] if tag_session else "sts:AssumeRole"
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": actions}],
        }
    )


def account_of(arn: str | None) -> str:
    """The account id inside an ARN (`arn:aws:iam::123456789012:role/x`)."""
    if not arn or arn.count(":") < 5:
        # Offline synth never learns a real ARN; the engine always does before the key policy is sent.
        return "ACCOUNT_ID_KNOWN_AT_APPLY"
    return arn.split(":")[4]


AUTOSCALING_SERVICE = "autoscaling.amazonaws.com"
AUTOSCALING_ROLE_NAME = "AWSServiceRoleForAutoScaling"


def autoscaling_role_arn(region: str, account: str) -> str:
    """ARN of the account's EC2 Auto Scaling service-linked role (its path and name are fixed by AWS)."""
    return f"arn:{partition(region)}:iam::{account}:role/aws-service-role/{AUTOSCALING_SERVICE}/{AUTOSCALING_ROLE_NAME}"


def autoscaling_key_statements(region: str, account: str) -> list[dict[str, Any]]:
    """The two key-policy statements the Auto Scaling service-linked role needs for encrypted node volumes: use of
    the key, and grants for AWS resources (the EBS volumes it attaches).

    The role is AWSServiceRoleForAutoScaling, one per account. Auto Scaling creates it with the account's first
    Auto Scaling group (https://docs.aws.amazon.com/autoscaling/ec2/userguide/autoscaling-service-linked-role.html,
    "Create the service-linked role (automatic)"); for a managed node group EKS creates that group under its own
    service-linked role, whose policy allows iam:CreateServiceLinkedRole
    (https://docs.aws.amazon.com/aws-managed-policy/latest/reference/AWSServiceRoleForAmazonEKSNodegroup.html).
    So the stack neither creates nor reads the role: creating it fails where it exists ("has been taken in this
    account"), reading it fails where it does not. The statements match it by ARN (`aws:PrincipalArn`, which is the
    role's ARN for a session of the role), in this account only, which holds whether it exists yet or not.
    """
    who = {"StringEquals": {"aws:PrincipalArn": autoscaling_role_arn(region, account), "kms:CallerAccount": account}}
    return [
        {
            "Sid": "AutoScalingUsesKeyForNodeVolumes",
            "Effect": "Allow",
            "Principal": {"AWS": "*"},
            "Action": ["kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:DescribeKey"],
            "Resource": "*",
            "Condition": who,
        },
        {
            "Sid": "AutoScalingGrantsForAttachedVolumes",
            "Effect": "Allow",
            "Principal": {"AWS": "*"},
            "Action": "kms:CreateGrant",
            "Resource": "*",
            "Condition": {**who, "Bool": {"kms:GrantIsForAWSResource": "true"}},
        },
    ]


def control_plane_log_group(cluster: str) -> str:
    """The log group EKS writes control-plane logs to (EKS user guide, control-plane-logs)."""
    return f"/aws/eks/{cluster}/cluster"


def account_administers_key(region: str, account: str) -> dict[str, Any]:
    """The key-policy statement that lets the account's IAM policies govern the key (KMS's default key policy)."""
    return {
        "Sid": "AccountAdministersKeyThroughIam",
        "Effect": "Allow",
        "Principal": {"AWS": f"arn:{partition(region)}:iam::{account}:root"},
        "Action": "kms:*",
        "Resource": "*",
    }


def site_key_policy(region: str, account: str, cluster: str) -> str:
    """Key policy of the site key (EKS secrets, node root volumes, control-plane logs).

    The account's IAM policies govern use of the key. EC2 Auto Scaling launches the node groups' instances under
    its service-linked role, which needs the key for the encrypted root volumes (EC2 Auto Scaling user guide,
    "Required AWS KMS key policy for use with encrypted volumes":
    https://docs.aws.amazon.com/autoscaling/ec2/userguide/key-policy-requirements-EBS-encryption.html). The role is
    matched by `aws:PrincipalArn` in a condition, not named as the principal: KMS refuses a principal that does not
    exist yet ("invalid principals"), and a fresh account has no such role until its first Auto Scaling group.
    The stack never creates the role (see `autoscaling_key_statements`). CloudWatch Logs encrypts the control-plane
    log group with the key, for that log group only (CloudWatch Logs user guide, "Encrypt log data in CloudWatch
    Logs using AWS Key Management Service", step 2).
    """
    p = partition(region)
    suffix = ".amazonaws.com.cn" if p == "aws-cn" else ".amazonaws.com"
    log_group = f"arn:{p}:logs:{region}:{account}:log-group:{control_plane_log_group(cluster)}"
    statements: list[dict[str, Any]] = [
        account_administers_key(region, account),
        *autoscaling_key_statements(region, account),
        {
            "Sid": "CloudWatchLogsEncryptsControlPlaneLogs",
            "Effect": "Allow",
            "Principal": {"Service": f"logs.{region}{suffix}"},
            "Action": ["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*"],
            "Resource": "*",
            "Condition": {"ArnEquals": {"kms:EncryptionContext:aws:logs:arn": log_group}},
        },
    ]
    return json.dumps({"Version": "2012-10-17", "Statement": statements})


def tls_only_bucket_policy(bucket_arn: str) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "DenyInsecureTransport",
                    "Effect": "Deny",
                    "Principal": {"AWS": "*"},
                    "Action": "s3:*",
                    "Resource": [bucket_arn, f"{bucket_arn}/*"],
                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                }
            ],
        }
    )


def log_delivery_bucket_policy(log_bucket_arn: str, source_bucket_arns: list[str], account: str) -> str:
    """Lets the S3 logging service write access logs for the estate's buckets (and only those); TLS only."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "S3ServerAccessLogsFromEstateBuckets",
                    "Effect": "Allow",
                    "Principal": {"Service": "logging.s3.amazonaws.com"},
                    "Action": "s3:PutObject",
                    "Resource": f"{log_bucket_arn}/*",
                    "Condition": {
                        "ArnLike": {"aws:SourceArn": source_bucket_arns},
                        "StringEquals": {"aws:SourceAccount": account},
                    },
                },
                {
                    "Sid": "DenyInsecureTransport",
                    "Effect": "Deny",
                    "Principal": {"AWS": "*"},
                    "Action": "s3:*",
                    "Resource": [log_bucket_arn, f"{log_bucket_arn}/*"],
                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                },
            ],
        }
    )


# -- storage -----------------------------------------------------------------------------------------------

# EFS actions for NFS clients (EFS user guide, "Using IAM to control file system data access":
# https://docs.aws.amazon.com/efs/latest/ug/iam-access-control-nfs-efs.html).
EFS_CLIENT_MOUNT = "elasticfilesystem:ClientMount"
EFS_CLIENT_WRITE = "elasticfilesystem:ClientWrite"
# FSx for Lustre's per-file-system service-linked role for S3 data repositories (FSx for Lustre user guide,
# "Using service-linked roles for Amazon FSx": AWSServiceRoleForFSxS3Access_fs-01234567890).
FSX_S3_ROLE_PATH = "aws-service-role/s3.data-source.lustre.fsx.amazonaws.com"
FSX_S3_ROLE_PREFIX = "AWSServiceRoleForFSxS3Access_"


def efs_file_system_policy(fs_arn: str | None) -> str:
    """File-system policy of an EFS tier: clients that come through a mount target may mount and write (not as
    root), and nothing is allowed without TLS.

    A file-system policy replaces EFS's default policy (full access for any client that can reach a mount
    target), so a policy that only denies leaves anonymous clients (mounts without the `iam` option, as the EFS
    CSI driver makes them) with no allow at all: every mount is refused. The Allow is the console's "Prevent root
    access by default" statement; access points set each tenant's POSIX user, so root is never needed. Its
    AccessedViaMountTarget condition keeps the policy non-public, which EFS's block public access (on by default)
    requires (https://docs.aws.amazon.com/efs/latest/ug/access-control-block-public-access.html).
    """
    resource = fs_arn or "*"
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "MountAndWriteThroughMountTargets",
                    "Effect": "Allow",
                    "Principal": {"AWS": "*"},
                    "Action": [EFS_CLIENT_MOUNT, EFS_CLIENT_WRITE],
                    "Resource": resource,
                    "Condition": {"Bool": {"elasticfilesystem:AccessedViaMountTarget": "true"}},
                },
                {
                    "Sid": "DenyInsecureTransport",
                    "Effect": "Deny",
                    "Principal": {"AWS": "*"},
                    "Action": "*",
                    "Resource": resource,
                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                },
            ],
        }
    )


def fsx_s3_access_role_arn(region: str, account: str, file_system_id: str) -> str:
    """The service-linked role FSx for Lustre reads and writes a linked S3 bucket with (one per file system)."""
    return f"arn:{partition(region)}:iam::{account}:role/{FSX_S3_ROLE_PATH}/{FSX_S3_ROLE_PREFIX}{file_system_id}"


def fsx_s3_key_statement(region: str, account: str, file_system_id: str, bucket: str) -> dict[str, Any]:
    """Lets one file system's FSx S3 role use the key on one SSE-KMS bucket, through S3 only.

    FSx for Lustre user guide, "Working with server-side encrypted Amazon S3 buckets"
    (https://docs.aws.amazon.com/fsx/latest/LustreGuide/s3-server-side-encryption-support.html). The estate's
    buckets use S3 Bucket Keys, so the encryption context is the bucket ARN, not the object ARN.
    """
    return {
        "Sid": re.sub(r"[^0-9A-Za-z]", "", f"FsxS3Access{file_system_id}{bucket}"),
        "Effect": "Allow",
        "Principal": {"AWS": fsx_s3_access_role_arn(region, account, file_system_id)},
        "Action": ["kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:DescribeKey"],
        "Resource": "*",
        "Condition": {
            "StringEquals": {"kms:CallerAccount": account, "kms:ViaService": f"s3.{region}.amazonaws.com"},
            "StringLike": {"kms:EncryptionContext:aws:s3:arn": f"arn:{partition(region)}:s3:::{bucket}"},
        },
    }


def bucket_key_policy(region: str, account: str, fsx_grants: list[tuple[str, str]]) -> str:
    """Key policy of an S3 tier key that FSx data repositories read through: the account administers the key
    through IAM (KMS's default), and each (file system id, bucket) pair gets its FSx S3 role statement."""
    statements = [account_administers_key(region, account)]
    statements += [fsx_s3_key_statement(region, account, fs, bucket) for fs, bucket in fsx_grants]
    return json.dumps({"Version": "2012-10-17", "Statement": statements})


# -- tenant S3 identity (EKS Pod Identity) ---------------------------------------------------------------------

POD_IDENTITY_SERVICE = "pods.eks.amazonaws.com"
S3_READ_ACTIONS = ["s3:GetObject", "s3:GetObjectVersion"]
S3_WRITE_ACTIONS = ["s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"]


def pod_identity_trust_policy(cluster: str, namespace: str, service_account: str) -> str:
    """The trust policy EKS Pod Identity needs (sts:AssumeRole and sts:TagSession for pods.eks.amazonaws.com), held
    to one cluster, namespace and service account by the request tags Pod Identity sends (EKS user guide,
    pod-id-role: https://docs.aws.amazon.com/eks/latest/userguide/pod-id-role.html, "Setting Conditions")."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "AllowEksAuthToAssumeRoleForPodIdentity",
                    "Effect": "Allow",
                    "Principal": {"Service": POD_IDENTITY_SERVICE},
                    "Action": ["sts:AssumeRole", "sts:TagSession"],
                    "Condition": {
                        "StringEquals": {
                            "aws:RequestTag/eks-cluster-name": cluster,
                            "aws:RequestTag/kubernetes-namespace": namespace,
                            "aws:RequestTag/kubernetes-service-account": service_account,
                        }
                    },
                }
            ],
        }
    )


def _sid(*parts: str) -> str:
    return re.sub(r"[^0-9A-Za-z]", "", "".join(p.title() for p in parts))[:100]


def tenant_s3_policy(region: str, grants: list[tuple[str, str, bool]]) -> str:
    """A tenant role's S3 permissions: per (bucket, prefix ending in "/", write) grant, list the bucket under the
    prefix only and get (and with write: put, delete, abort uploads) objects under `arn:...:s3:::bucket/prefix*`.
    No wildcard bucket, no s3:*."""
    p = partition(region)
    statements: list[dict[str, Any]] = []
    for bucket, prefix, write in grants:
        statements.append(
            {
                "Sid": _sid("List", bucket, prefix),
                "Effect": "Allow",
                "Action": "s3:ListBucket",
                "Resource": f"arn:{p}:s3:::{bucket}",
                "Condition": {"StringLike": {"s3:prefix": [f"{prefix}*"]}},
            }
        )
        statements.append(
            {
                "Sid": _sid("Objects", bucket, prefix),
                "Effect": "Allow",
                "Action": S3_READ_ACTIONS + (S3_WRITE_ACTIONS if write else []),
                "Resource": f"arn:{p}:s3:::{bucket}/{prefix}*",
            }
        )
    return json.dumps({"Version": "2012-10-17", "Statement": statements})


def tenant_s3_key_policy(region: str, read: tuple[list[str], list[str]], write: tuple[list[str], list[str]]) -> str:
    """The KMS permissions S3 uses on the tenant's behalf for SSE-KMS buckets: decrypt to read, data keys to write
    (S3 user guide, UsingKMSEncryption: https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingKMSEncryption.html),
    each on the tier keys (first of each pair) through S3 only and for the granted buckets (second) only: the
    estate's buckets use S3 Bucket Keys, whose encryption context is the bucket ARN."""
    p = partition(region)
    statements: list[dict[str, Any]] = []
    for sid, action, (keys, buckets) in (("DecryptThroughS3", "kms:Decrypt", read),
                                         ("EncryptThroughS3", "kms:GenerateDataKey", write)):  # fmt: skip
        if not keys:
            continue
        statements.append(
            {
                "Sid": sid,
                "Effect": "Allow",
                "Action": action,
                "Resource": keys,
                "Condition": {
                    "StringEquals": {"kms:ViaService": f"s3.{region}.amazonaws.com"},
                    "StringLike": {"kms:EncryptionContext:aws:s3:arn": [f"arn:{p}:s3:::{b}" for b in buckets]},
                },
            }
        )
    return json.dumps({"Version": "2012-10-17", "Statement": statements})


def scheduler_trust_policy(account: str) -> str:
    """Trust for an EventBridge Scheduler execution role: the scheduler, acting for schedules of this account only
    (`aws:SourceAccount`, the confused-deputy guard of the Scheduler user guide, setting-up.html#setting-up-execution-role)."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "scheduler.amazonaws.com"},
                    "Action": "sts:AssumeRole",
                    "Condition": {"StringEquals": {"aws:SourceAccount": account}},
                }
            ],
        }
    )


def node_group_scaling_policy(node_group_arn: str | None, dead_letter_queue_arn: str | None) -> str:
    """Only `eks:UpdateNodegroupConfig`, only on one node group (the action takes a nodegroup ARN as its resource:
    Service Authorization Reference, Amazon EKS; the ARN's last part, the id EKS assigns, may be a `*`), and
    `sqs:SendMessage` on the schedule's dead-letter queue: Scheduler delivers dead-letter events as the schedule's
    execution role (Scheduler user guide, configuring-schedule-dlq.html, "Set up execution role permissions")."""
    arn = node_group_arn or "NODE_GROUP_ARN_KNOWN_AT_APPLY"  # offline synth never learns a real ARN
    queue = dead_letter_queue_arn or "QUEUE_ARN_KNOWN_AT_APPLY"
    statements = [
        {"Effect": "Allow", "Action": "eks:UpdateNodegroupConfig", "Resource": arn},
        {"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": queue},
    ]
    return json.dumps({"Version": "2012-10-17", "Statement": statements})
