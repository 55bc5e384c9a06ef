"""Bare-metal storage tiers as Kubernetes objects.

- `nfs` (shared-warm): the NFS CSI driver (versions.NFS_CSI_DRIVER) and a StorageClass on the existing export.
  Dynamic volumes are subdirectories of the export.
- `scratch` (node-local NVMe): the local static provisioner (versions.LOCAL_STATIC_PROVISIONER) and a
  no-provisioner StorageClass. It discovers the bind mount the bootstrap's scratch script makes.
- `parallel-fs` (shared-hot): a StorageClass for the existing file system's CSI driver, which is the vendor's.
- `s3-onprem` (object): the access keys as a Secret and the endpoint as a ConfigMap, in `gpufleet-storage`.

Why:
- Everything that guards data is protected and retained on delete. The NFS and parallel-fs classes use
  reclaimPolicy Retain, which is what keeps their volumes.
- Scratch is disposable by definition: reclaimPolicy Delete, and the provisioner cleans a released volume.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.baremetal.bootstrap import local_volume_dir
from components.kubernetes import helm
from model import versions
from model.conventions import GPU_PRESENT_LABEL, KUBE_SYSTEM, pod_security_labels
from model.nodes import pool_taints
from model.spec import BaremetalSite, NfsTier, OnPremS3Tier, ParallelFsTier, ScratchTier
from model.tags import Tags

STORAGE_NAMESPACE = "gpufleet-storage"
NFS_PROVISIONER = "nfs.csi.k8s.io"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
NFS_MOUNT_OPTIONS = ["nfsvers=4.1", "hard"]


def local_provisioner_values(site: BaremetalSite, tier: ScratchTier) -> dict[str, Any]:
    """Chart values: one class discovering the tier's directory, on GPU nodes, tolerating the pools' taints."""
    taints = {(t.key, t.value, t.effect): t for p in site.node_pools for t in pool_taints(p)}
    return {
        "classes": [
            {
                "name": tier.name,
                "hostDir": local_volume_dir(tier),
                "volumeMode": "Filesystem",
                "namePattern": "*",
            }
        ],
        "nodeSelector": {GPU_PRESENT_LABEL: "true"},
        "tolerations": [t.toleration() for _, t in sorted(taints.items())],
    }


@dataclass(frozen=True)
class StorageArgs:
    site: BaremetalSite
    tags: Tags
    secret: Callable[[str], pulumi.Output[str]]


class BaremetalStorage(pulumi.ComponentResource):
    """CSI drivers, StorageClasses and the object-tier credentials of one bare-metal site (module docstring)."""

    storage_classes: dict[str, k8s.storage.v1.StorageClass]

    def __init__(self, name: str, args: StorageArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:baremetal:Storage", name, None, opts)
        self._prefix = name
        self._args = args
        self._labels = args.tags.labels()
        self.storage_classes = {}
        self._namespace: k8s.core.v1.Namespace | None = None
        nfs_driver: k8s.helm.v3.Release | None = None
        for tier in args.site.storage:
            if isinstance(tier, NfsTier):
                nfs_driver = nfs_driver or self._release("nfs-csi", versions.NFS_CSI_DRIVER, {})
                self._nfs(tier, nfs_driver)
            elif isinstance(tier, ScratchTier):
                chart = versions.LOCAL_STATIC_PROVISIONER
                release = self._release(f"{tier.name}-local", chart, local_provisioner_values(args.site, tier))
                self._scratch(tier, release)
            elif isinstance(tier, ParallelFsTier):
                self._parallel_fs(tier)
            elif isinstance(tier, OnPremS3Tier):
                self._s3(tier)
        self.register_outputs({"storageClasses": sorted(self.storage_classes)})

    def _protected(self, depends_on: list[pulumi.Resource] | None = None) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self, protect=True, retain_on_delete=True, depends_on=depends_on or [])

    def _release(self, suffix: str, chart: versions.Chart, values: dict[str, Any]) -> k8s.helm.v3.Release:
        return helm.release(
            f"{self._prefix}-{suffix}",
            chart,
            name=suffix,
            namespace=KUBE_SYSTEM,
            values=values,
            max_history=10,
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _storage_class(self, name: str, opts: pulumi.ResourceOptions, **fields: Any) -> None:
        self.storage_classes[name] = k8s.storage.v1.StorageClass(
            f"{self._prefix}-{name}-sc",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=name, labels=self._labels),
            opts=opts,
            **fields,
        )

    def _nfs(self, tier: NfsTier, driver: k8s.helm.v3.Release) -> None:
        self._storage_class(
            tier.name,
            self._protected([driver]),
            provisioner=NFS_PROVISIONER,
            parameters={"server": tier.server, "share": tier.path},
            reclaim_policy="Retain",
            volume_binding_mode="Immediate",
            allow_volume_expansion=True,
            mount_options=NFS_MOUNT_OPTIONS,
        )

    def _scratch(self, tier: ScratchTier, provisioner: k8s.helm.v3.Release) -> None:
        self._storage_class(
            tier.name,
            pulumi.ResourceOptions(parent=self, depends_on=[provisioner]),
            provisioner=NO_PROVISIONER,
            reclaim_policy="Delete",
            volume_binding_mode="WaitForFirstConsumer",  # a local volume exists on one node only
        )

    def _parallel_fs(self, tier: ParallelFsTier) -> None:
        self._storage_class(
            tier.name,
            self._protected(),
            provisioner=tier.csi_driver,
            parameters=dict(tier.parameters),
            reclaim_policy="Retain",
            volume_binding_mode="Immediate",
        )

    def _s3(self, tier: OnPremS3Tier) -> None:
        """The object tier's keys and endpoint, in one cluster-admin-only namespace. Workloads get them through
        their own copies or an operator that syncs them. The keys are string_data from secret Outputs, so they
        never appear in plain inputs. The endpoint is `AWS_ENDPOINT_URL`, the variable AWS SDKs and CLIs read."""
        namespace = self._storage_namespace()
        secret = self._args.secret
        k8s.core.v1.Secret(
            f"{self._prefix}-{tier.name}-credentials",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=f"{tier.name}-s3-credentials", namespace=STORAGE_NAMESPACE, labels=self._labels
            ),
            type="Opaque",
            string_data={
                "AWS_ACCESS_KEY_ID": secret(tier.access_key_config),
                "AWS_SECRET_ACCESS_KEY": secret(tier.secret_key_config),
            },
            opts=self._protected([namespace]),
        )
        k8s.core.v1.ConfigMap(
            f"{self._prefix}-{tier.name}-endpoint",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=f"{tier.name}-s3-endpoint", namespace=STORAGE_NAMESPACE, labels=self._labels
            ),
            data={"AWS_ENDPOINT_URL": tier.endpoint},
            opts=self._protected([namespace]),
        )

    def _storage_namespace(self) -> k8s.core.v1.Namespace:
        if self._namespace is None:
            # No workloads run here: Pod Security `restricted` keeps it that way.
            labels = {**self._labels, **pod_security_labels("restricted", ("enforce",))}
            self._namespace = k8s.core.v1.Namespace(
                f"{self._prefix}-namespace",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=STORAGE_NAMESPACE, labels=labels),
                opts=self._protected(),
            )
        return self._namespace
