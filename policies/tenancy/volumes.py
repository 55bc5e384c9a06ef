"""Tenant volumes on shared file systems: each tenant mounts a directory of its own, never the whole file system.

What a PersistentVolume mounts is read the way its CSI driver reads it at the versions gpufleet pins:
- FSx for Lustre (`fsx.csi.aws.com`): `<dnsname>@tcp:/<mountname>` from the volume attributes, `fsx` when
  mountname is unset (aws-fsx-csi-driver pkg/driver/node.go, NodePublishVolume); a mountname with a path,
  `<mount name>/<dir>`, mounts that directory (a Lustre fileset).
- EFS (`efs.csi.aws.com`): the volume handle `[efs:]<fs-id>[:<path>[:<access point>]]`; an access point confines
  the mount to its root directory and POSIX user (aws-efs-csi-driver pkg/driver/node.go, parseVolumeId).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from pulumi_policy import ReportViolation, StackValidationArgs

from policies.common import as_dict, get, is_true, k8s_name, objects, tenant_namespaces

FSX_CSI = "fsx.csi.aws.com"
EFS_CSI = "efs.csi.aws.com"
EFS_HANDLE_TYPES = ("efs", "s3files")
ROOT = "/"


@dataclass(frozen=True)
class VolumeScope:
    """The part of a file system a volume mounts: `directory` is a path ("/" is all of it) or an access point."""

    file_system: str
    directory: str
    read_only: bool

    def overlaps(self, other: VolumeScope) -> bool:
        if self.file_system != other.file_system:
            return False
        a, b = self.directory, other.directory
        if not (a.startswith("/") and b.startswith("/")):  # access points: the same one, or apart
            return a == b
        return a == b or a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/")


def _path(path: str) -> str:
    return posixpath.normpath("/" + path.strip("/")) if path.strip("/") else ROOT


def volume_scope(spec: dict[str, Any]) -> VolumeScope | None:
    """What a PersistentVolume spec mounts on a shared file system, or None for other drivers."""
    csi = as_dict(spec.get("csi"))
    handle = str(csi.get("volumeHandle") or "")
    read_only = is_true(csi.get("readOnly"))
    if csi.get("driver") == FSX_CSI:
        mountname = str(as_dict(csi.get("volumeAttributes")).get("mountname") or "fsx")
        _, _, directory = mountname.partition("/")
        return VolumeScope(f"FSx for Lustre {handle}", _path(directory), read_only)
    if csi.get("driver") == EFS_CSI:
        tokens = handle.split(":")
        if tokens[0] in EFS_HANDLE_TYPES:
            tokens = tokens[1:]
        fs, path, access_point = [*tokens, "", "", ""][:3]
        directory = f"access point {access_point}" if access_point else _path(path)
        return VolumeScope(f"EFS {fs}", directory, read_only)
    return None


def tenant_volumes_scoped(args: StackValidationArgs, report: ReportViolation) -> None:
    """A tenant's volume on FSx for Lustre or EFS mounts a directory of its own, and no two tenants share a
    directory (or one inside another's) unless both mount it read-only."""
    tenants = tenant_namespaces(args.resources)
    scoped: list[tuple[str, str, VolumeScope]] = []
    for pv in objects(args.resources, "PersistentVolume"):
        spec = as_dict(get(pv.props, "spec"))
        tenant = tenants.get(str(get(spec, "claimRef.namespace") or ""))
        scope = volume_scope(spec)
        if tenant is None or scope is None:
            continue
        name = k8s_name(pv.props, pv.name)
        if scope.directory == ROOT:
            report(
                f"PersistentVolume {name} gives tenant {tenant} the whole {scope.file_system} file system; mount a "
                "directory of its own (Lustre: mountname <mount name>/<dir>; EFS: an access point)",
                None,
            )
        scoped.append((tenant, name, scope))
    for (t1, n1, s1), (t2, n2, s2) in combinations(scoped, 2):
        if ROOT in (s1.directory, s2.directory):
            continue  # reported above
        if t1 != t2 and s1.overlaps(s2) and not (s1.read_only and s2.read_only):
            where = s1.directory if s1.directory == s2.directory else f"{s1.directory} and {s2.directory}"
            report(
                f"tenants {t1} and {t2} share {where} of {s1.file_system} (PersistentVolumes {n1}, {n2}); give "
                "each tenant its own directory, or mount what they share read-only",
                None,
            )
