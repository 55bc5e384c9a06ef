"""The extended resources RDMA fabrics are advertised as: what a pod asks for to use a fabric."""

from __future__ import annotations

from model.spec import InfinibandFabric

RDMA_RESOURCE_PREFIX = "rdma"  # the RDMA shared device plugin's resource prefix: pods request rdma/<name>


def rdma_shared_resource_name(fabric: InfinibandFabric) -> str:
    """`resourceName` of the fabric's RDMA shared devices; pods request `rdma/<this>: 1`."""
    return "shared_" + fabric.name.replace("-", "_")
