"""How a real EFS mount is made and judged, as the upstream driver and the EFS user guide describe it.

- `csi_mount`: the mount the EFS CSI driver makes for a PersistentVolume: aws-efs-csi-driver
  pkg/driver/node.go, NodePublishVolume and parseVolumeId, at tag helm-chart-aws-efs-csi-driver-4.4.1 (the chart
  gpufleet pins). `tls` is on unless the volume context sets encryptInTransit false, an access point in the volume
  handle adds `accesspoint=<id>` and `tls`, `ro` when read-only, then the PV's mount options; the driver never
  adds `iam`.
- `client_allowed`: whether EFS lets an NFS client do an action, per "Using IAM to control file system data
  access" (https://docs.aws.amazon.com/efs/latest/ug/iam-access-control-nfs-efs.html): with no file-system policy
  the default policy grants full access to any client that reaches a mount target; with a policy, an explicit
  Deny wins, and otherwise an Allow in the file-system policy (or, for a client mounting with IAM, in its identity
  policy) is needed. A client mounting without the `iam` option is anonymous. The mount helper reaches the file
  system through a mount target (`elasticfilesystem:AccessedViaMountTarget` is true) and `tls` makes the
  connection secure (`aws:SecureTransport`).
"""

from __future__ import annotations

import fnmatch
import json
import posixpath
from dataclasses import dataclass
from typing import Any

CONDITION_KEYS = {"aws:SecureTransport", "elasticfilesystem:AccessedViaMountTarget"}


@dataclass(frozen=True)
class Mount:
    source: str  # <fs-id>:<path>
    options: tuple[str, ...]

    @property
    def anonymous(self) -> bool:
        return "iam" not in self.options

    @property
    def tls(self) -> bool:
        return "tls" in self.options


def csi_mount(volume_handle: str, context: dict[str, str], mount_options: list[str], read_only: bool = False) -> Mount:
    tokens = volume_handle.split(":")
    if tokens[0] in ("efs", "s3files"):
        tokens = tokens[1:]
    fs, path, access_point = [*tokens, "", "", ""][:3]
    options: list[str] = []
    encrypt = context.get("encryptInTransit", "true").lower() == "true"
    if access_point:
        options += [f"accesspoint={access_point}", "tls"]
    if encrypt and "tls" not in options:
        options.append("tls")
    if read_only:
        options.append("ro")
    for flag in (f.lower() for f in mount_options):
        if flag == "tls" and not encrypt:
            raise ValueError("tls in mountOptions with encryptInTransit false: the driver refuses the mount")
        if not flag.startswith("awscredsuri") and flag not in options:
            options.append(flag)
    return Mount(f"{fs}:{posixpath.normpath(path) if path else '/'}", tuple(options))


def _matches(statement: dict[str, Any], action: str, context: dict[str, bool]) -> bool:
    actions = statement.get("Action", [])
    if not any(fnmatch.fnmatchcase(action, a) for a in ([actions] if isinstance(actions, str) else actions)):
        return False
    principal = statement.get("Principal")
    if principal not in ("*", {"AWS": "*"}):
        raise ValueError(f"principal {principal} is not modelled here")
    for operator, pairs in statement.get("Condition", {}).items():
        if operator != "Bool" or not set(pairs) <= CONDITION_KEYS:
            raise ValueError(f"condition {operator} {pairs} is not modelled here")
        if any(context[key] != (value.lower() == "true") for key, value in pairs.items()):
            return False
    return True


def client_allowed(policy: str | None, action: str, mount: Mount, identity_allows: bool = False) -> bool:
    if policy is None:
        return True
    context = {"aws:SecureTransport": mount.tls, "elasticfilesystem:AccessedViaMountTarget": True}
    statements = json.loads(policy)["Statement"]
    if any(s["Effect"] == "Deny" and _matches(s, action, context) for s in statements):
        return False
    if not mount.anonymous and identity_allows:
        return True
    return any(s["Effect"] == "Allow" and _matches(s, action, context) for s in statements)
