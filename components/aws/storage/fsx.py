"""The shared-hot tier: FSx for Lustre PERSISTENT_2 in its fabric's subnet and AZ, with a customer-managed key, a
security group for the Lustre ports, an optional S3 data repository association, and per-tenant volumes.

- Lustre has no access points, so a tenant's volume mounts a directory of the file system: `/tenants/<tenant>`.
- A Job creates those directories, owned by each tenant's uid/gid, before any tenant volume binds.
- Tenant pods write there as that uid, or with that gid in `supplementalGroups`. The FSx CSI driver does not
  apply fsGroup to shared volumes.
- With a data repository, each tenant also gets a read-only volume of the linked directory (`/s3`), claimed as
  `<tier>-s3`.
- Every tenant volume is named `<namespace>.<claim>`, after its claim, with its own `volumeHandle`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.aws.storage.context import StorageContext
from components.aws.storage.csi import CSI_NAMESPACE, FSX_CSI, NO_PROVISIONER, static_volume, storage_class, tenant_uid
from components.aws.storage.s3 import EstateBucket
from model import versions
from model.spec import AwsSite, FsxLustreTier

LUSTRE_PORTS = ((988, 988), (1018, 1023))  # FSx for Lustre user guide, "Amazon VPC security groups"
DATA_REPOSITORY_PATH = "/s3"  # where an S3 data repository appears in the file system
TENANTS_DIR = "/tenants"
MOUNT_OPTIONS = ["flock"]
# FSx always reports a mount name; only the offline engine, which never creates the file system, lacks it.
MOUNT_NAME_OFFLINE = "MOUNT_NAME_KNOWN_AT_APPLY"


def training_need_gbps(site: AwsSite, tier: FsxLustreTier) -> tuple[int, float]:
    """Nodes of the site's training pools at max size, and the GB/s they need from `tier`."""
    nodes = sum(p.scaling.max for p in site.node_pools if p.role == "training")
    return nodes, nodes * tier.min_gbps_per_training_node


def throughput_warning(site: AwsSite, tier: FsxLustreTier) -> str | None:
    """A warning when a shared-hot tier cannot feed the site's training pools at max size, else None."""
    nodes, need = training_need_gbps(site, tier)
    have = tier.throughput_gbps
    if nodes == 0 or have >= need:
        return None
    return (
        f"site {site.name}, storage tier {tier.name}: FSx for Lustre delivers {have:.1f} GB/s "
        f"({tier.capacity_gib} GiB x {tier.throughput_per_tib} MB/s/TiB) but the site's training pools need "
        f"{need:.1f} GB/s at max size ({nodes} nodes x {tier.min_gbps_per_training_node:g} GB/s); raise "
        "capacity_gib or throughput_per_tib, or lower min_gbps_per_training_node if the jobs read less"
    )


def lustre_mountname(mount_name: str | None, directory: str = "") -> str:
    """The CSI `mountname` attribute that mounts `directory` (absolute, or "" for the root) of the file system.

    A client can mount a directory instead of the root ("fileset": `<dns>@tcp:/<mountname>/<dir>`; FSx for Lustre
    user guide, "Mounting specific filesets",
    https://docs.aws.amazon.com/fsx/latest/LustreGuide/mounting-from-fileset.html). The FSx CSI driver mounts
    `<dnsname>@tcp:/<mountname>` from the volume attributes as given (aws-fsx-csi-driver pkg/driver/node.go,
    NodePublishVolume, at the pinned chart's tag), so a tenant's volume names `<mountname>/tenants/<tenant>`.
    """
    return f"{mount_name or MOUNT_NAME_OFFLINE}{directory}"


def tenant_dir(tenant: str) -> str:
    return f"{TENANTS_DIR}/{tenant}"


def tenant_dirs_script(tenants: list[str], root: str = "/fs") -> str:
    """Shell (busybox) that creates each tenant's directory, owned by its uid/gid, mode 2770; idempotent."""
    lines = ["set -eu", f"mkdir -p {root}{TENANTS_DIR}", f"chmod 0755 {root}{TENANTS_DIR}"]
    for t in sorted(tenants):
        path, uid = shlex.quote(f"{root}{tenant_dir(t)}"), tenant_uid(t)  # a tenant name is one word, whatever it is
        lines.append(f"mkdir -p {path} && chown {uid}:{uid} {path} && chmod 2770 {path}")
    return "\n".join(lines)


