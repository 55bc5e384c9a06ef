"""Launch-template settings every gpufleet node shares: IMDSv2, encrypted gp3 root volume, tags that reach
instances, volumes and network interfaces, and AL2023 user data that turns instance-store NVMe into scratch space
installs the Lustre client where nodes mount FSx, and pre-allocates huge pages on EFA nodes."""

from __future__ import annotations

import base64
from typing import Any

import pulumi
import pulumi_aws as aws

from model.node_groups import MAX_UNAVAILABLE
from model.spec import AwsSite, FsxLustreTier

ROOT_DEVICE = "/dev/xvda"  # AL2023 EKS AMIs
TAGGED_AT_LAUNCH = ("instance", "volume", "network-interface")
MIME_BOUNDARY = "==GPUFLEET=="


# The Lustre client the FSx CSI driver mounts with: AL2023 EKS AMIs ship none, so a node that may mount FSx for
# Lustre installs it at boot (FSx for Lustre user guide, "Installing the Lustre client", Amazon Linux 2023:
# `dnf install -y lustre-client`; aws-fsx-csi-driver#437; awslabs/amazon-eks-ami#2696). Installed means the module
# loads. Retried, since the repository may be slow on a new instance. A script that fails exits 1, which cloud-init
# records (`cloud-init status`); the node still joins, since nodeadm-run does not require cloud-final.
LUSTRE_CLIENT_SCRIPT = """#!/bin/bash
for attempt in 1 2 3 4 5; do
  dnf install -y lustre-client && modprobe lustre && exit 0
  sleep $((attempt * 10))
done
echo "gpufleet: the Lustre client did not install or load; FSx for Lustre volumes will not mount here" >&2
exit 1
"""


def hugepages_script(pages: int) -> str:
    """A shell part that pre-allocates `pages` 2 MiB huge pages now and at every boot. It runs before the kubelet
    starts: nodeadm-run.service, which starts it, is ordered After=cloud-final.service (awslabs/amazon-eks-ami
    templates/al2023/runtime/rootfs/etc/systemd/system/nodeadm-run.service), and the kubelet reports huge pages
    only as it starts (Kubernetes "Manage HugePages")."""
    return "\n".join([
        "#!/bin/bash",
        f'echo "vm.nr_hugepages = {pages}" > /etc/sysctl.d/90-gpufleet-hugepages.conf',
        f"sysctl -w vm.nr_hugepages={pages}",
    ])  # fmt: skip


def nodeadm_user_data(
    scratch_mount_path: str | None, local_storage: bool, lustre_client: bool, hugepages: int = 0
) -> str | None:
    """MIME multi-part user data for an AL2023 node (EKS merges its own cluster part), or None when it needs none.

    - `local_storage`: a nodeadm NodeConfig whose `spec.instance.localStorage.strategy: RAID0` stripes the
      instance-store NVMe disks into one array and mounts it (default `/mnt/k8s-disks`, or `mountPath`)
      (awslabs/amazon-eks-ami nodeadm API `LocalStorageOptions`).
    - `lustre_client`: a shell script part that installs the Lustre client (LUSTRE_CLIENT_SCRIPT).
    - `hugepages`: 2 MiB huge pages to pre-allocate (`hugepages_script`; model.efa.EFA_HUGEPAGES on EFA nodes).
    Managed node groups need MIME multi-part user data (EKS user guide, launch templates, "Amazon EC2 user data").
    """
    parts: list[tuple[str, str]] = []
    if local_storage:
        local = ["    localStorage:", "      strategy: RAID0"]
        if scratch_mount_path:
            local.append(f"      mountPath: {scratch_mount_path}")
        node_config = "\n".join(
            ["---", "apiVersion: node.eks.aws/v1alpha1", "kind: NodeConfig", "spec:", "  instance:", *local]
        )
        parts.append(("application/node.eks.aws", node_config))
    if lustre_client:
        parts.append(('text/x-shellscript; charset="us-ascii"', LUSTRE_CLIENT_SCRIPT.rstrip("\n")))
    if hugepages:
        parts.append(('text/x-shellscript; charset="us-ascii"', hugepages_script(hugepages)))
    if not parts:
        return None
    lines = ["MIME-Version: 1.0", f'Content-Type: multipart/mixed; boundary="{MIME_BOUNDARY}"', ""]
    for content_type, body in parts:
        lines += [f"--{MIME_BOUNDARY}", f"Content-Type: {content_type}", "", body, ""]
    return "\n".join([*lines, f"--{MIME_BOUNDARY}--", ""])


def mounts_lustre(site: AwsSite) -> bool:
    """Whether the site's nodes may mount FSx for Lustre (it has such a tier)."""
    return any(isinstance(t, FsxLustreTier) for t in site.storage)


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


def update_config() -> aws.eks.NodeGroupUpdateConfigArgs:
    """Rolling replacement for every node group gpufleet creates (model.node_groups.MAX_UNAVAILABLE)."""
    return aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=MAX_UNAVAILABLE)
