"""Schedulable GPU units of node pools: a MIG slice or a time-sliced replica counts as one unit, as the device
plugin advertises them.

GPUs per node, GPUs at max size and the GPU model are facts of the pool's site kind (model.kinds); EstateSpec's
`pool_*` methods ask them, so the schema's rules, components and tools all count the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

from model import catalog
from model.spec.pools import Sharing

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


def pool_gpu_units(spec: EstateSpec, name: str) -> int:
    """Schedulable GPU units of a pool at max size: MIG slices or time-sliced replicas count apiece."""
    pool = spec.pool(name)
    return gpu_units(spec.pool_gpu_capacity(name), pool.sharing, spec.pool_gpu_model(name))