@dataclass(frozen=True)
class DataRepositoryLink:
    """An FSx file system linked to a bucket this stack creates: that bucket's key must let FSx in."""

    file_system_id: pulumi.Output[str]
    bucket: EstateBucket
    association: aws.fsx.DataRepositoryAssociation


def fsx_tier(
    ctx: StorageContext, tier: FsxLustreTier, driver: k8s.helm.v3.Release, buckets: dict[str, EstateBucket]
) -> DataRepositoryLink | None:
    a = ctx.a
    warning = throughput_warning(a.site, tier)
    if warning:
        pulumi.log.warn(warning, resource=ctx.parent)
    key = ctx.tier_key(tier.name, "FSx for Lustre data")
    sg, servers, nodes = _lustre_security_group(ctx, tier)
    fs = aws.fsx.LustreFileSystem(
        f"{ctx.n}-{tier.name}",
        deployment_type="PERSISTENT_2",
        storage_type="SSD",
        storage_capacity=tier.capacity_gib,
        per_unit_storage_throughput=tier.throughput_per_tib,
        subnet_ids=a.fabric_subnets[tier.fabric],  # one subnet: the fabric's, so its AZ
        security_group_ids=[sg.id],
        kms_key_id=key.arn,
        file_system_type_version="2.15",
        data_compression_type="LZ4",
        metadata_configuration=aws.fsx.LustreFileSystemMetadataConfigurationArgs(mode="AUTOMATIC"),
        automatic_backup_retention_days=7,
        copy_tags_to_backups=True,
        log_configuration=aws.fsx.LustreFileSystemLogConfigurationArgs(level="WARN_ERROR"),
        tags=a.tags.aws(Name=f"{a.cluster_name}-{tier.name}", tier=tier.name),
        # The key explicitly: offline plans never learn ARNs, and should still show which key encrypts the tier.
        # The rules between servers: FSx refuses a group that does not admit itself on port 988.
        opts=ctx.stateful(depends_on=[key, *servers]),
    )
    association, link = _data_repository(ctx, tier, fs, buckets) if tier.s3_import_path else (None, None)
    storage_class(ctx, tier.name, NO_PROVISIONER, driver)  # claims bind to the volumes below, never provision
    tenants = [t.name for t in ctx.tenants_mounting(tier.name)]
    if not tenants:
        return link
    dirs = _tenant_dirs(ctx, tier, fs, driver, tenants, nodes)

    def volume(
        resource: str, tenant: str, claim: str, directory: str, after: pulumi.Resource, read_only: bool = False
    ) -> None:
        name = tenant_volume_name(tenant, claim)
        attributes = {
            "dnsname": fs.dns_name,
            "mountname": fs.mount_name.apply(lambda m: lustre_mountname(m, directory)),
        }
        static_volume(
            ctx,
            name,
            (tenant, claim),
            storage_class_name=tier.name,
            capacity=f"{tier.capacity_gib}Gi",
            csi={"driver": FSX_CSI, "volumeHandle": volume_handle(fs.id, name), "volumeAttributes": attributes},
            mount_options=MOUNT_OPTIONS,
            depends_on=[driver, after],
            tenant=tenant,
            read_only=read_only,
            resource_name=resource,
            # A replaced volume stays in the cluster, bound, until its claim lets go (docs/deploy.md, "Upgrades").
            retain_on_delete=True,
        )

    # Resource names stay those of the volumes' first names, so an existing estate replaces each volume.
    for tenant in tenants:
        volume(f"{tier.name}-{tenant}", tenant, tier.name, tenant_dir(tenant), dirs)
        if association is not None:  # the linked bucket's objects, read-only for every tenant that mounts
            claim = f"{tier.name}-s3"
            volume(f"{claim}.{tenant}", tenant, claim, DATA_REPOSITORY_PATH, association, read_only=True)
    return link


def tenant_volume_name(namespace: str, claim: str) -> str:
    """The PersistentVolume pre-bound to claim `namespace/claim`: unique, as a namespace name has no dot."""
    return f"{namespace}.{claim}"


def volume_handle(file_system_id: pulumi.Input[str], volume: str) -> pulumi.Output[str]:
    """A tenant volume's CSI handle: the file system id, then the volume's name, so no two volumes share one.

    The kubelet names a CSI volume by driver and handle, so one pod never mounts two volumes of one handle
    (kubernetes/kubernetes#91556, kubernetes-sigs/aws-fsx-csi-driver#328). The FSx driver takes the handle as
    an identity only: NodePublishVolume mounts `<dnsname>@tcp:/<mountname>` from the volume attributes, and the
    CSIDriver needs no attach (aws-fsx-csi-driver v1.9.0, the pinned chart's app version: pkg/driver/node.go,
    charts/aws-fsx-csi-driver/templates/csidriver.yaml).
    """
    return pulumi.Output.concat(file_system_id, "::", volume)


