"""Values a server is told about itself, typed by what they are: driver versions, device and port names, mount
paths, Kubernetes labels, user and cluster names.

These reach the root scripts that bootstrap inventory servers (components/baremetal/templates), and the node
user data on AWS. The scripts quote every value as well; a type here keeps a value that means something else
out of the review in the first place.
"""

from __future__ import annotations

import posixpath
import re
from typing import Annotated

from pydantic import AfterValidator, Field

from model.spec.net import check_host

# NVIDIA driver releases are numbered <branch>.<minor>[.<patch>] (580.126.20, 550.54.15), what
# `nvidia-smi --query-gpu=driver_version` prints and what the GPU Operator's driver.version names.
DriverVersion = Annotated[
    str,
    Field(
        pattern=r"^[0-9]{3}\.[0-9]{1,3}(\.[0-9]{1,3})?$",
        description="An NVIDIA driver version as nvidia-smi reports it, e.g. `580.126.20`.",
    ),
]
# A whole NVMe namespace block device, /dev/nvme<controller>n<namespace> (the Linux kernel's naming,
# drivers/nvme/host/core.c at v6.8, nvme_alloc_ns): no partitions, which the scratch tier would not own.
NvmeDevice = Annotated[
    str, Field(pattern=r"^/dev/nvme[0-9]{1,3}n[0-9]{1,4}$", description="An NVMe disk, e.g. `/dev/nvme1n1`.")
]
# An RDMA device (HCA) name as ibstat lists it: mlx5_0, or a udev-renamed ibp23s0 / rocep1s0f0 (IB_DEVICE_NAME_MAX
# is 64 bytes, include/rdma/ib_verbs.h at v6.8).
HcaPort = Annotated[
    str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_]{0,62}$", description="An HCA as ibstat names it, e.g. `mlx5_0`.")
]
# A Linux network interface name: at most 15 bytes (IFNAMSIZ 16 with its NUL), no `/`, `:` or white space
# (net/core/dev.c at v6.8, dev_valid_name).
InterfaceName = Annotated[
    str,
    Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$", description="A host network interface, e.g. `ib0`."),
]


def _absolute_path(value: str) -> str:
    if ".." in value.split("/"):
        raise ValueError(f"{value!r} must not contain `..`")
    return value


MountPath = Annotated[
    str,
    Field(
        pattern=r"^/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$",
        max_length=255,
        description="An absolute path of letters, digits, `.`, `_`, `-` and `/`, e.g. `/scratch`.",
    ),
    AfterValidator(_absolute_path),
]


def _export_path(value: str) -> str:
    if not value.startswith("/"):
        raise ValueError(f"{value[:80]!r}: an NFS export path is absolute (it starts with `/`), e.g. `/export/home`")
    if any(not c.isprintable() for c in value):
        raise ValueError(f"{value[:80]!r}: an NFS export path holds no control characters")
    if posixpath.normpath(value) != value or "//" in value:
        raise ValueError(
            f"{value[:80]!r}: write the export path normalized ({posixpath.normpath(value).replace('//', '/')!r}): "
            "no `..`, `.`, doubled or trailing `/`, since the server matches the path as the client sends it"
        )
    return value


# An NFS server's export, as exportfs lists it and the NFS CSI driver's `share` parameter takes it.
NfsExportPath = Annotated[
    str,
    Field(max_length=1024, description="The exported directory on the server, absolute, e.g. `/export/home`."),
    AfterValidator(_export_path),
]

# Kubernetes labels (kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set):
# a value is at most 63 characters, alphanumeric at both ends with `-`, `_`, `.` between; a key is an optional DNS
# subdomain prefix (at most 253) and `/`, then a name like a value but not empty.
_LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def _label_key(value: str) -> str:
    prefix, slash, name = value.rpartition("/")
    if slash and (len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        raise ValueError(f"label key {value!r}: the prefix before `/` must be a DNS subdomain of at most 253")
    if not re.fullmatch(_LABEL_NAME, name):
        raise ValueError(
            f"label key {value!r}: the name must be 1..63 letters, digits, `-`, `_` or `.`, alphanumeric at both ends"
        )
    return value


LabelKey = Annotated[str, Field(max_length=317), AfterValidator(_label_key)]
LabelValue = Annotated[
    str,
    Field(
        pattern=f"^({_LABEL_NAME})?$",
        max_length=63,
        description="A Kubernetes label value: at most 63 letters, digits, `-`, `_`, `.`, alphanumeric at both ends.",
    ),
]
Labels = dict[LabelKey, LabelValue]

# A login name as useradd(8) advises it (CAVEATS: `[a-z_][a-z0-9_-]*[$]?`, at most 32 characters), without the
# trailing `$` of Samba machine accounts.
_UNIX_USER = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
UnixUser = Annotated[str, Field(pattern=f"^{_UNIX_USER.pattern}$", description="A login name, e.g. `root`.")]


def _bastion(value: str) -> str:
    user, at, host = value.rpartition("@")
    if at and not _UNIX_USER.fullmatch(user):
        raise ValueError(f"{value!r}: the user before `@` must be a login name (lower-case letters, digits, _ and -)")
    check_host(host)
    return value


Bastion = Annotated[
    str,
    Field(max_length=300, description="A bastion to jump through, `host` or `user@host`."),
    AfterValidator(_bastion),
]
# EKS CreateCluster `name`: alphanumeric, `-` and `_`, starting alphanumeric, at most 100 characters
# (docs.aws.amazon.com/eks/latest/APIReference/API_CreateCluster.html).
EksClusterName = Annotated[str, Field(pattern=r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$")]
# An AWS region code (us-east-1, ap-southeast-2, us-gov-west-1).
AwsRegionCode = Annotated[str, Field(pattern=r"^[a-z]{2}(-[a-z]+)+-[0-9]{1,2}$")]
