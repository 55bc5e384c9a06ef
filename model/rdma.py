"""The extended resources fabrics are advertised as: what a pod asks for to use a fabric, and what Kueue leaves to
the scheduler."""

from __future__ import annotations

from typing import TypeGuard

from model import queues
from model.efa import efa_interfaces
from model.spec import AwsNodePool, EfaFabric, EstateSpec, InfinibandFabric, NodePool, RoceFabric, Site
from model.spec.sites import Fabric

EFA_RESOURCE = "vpc.amazonaws.com/efa"  # the AWS EFA device plugin's resource: pods request one per EFA interface
RDMA_RESOURCE_PREFIX = "rdma"  # the RDMA shared device plugin's resource prefix: pods request rdma/<name>
SRIOV_RESOURCE_PREFIX = "nvidia.com"  # the Network Operator's sriovNetworkOperator.resourcePrefix
EPHEMERAL_STORAGE = "ephemeral-storage"  # a pod's node-local scratch (emptyDir, logs, writable layers)
HUGEPAGES_PREFIX = "hugepages-"  # hugepages-2Mi, hugepages-1Gi (DPDK and RoCE jobs)


def rdma_shared_resource_name(fabric: InfinibandFabric) -> str:
    """`resourceName` of the fabric's RDMA shared devices; pods request `rdma/<this>: 1`."""
    return "shared_" + fabric.name.replace("-", "_")


def sriov_resource_name(fabric: InfinibandFabric | RoceFabric) -> str:
    """The SR-IOV device-plugin resource of a fabric's VFs (letters, digits and `_` only); pods request
    `nvidia.com/<this>`."""
    suffix = "ib" if isinstance(fabric, InfinibandFabric) else "roce"
    return f"{fabric.name.replace('-', '_')}_{suffix}"


def ufm_secret_name(fabric: InfinibandFabric) -> str:
    """The Secret, in the Network Operator's namespace, that holds ib-kubernetes' UFM address and credentials (the
    NicClusterPolicy's `ibKubernetes.ufmSecret`)."""
    return f"{fabric.name}-ufm"


def sriov_network(fabric: InfinibandFabric | RoceFabric, namespace: str) -> str | None:
    """The NetworkAttachmentDefinition in `namespace` whose pods get one of the fabric's SR-IOV virtual functions,
    or None when the namespace has none. RoCE: the per-namespace SriovNetwork, whose NetworkAttachmentDefinition
    the SR-IOV operator writes into `networkNamespace` under the SriovNetwork's own name
    (k8snetworkplumbingwg/sriov-network-operator, "SriovNetwork"). InfiniBand: the partition-key network of a
    tenant that has a partition key."""
    if isinstance(fabric, RoceFabric):
        return f"{fabric.name}-{namespace}"
    return f"{fabric.name}-pkey" if namespace in fabric.partition_keys else None


def uses_sriov(fabric: Fabric) -> TypeGuard[InfinibandFabric | RoceFabric]:
    """Whether pods reach the fabric through SR-IOV virtual functions: every RoCE fabric, and InfiniBand with
    `device_plugin: sriov` (the Network Operator's SR-IOV operator creates and advertises them)."""
    return isinstance(fabric, RoceFabric) or (isinstance(fabric, InfinibandFabric) and fabric.device_plugin == "sriov")


def node_device_prefixes(spec: EstateSpec) -> list[str]:
    """Resource-name prefixes of the per-node resources a job asks for beside its GPUs: EFA interfaces, RDMA
    devices, SR-IOV virtual functions of the estate's fabrics, hugepages, ephemeral storage.

    Kueue's quota check blocks a workload that requests a resource its ClusterQueue does not cover
    (pkg/scheduler/flavorassigner/flavorassigner.go at the pinned tag: "resource %s unavailable in ClusterQueue"),
    unless the Configuration's `resources.excludeResourcePrefixes` drops it first (pkg/workload/workload.go,
    dropExcludedResources: `strings.HasPrefix`). These are per-node devices the scheduler and device plugins
    already bound; quota stays on GPUs, CPU and memory. Every cluster excludes the estate's whole list, so a
    MultiKueue manager admits what any worker runs.
    """
    sriov = {
        f"{SRIOV_RESOURCE_PREFIX}/{sriov_resource_name(f)}" for s in spec.sites for f in s.fabrics if uses_sriov(f)
    }
    # Node-local ephemeral storage is per-node too: the scheduler and the kubelet enforce it, and a ClusterQueue
    # that does not cover it would block every pod that requests it.
    return [EFA_RESOURCE, f"{RDMA_RESOURCE_PREFIX}/", HUGEPAGES_PREFIX, EPHEMERAL_STORAGE, *sorted(sriov)]


def fabric_requests(spec: EstateSpec, site: Site, pool: NodePool) -> dict[str, str]:
    """Extended resources one pod of a multi-node job on `pool` requests: all of a node's GPUs and the devices of
    the pool's fabric (one per EFA interface of the instance type; one shared RDMA device)."""
    out = {queues.gpu_resource_name(site, pool): str(spec.pool_gpus_per_node(pool.name))}
    fabric = next((f for f in site.fabrics if f.name == pool.fabric), None)
    if isinstance(fabric, EfaFabric) and isinstance(pool, AwsNodePool):
        out[EFA_RESOURCE] = str(sum(1 for s in efa_interfaces(pool.instance_type) if s.is_efa))
    elif isinstance(fabric, InfinibandFabric) and fabric.device_plugin == "rdma-shared":
        out[f"{RDMA_RESOURCE_PREFIX}/{rdma_shared_resource_name(fabric)}"] = "1"
    return out