def _data_repository(
    ctx: StorageContext, tier: FsxLustreTier, fs: aws.fsx.LustreFileSystem, buckets: dict[str, EstateBucket]
) -> tuple[aws.fsx.DataRepositoryAssociation, DataRepositoryLink | None]:
    """The S3 data repository association; when the bucket is the estate's, it waits for the bucket, and the
    link it returns makes the caller grant the file system's FSx S3 role use of the bucket's key."""
    assert tier.s3_import_path
    bucket = buckets.get(urlsplit(tier.s3_import_path).netloc)
    if bucket is None:
        pulumi.log.warn(
            f"storage tier {tier.name}: {tier.s3_import_path} is not a bucket of this stack; if it is encrypted "
            "with SSE-KMS under a customer-managed key, that key's policy must let this file system's FSx S3 "
            "role (AWSServiceRoleForFSxS3Access_<file system id>) use it, or FSx cannot read its objects",
            resource=ctx.parent,
        )
    association = aws.fsx.DataRepositoryAssociation(
        f"{ctx.n}-{tier.name}-s3",
        file_system_id=fs.id,
        file_system_path=DATA_REPOSITORY_PATH,
        data_repository_path=tier.s3_import_path.rstrip("/"),
        batch_import_meta_data_on_create=True,
        delete_data_in_filesystem=False,
        s3=aws.fsx.DataRepositoryAssociationS3Args(
            auto_import_policy=aws.fsx.DataRepositoryAssociationS3AutoImportPolicyArgs(
                events=["NEW", "CHANGED", "DELETED"]
            )
        ),
        tags=ctx.a.tags.aws(tier=tier.name),
        opts=ctx.opts(depends_on=bucket.ready if bucket else []),
    )
    return association, DataRepositoryLink(fs.id, bucket, association) if bucket else None


