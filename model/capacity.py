"""GPU capacity of node pools: the one home for GPUs per node, GPUs at max size, the GPU model, and schedulable
GPU units (a MIG slice or a time-sliced replica counts as one unit, as the device plugin advertises them).

EstateSpec's `pool_*` methods delegate here, so the schema's rules, components and tools all count the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

from model import catalog
from model.spec.aws import AwsNodePool
from model.spec.baremetal import BaremetalNodePool
from model.spec.pools import Sharing
from model.spec.sites import AwsSite, BaremetalSite

if TYPE_CHECKING:
    from model.spec.estate import EstateSpec


def units_per_gpu(sharing: Sharing, model: catalog.GpuModel) -> int:
    """Schedulable units one GPU gives: 1 whole, `replicas` time-sliced, or the MIG profile's slices per GPU."""
    match sharing.mode:
        case "whole":
            return 1
        case "time-slicing":
            return sharing.replicas or 1
        case "mig":
            profile = model.mig_profile(sharing.mig_profile or "")
            return profile.per_gpu if profile else 1
        case _:
            assert_never(sharing.mode)


def gpu_units(gpus: int, sharing: Sharing, model: catalog.GpuModel) -> int:
    return gpus * units_per_gpu(sharing, model)


def pool_gpu_model(spec: EstateSpec, name: str) -> catalog.GpuModel:
    """The pool's GPU model: the instance type's (catalog), or its servers' (one model per pool, a schema rule)."""
    site, pool = spec.site_of_pool(name), spec.pool(name)
    match site:
        case AwsSite():
            assert isinstance(pool, AwsNodePool)
            return pool.gpu_model
        case BaremetalSite():
            assert isinstance(pool, BaremetalNodePool)
            return catalog.gpu_model(spec.pool_servers(site, pool)[0].gpu_model)
        case _:
            assert_never(site)


def pool_gpus_per_node(spec: EstateSpec, name: str) -> int:
    """GPUs of one node: the instance type's, or the largest server of a bare-metal pool."""
    site, pool = spec.site_of_pool(name), spec.pool(name)
    match site:
        case AwsSite():
            assert isinstance(pool, AwsNodePool)
            return pool.gpus_per_node
        case BaremetalSite():
            assert isinstance(pool, BaremetalNodePool)
            return max((s.gpu_count for s in spec.pool_servers(site, pool)), default=0)
        case _:
            assert_never(site)


def pool_gpu_capacity(spec: EstateSpec, name: str) -> int:
    """GPUs a pool offers at max size (AWS: max nodes x GPUs per instance; bare metal: its servers)."""
    site, pool = spec.site_of_pool(name), spec.pool(name)
    match site:
        case AwsSite():
            assert isinstance(pool, AwsNodePool)
            return pool.scaling.max * pool.gpus_per_node
        case BaremetalSite():
            assert isinstance(pool, BaremetalNodePool)
            return sum(s.gpu_count for s in spec.pool_servers(site, pool))
        case _:
            assert_never(site)


def pool_gpu_units(spec: EstateSpec, name: str) -> int:
    """Schedulable GPU units of a pool at max size: MIG slices or time-sliced replicas count apiece."""
    pool = spec.pool(name)
    return gpu_units(pool_gpu_capacity(spec, name), pool.sharing, pool_gpu_model(spec, name))
