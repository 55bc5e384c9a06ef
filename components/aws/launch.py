"""Launch-template settings every gpufleet node shares: IMDSv2, encrypted gp3 root volume, tags that reach
instances, volumes and network interfaces, and AL2023 nodeadm user data that turns instance-store NVMe into
scratch space."""

from __future__ import annotations

import base64
from typing import Any

import pulumi
import pulumi_aws as aws

ROOT_DEVICE = "/dev/xvda"  # AL2023 EKS AMIs
TAGGED_AT_LAUNCH = ("instance", "volume", "network-interface")
MIME_BOUNDARY = "==GPUFLEET=="


def nodeadm_user_data(scratch_mount_path: str | None) -> str:
    """MIME multi-part user data with an AL2023 nodeadm NodeConfig (EKS merges its own cluster part).

    `spec.instance.localStorage.strategy: RAID0` makes nodeadm stripe the instance-store NVMe disks into one
    array and mount it (default `/mnt/k8s-disks`, or `mountPath`); kubelet and containerd state move onto it
    (awslabs/amazon-eks-ami nodeadm API `LocalStorageOptions`: strategy RAID0|RAID10|Mount, mountPath).
    Managed node groups need MIME multi-part user data (EKS user guide, launch templates, "Amazon EC2 user data").
    """
    local = ["    localStorage:", "      strategy: RAID0"]
    if scratch_mount_path:
        local.append(f"      mountPath: {scratch_mount_path}")
    node_config = "\n".join(
        ["---", "apiVersion: node.eks.aws/v1alpha1", "kind: NodeConfig", "spec:", "  instance:", *local]
    )
    return "\n".join(
        [
            "MIME-Version: 1.0",
            f'Content-Type: multipart/mixed; boundary="{MIME_BOUNDARY}"',
            "",
            f"--{MIME_BOUNDARY}",
            "Content-Type: application/node.eks.aws",
            "",
            node_config,
            "",
            f"--{MIME_BOUNDARY}--",
            "",
        ]
    )


def launch_template_args(
    *,
    instance_type: str,
    hop_limit: int,
    root_volume_gib: int,
    key_arn: pulumi.Input[str],
    tags: dict[str, str],
    description: str,
    user_data: str | None = None,
) -> dict[str, Any]:
    """Keyword arguments of `aws.ec2.LaunchTemplate` common to system and GPU nodes."""
    args: dict[str, Any] = {
        "description": description,
        "instance_type": instance_type,
        "update_default_version": True,
        # IMDSv2 only; hop limit 1 keeps pods away from the node role's credentials (EKS BPG, IAM).
        "metadata_options": aws.ec2.LaunchTemplateMetadataOptionsArgs(
            http_endpoint="enabled",
            http_tokens="required",
            http_put_response_hop_limit=hop_limit,
            instance_metadata_tags="disabled",
        ),
        "block_device_mappings": [
            aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                device_name=ROOT_DEVICE,
                ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                    volume_size=root_volume_gib,
                    volume_type="gp3",
                    encrypted="true",
                    kms_key_id=key_arn,
                    delete_on_termination="true",
                ),
            )
        ],
        # Tags on the template itself do not reach what it launches; tag specifications do.
        "tag_specifications": [
            aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=rt, tags=tags) for rt in TAGGED_AT_LAUNCH
        ],
        "tags": tags,
    }
    if user_data is not None:
        args["user_data"] = base64.b64encode(user_data.encode()).decode()
    return args


def template_version(version: int) -> str:
    """A node group pins the template's latest version number ($Latest would show a diff on every refresh).

    Offline synth never learns the number (mocks know only inputs); the version is then left out of the plan.
    """
    return None if version is None else str(int(version))
