"""SiteStorage: the storage tiers of an AWS site, each with its CSI driver and StorageClass.

- scratch: instance-store NVMe, striped RAID0 by nodeadm from the GPU launch templates (launch.py); no cloud
  resource here. Pods reach it as node-local storage (kubelet and containerd live on the array; a hostPath or
  local-volume provisioner can expose the mount path).
- shared-hot: FSx for Lustre PERSISTENT_2 in its fabric's subnet and AZ, with a customer-managed key, a security
  group for the Lustre ports, an optional S3 data repository association, the FSx CSI driver and a
  StorageClass plus one pre-bound PersistentVolume per tenant (one shared file system, no dynamic creation).
- shared-warm: EFS with elastic throughput, a customer-managed key, mount targets in the private subnets,
  TLS-only file-system policy, per-tenant access points (root directory + POSIX user), the EFS CSI driver
  (IAM through EKS Pod Identity) and a StorageClass provisioning access points per claim.
- object: S3 buckets (buckets.py) per purpose with public access blocked, SSE-KMS with a bucket key, versioning, a TLS-only
  policy, lifecycle rules and access logging into a log bucket.
Stateful resources (file systems, buckets, their keys) are protected and retained on delete.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.aws import buckets, iam
from components.kubernetes import helm, versions
from components.model.spec import AwsSite, EfsTier, EstateSpec, FsxLustreTier, S3Tier
from components.model.tags import Tags

LUSTRE_PORTS = ((988, 988), (1018, 1023))  # FSx for Lustre user guide, "Amazon VPC security groups"
NFS_PORT = 2049
FSX_CSI = "fsx.csi.aws.com"
EFS_CSI = "efs.csi.aws.com"
CSI_NAMESPACE = "kube-system"
EFS_CONTROLLER_SA = "efs-csi-controller-sa"
TENANT_UID_BASE = 50_000


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


def tenant_uid(tenant: str) -> int:
    """A stable POSIX uid/gid per tenant (does not change when tenants are added or reordered)."""
    return TENANT_UID_BASE + zlib.crc32(tenant.encode()) % 10_000


@dataclass(frozen=True)
class SiteStorageArgs:
    spec: EstateSpec
    site: AwsSite
    tags: Tags
    cluster_name: str
    vpc_id: pulumi.Input[str]
    private_subnet_ids: list[pulumi.Output[str]]
    cluster_security_group_id: pulumi.Input[str]
    fabric_subnets: dict[str, pulumi.Input[str]]  # EFA fabric name -> subnet id
    node_role_arn: pulumi.Input[str]  # an ARN of this account (the access-log bucket policy needs the id)
    k8s_provider: k8s.Provider
    depends_on: list[pulumi.Resource]  # node groups the CSI drivers' pods run on


class SiteStorage(pulumi.ComponentResource):
    """Creates the site's FSx for Lustre, EFS and S3 tiers with their keys, security groups, CSI drivers and
    StorageClasses (see the module docstring); warns when a shared-hot tier is too slow for the training pools."""

    def __init__(self, name: str, args: SiteStorageArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:Storage", name, None, opts)
        self._n = name
        self._a = args
        site = args.site
        fsx = [t for t in site.storage if isinstance(t, FsxLustreTier)]
        efs = [t for t in site.storage if isinstance(t, EfsTier)]
        s3 = [t for t in site.storage if isinstance(t, S3Tier)]
        single_s3 = sum(isinstance(t, S3Tier) for s in args.spec.sites for t in s.storage) == 1
        if fsx:
            driver = self._fsx_driver()
            for f in fsx:
                self._fsx_tier(f, driver)
        if efs:
            driver = self._efs_driver()
            for e in efs:
                self._efs_tier(e, driver)
        for b in s3:
            buckets.s3_tier(self, self._n, args, b, single_s3, self._tier_key(b.name, "S3 objects").arn)
        self.register_outputs({})

    # -- helpers ---------------------------------------------------------------------------------------
    def _opts(self, **kw: Any) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self, **kw)

    def _stateful(self, **kw: Any) -> pulumi.ResourceOptions:
        """Options for data-holding resources: no `up`, refactor or `destroy` may delete them."""
        return pulumi.ResourceOptions(parent=self, protect=True, retain_on_delete=True, **kw)

    def _k8s(self, **kw: Any) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self, provider=self._a.k8s_provider, **kw)

    def _tier_key(self, tier: str, what: str) -> aws.kms.Key:
        return aws.kms.Key(
            f"{self._n}-{tier}-key",
            description=f"{self._a.cluster_name}: {what} (storage tier {tier})",
            enable_key_rotation=True,
            deletion_window_in_days=30,
            tags=self._a.tags.aws(tier=tier),
            opts=self._stateful(),
        )

    def _tenants(self) -> list[str]:
        return [t.name for t in self._a.spec.tenants]

    # -- FSx for Lustre ----------------------------------------------------------------------------------
    def _fsx_driver(self) -> k8s.helm.v3.Release:
        return helm.release(
            f"{self._n}-fsx-csi",
            versions.AWS_FSX_CSI_DRIVER,
            name="aws-fsx-csi-driver",
            namespace=CSI_NAMESPACE,
            # The node plugin must run on tainted GPU nodes; static volumes need no AWS API access.
            values={"node": {"tolerateAllTaints": True}, "controller": {"replicaCount": 2}},
            opts=self._k8s(depends_on=self._a.depends_on),
        )

    def _fsx_tier(self, tier: FsxLustreTier, driver: k8s.helm.v3.Release) -> None:
        a = self._a
        warning = throughput_warning(a.site, tier)
        if warning:
            pulumi.log.warn(warning, resource=self)
        key = self._tier_key(tier.name, "FSx for Lustre data")
        sg = self._lustre_security_group(tier)
        fs = aws.fsx.LustreFileSystem(
            f"{self._n}-{tier.name}",
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
            # Explicit: offline plans never learn ARNs, and should still show which key encrypts the tier.
            opts=self._stateful(depends_on=[key]),
        )
        if tier.s3_import_path:
            aws.fsx.DataRepositoryAssociation(
                f"{self._n}-{tier.name}-s3",
                file_system_id=fs.id,
                file_system_path="/s3",
                data_repository_path=tier.s3_import_path.rstrip("/"),
                batch_import_meta_data_on_create=True,
                delete_data_in_filesystem=False,
                s3=aws.fsx.DataRepositoryAssociationS3Args(
                    auto_import_policy=aws.fsx.DataRepositoryAssociationS3AutoImportPolicyArgs(
                        events=["NEW", "CHANGED", "DELETED"]
                    )
                ),
                tags=a.tags.aws(tier=tier.name),
                opts=self._opts(),
            )
        self._static_volumes(
            tier.name,
            f"{tier.capacity_gib}Gi",
            storage_class_provisioner="kubernetes.io/no-provisioner",
            csi={
                "driver": FSX_CSI,
                "volumeHandle": fs.id,
                "volumeAttributes": {"dnsname": fs.dns_name, "mountname": fs.mount_name},
            },
            mount_options=["flock"],
            driver=driver,
        )

    def _lustre_security_group(self, tier: FsxLustreTier) -> aws.ec2.SecurityGroup:
        a = self._a
        rules_in = []
        rules_out = []
        for lo, hi in LUSTRE_PORTS:
            ports = f"{lo}" if lo == hi else f"{lo}-{hi}"
            rules_in += [
                aws.ec2.SecurityGroupIngressArgs(
                    protocol="tcp", from_port=lo, to_port=hi, self=True, description=f"Lustre {ports} between servers"
                ),
                aws.ec2.SecurityGroupIngressArgs(
                    protocol="tcp",
                    from_port=lo,
                    to_port=hi,
                    security_groups=[a.cluster_security_group_id],
                    description=f"Lustre {ports} from cluster nodes",
                ),
            ]
            rules_out += [
                aws.ec2.SecurityGroupEgressArgs(
                    protocol="tcp", from_port=lo, to_port=hi, self=True, description=f"Lustre {ports} between servers"
                ),
                aws.ec2.SecurityGroupEgressArgs(
                    protocol="tcp",
                    from_port=lo,
                    to_port=hi,
                    security_groups=[a.cluster_security_group_id],
                    description=f"Lustre {ports} to cluster nodes",
                ),
            ]
        sg = aws.ec2.SecurityGroup(
            f"{self._n}-{tier.name}-sg",
            vpc_id=a.vpc_id,
            description=f"FSx for Lustre {tier.name}: Lustre ports from cluster nodes only",
            ingress=rules_in,
            egress=rules_out,
            tags=a.tags.aws(Name=f"{a.cluster_name}-{tier.name}", tier=tier.name),
            opts=self._opts(),
        )
        # The nodes' (cluster) security group only admits itself; Lustre servers also open connections to
        # clients on the same ports.
        for lo, hi in LUSTRE_PORTS:
            aws.vpc.SecurityGroupIngressRule(
                f"{self._n}-{tier.name}-to-nodes-{lo}",
                security_group_id=a.cluster_security_group_id,
                referenced_security_group_id=sg.id,
                ip_protocol="tcp",
                from_port=lo,
                to_port=hi,
                description=f"Lustre {lo}-{hi} from FSx tier {tier.name}",
                tags=a.tags.aws(tier=tier.name),
                opts=self._opts(),
            )
        return sg

    # -- EFS ---------------------------------------------------------------------------------------------
    def _efs_driver(self) -> k8s.helm.v3.Release:
        a = self._a
        role = aws.iam.Role(
            f"{self._n}-efs-csi",
            assume_role_policy=iam.assume_role_policy("pods.eks.amazonaws.com", tag_session=True),
            description=f"EFS CSI controller of {a.cluster_name} (EKS Pod Identity)",
            tags=a.tags.aws(),
            opts=self._opts(),
        )
        aws.iam.RolePolicyAttachment(
            f"{self._n}-efs-csi",
            role=role.name,
            policy_arn=iam.managed_policy(a.site.region, "service-role/AmazonEFSCSIDriverPolicy"),
            opts=self._opts(),
        )
        association = aws.eks.PodIdentityAssociation(
            f"{self._n}-efs-csi",
            cluster_name=a.cluster_name,
            namespace=CSI_NAMESPACE,
            service_account=EFS_CONTROLLER_SA,
            role_arn=role.arn,
            tags=a.tags.aws(),
            opts=self._opts(depends_on=a.depends_on),
        )
        return helm.release(
            f"{self._n}-efs-csi",
            versions.AWS_EFS_CSI_DRIVER,
            name="aws-efs-csi-driver",
            namespace=CSI_NAMESPACE,
            values={
                "controller": {"serviceAccount": {"create": True, "name": EFS_CONTROLLER_SA}},
                "node": {"tolerations": [{"operator": "Exists"}]},  # GPU and tenant taints
            },
            opts=self._k8s(depends_on=[association, *a.depends_on]),
        )

    def _efs_tier(self, tier: EfsTier, driver: k8s.helm.v3.Release) -> None:
        a = self._a
        key = self._tier_key(tier.name, "EFS data")
        fs = aws.efs.FileSystem(
            f"{self._n}-{tier.name}",
            encrypted=True,
            kms_key_id=key.arn,
            throughput_mode="elastic",
            performance_mode="generalPurpose",
            tags=a.tags.aws(Name=f"{a.cluster_name}-{tier.name}", tier=tier.name),
            opts=self._stateful(depends_on=[key]),  # explicit for offline plans, as for FSx
        )
        aws.efs.BackupPolicy(
            f"{self._n}-{tier.name}",
            file_system_id=fs.id,
            backup_policy=aws.efs.BackupPolicyBackupPolicyArgs(status="ENABLED"),
            opts=self._opts(),
        )
        aws.efs.FileSystemPolicy(
            f"{self._n}-{tier.name}",
            file_system_id=fs.id,
            policy=fs.arn.apply(_efs_tls_only_policy),
            opts=self._opts(),
        )
        sg = aws.ec2.SecurityGroup(
            f"{self._n}-{tier.name}-sg",
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
            opts=self._opts(),
        )
        for i, subnet in enumerate(a.private_subnet_ids):
            aws.efs.MountTarget(
                f"{self._n}-{tier.name}-{i}",
                file_system_id=fs.id,
                subnet_id=subnet,
                security_groups=[sg.id],
                opts=self._opts(),
            )
        access_points = {}
        for tenant in self._tenants():
            uid = tenant_uid(tenant)
            access_points[tenant] = aws.efs.AccessPoint(
                f"{self._n}-{tier.name}-{tenant}",
                file_system_id=fs.id,
                root_directory=aws.efs.AccessPointRootDirectoryArgs(
                    path=f"/tenants/{tenant}",
                    creation_info=aws.efs.AccessPointRootDirectoryCreationInfoArgs(
                        owner_uid=uid, owner_gid=uid, permissions="750"
                    ),
                ),
                posix_user=aws.efs.AccessPointPosixUserArgs(uid=uid, gid=uid),
                tags=a.tags.aws(tenant=tenant, tier=tier.name),
                opts=self._opts(),
            )
        k8s.storage.v1.StorageClass(
            f"{self._n}-{tier.name}-sc",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=tier.name, labels=a.tags.labels()),
            provisioner=EFS_CSI,
            reclaim_policy="Retain",
            volume_binding_mode="Immediate",
            mount_options=["tls"],
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
            opts=self._k8s(depends_on=[driver]),
        )
        for tenant, ap in access_points.items():
            self._tenant_volume(
                tier.name,
                tenant,
                "1Ti",  # EFS is elastic; PV capacity is required by the API but not enforced
                {"driver": EFS_CSI, "volumeHandle": pulumi.Output.concat(fs.id, "::", ap.id)},
                ["tls"],
                driver,
            )

    # -- static volumes shared by FSx tiers ----------------------------------------------------------
    def _static_volumes(
        self,
        tier: str,
        capacity: str,
        *,
        storage_class_provisioner: str,
        csi: dict[str, Any],
        mount_options: list[str],
        driver: k8s.helm.v3.Release,
    ) -> None:
        """A StorageClass that never provisions, and one PV per tenant pre-bound to a claim named after the
        tier in the tenant's namespace: tenants share one file system without creating new ones."""
        k8s.storage.v1.StorageClass(
            f"{self._n}-{tier}-sc",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=tier, labels=self._a.tags.labels()),
            provisioner=storage_class_provisioner,
            reclaim_policy="Retain",
            volume_binding_mode="Immediate",
            opts=self._k8s(depends_on=[driver]),
        )
        for tenant in self._tenants():
            self._tenant_volume(tier, tenant, capacity, csi, mount_options, driver)

    def _tenant_volume(
        self, tier: str, tenant: str, capacity: str, csi: Any, mount_options: list[str], driver: k8s.helm.v3.Release
    ) -> None:
        k8s.core.v1.PersistentVolume(
            f"{self._n}-{tier}-{tenant}",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=f"{tier}-{tenant}", labels=self._a.tags.labels(tenant=tenant)),
            spec=k8s.core.v1.PersistentVolumeSpecArgs(
                capacity={"storage": capacity},
                access_modes=["ReadWriteMany"],
                persistent_volume_reclaim_policy="Retain",
                storage_class_name=tier,
                mount_options=mount_options,
                csi=csi,
                claim_ref=k8s.core.v1.ObjectReferenceArgs(namespace=tenant, name=tier),
            ),
            opts=self._k8s(depends_on=[driver]),
        )


def _efs_tls_only_policy(fs_arn: str | None) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "DenyInsecureTransport",
                    "Effect": "Deny",
                    "Principal": {"AWS": "*"},
                    "Action": "*",
                    "Resource": fs_arn or "*",
                    "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                }
            ],
        }
    )