def _tenant_dirs(
    ctx: StorageContext, tier: FsxLustreTier, fs: aws.fsx.LustreFileSystem, driver: k8s.helm.v3.Release,
    tenants: list[str], node_rules: list[pulumi.Resource],
) -> k8s.batch.v1.Job:  # fmt: skip
    """The Job that creates the tenants' directories, and the root volume (claimable in kube-system only) it
    mounts. pulumi-kubernetes waits for a Job to complete and fails the update if it fails.

    A fileset mount needs its directory to exist, so tenant volumes wait for this Job; the Job waits for the
    rules that let nodes reach the file system (`node_rules`). It runs busybox as root
    with only CHOWN, FOWNER and FSETID, and makes each directory mode 2770, owned by the tenant's uid/gid
    (csi.tenant_uid).
    """
    root = f"{tier.name}-root"
    labels = ctx.a.tags.labels()
    # The root volume's handle is the file system id alone: unlike every tenant volume's (volume_handle).
    pv = static_volume(
        ctx,
        f"{tier.name}.root",
        (CSI_NAMESPACE, root),
        storage_class_name=tier.name,
        capacity=f"{tier.capacity_gib}Gi",
        csi={
            "driver": FSX_CSI,
            "volumeHandle": fs.id,
            "volumeAttributes": {"dnsname": fs.dns_name, "mountname": fs.mount_name.apply(lustre_mountname)},
        },
        mount_options=MOUNT_OPTIONS,
        depends_on=[driver],
    )
    claim = k8s.core.v1.PersistentVolumeClaim(
        f"{ctx.n}-{root}",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=root, namespace=CSI_NAMESPACE, labels=labels),
        spec=k8s.core.v1.PersistentVolumeClaimSpecArgs(
            access_modes=["ReadWriteMany"],
            storage_class_name=tier.name,
            volume_name=f"{tier.name}.root",
            resources=k8s.core.v1.VolumeResourceRequirementsArgs(requests={"storage": f"{tier.capacity_gib}Gi"}),
        ),
        opts=ctx.k8s(depends_on=[pv]),
    )
    container = {
        "name": "tenant-dirs",
        "image": versions.BUSYBOX.reference,
        "command": ["sh", "-c", tenant_dirs_script(tenants)],
        "securityContext": {
            "runAsUser": 0,
            "runAsNonRoot": False,
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"], "add": ["CHOWN", "FOWNER", "FSETID"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "resources": {"requests": {"cpu": "50m", "memory": "32Mi"}, "limits": {"cpu": "200m", "memory": "64Mi"}},
        "volumeMounts": [{"name": "fs", "mountPath": "/fs"}],
    }
    name = f"{tier.name}-tenant-dirs"
    spec: Any = {
        "backoffLimit": 4,
        "template": {
            "metadata": {"labels": labels},
            "spec": {
                "restartPolicy": "Never",
                "automountServiceAccountToken": False,
                # The pod's own context as well as the container's (root for chown, RuntimeDefault seccomp).
                "securityContext": {
                    "runAsUser": 0,
                    "runAsNonRoot": False,
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "containers": [container],
                "volumes": [{"name": "fs", "persistentVolumeClaim": {"claimName": root}}],
            },
        },
    }
    return k8s.batch.v1.Job(
        f"{ctx.n}-{name}",
        metadata=k8s.meta.v1.ObjectMetaArgs(name=name, namespace=CSI_NAMESPACE, labels=labels),
        spec=spec,
        # The pod template is immutable: a changed tenant list replaces the Job, which keeps its name.
        opts=ctx.k8s(depends_on=[claim, *node_rules, *ctx.a.depends_on], delete_before_replace=True),
    )


def _lustre_security_group(
    ctx: StorageContext, tier: FsxLustreTier
) -> tuple[aws.ec2.SecurityGroup, list[pulumi.Resource], list[pulumi.Resource]]:
    """The tier's security group, its rules between the file system's servers, and its rules with the nodes.

    - The group and the rules between servers are retained on delete with the file system: its network
      interfaces keep the group in use (components.aws.fabric.lustre_fabrics).
    - Every rule is its own resource, none inline. A group left behind must not name the cluster security group,
      which EKS deletes with the cluster: a group another group references cannot be deleted (EC2 API reference,
      DeleteSecurityGroup). So the rules with the nodes go with the cluster.
    - The file system waits only for the rules between its servers. FSx checks them when it creates it (FSx for
      Lustre user guide, "Amazon VPC security groups": port 988 from the group itself).
    """
    a = ctx.a
    sg = aws.ec2.SecurityGroup(
        f"{ctx.n}-{tier.name}-sg",
        vpc_id=a.vpc_id,
        description=f"FSx for Lustre {tier.name}: Lustre ports from cluster nodes only",
        tags=a.tags.aws(Name=f"{a.cluster_name}-{tier.name}", tier=tier.name),
        opts=ctx.opts(retain_on_delete=True),
    )
    tags = a.tags.aws(tier=tier.name)

    def rule(
        kind: type[aws.vpc.SecurityGroupIngressRule] | type[aws.vpc.SecurityGroupEgressRule],
        name: str,
        group: pulumi.Input[str],
        other: pulumi.Input[str],
        ports: tuple[int, int],
        description: str,
        retain: bool = False,
    ) -> pulumi.Resource:
        return kind(
            f"{ctx.n}-{tier.name}-{name}-{ports[0]}",
            security_group_id=group,
            referenced_security_group_id=other,
            ip_protocol="tcp",
            from_port=ports[0],
            to_port=ports[1],
            description=description,
            tags=tags,
            opts=ctx.opts(retain_on_delete=retain),
        )

    ingress, egress = aws.vpc.SecurityGroupIngressRule, aws.vpc.SecurityGroupEgressRule
    nodes_sg = a.cluster_security_group_id
    servers: list[pulumi.Resource] = []
    nodes: list[pulumi.Resource] = []
    for lo, hi in LUSTRE_PORTS:
        ports = f"{lo}" if lo == hi else f"{lo}-{hi}"
        between = f"Lustre {ports} between servers"
        servers += [
            rule(ingress, "from-servers", sg.id, sg.id, (lo, hi), between, retain=True),
            rule(egress, "to-servers", sg.id, sg.id, (lo, hi), between, retain=True),
        ]
        # The nodes' (cluster) security group only admits itself; Lustre servers also open connections to
        # clients on the same ports.
        nodes += [
            rule(ingress, "from-nodes", sg.id, nodes_sg, (lo, hi), f"Lustre {ports} from cluster nodes"),
            rule(egress, "to-clients", sg.id, nodes_sg, (lo, hi), f"Lustre {ports} to cluster nodes"),
            rule(ingress, "to-nodes", nodes_sg, sg.id, (lo, hi), f"Lustre {lo}-{hi} from FSx tier {tier.name}"),
        ]
    return sg, servers, nodes
