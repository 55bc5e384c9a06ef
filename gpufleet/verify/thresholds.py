"""Pass marks of the acceptance suite, each derived from the estate and the catalog that built it.

- Fabric: NCCL `all_reduce_perf` bus bandwidth across nodes. The mark is NCCL_EFFICIENCY of the busbw a healthy
  fabric reaches (`catalog.node_busbw`, the figure `gpufleet size` times all-reduces with): AWS's published run
  for the instance type, else the node's line rate. The line rate comes from the catalog (`network_performance`,
  EC2 DescribeInstanceTypes) on AWS, and from the inventory on bare metal (`ib_rate_gbps` x `ib_ports` of the
  pool's slowest server).
- Storage: each training node must read and write a shared-hot tier at the GB/s the estate's throughput warning
  assumes (`FsxLustreTier.min_gbps_per_training_node`, components/aws/storage.py `throughput_warning`).
"""

from __future__ import annotations

from dataclasses import dataclass

from model import catalog, kinds
from model.spec import (
    EstateSpec,
    FsxLustreTier,
    NodePool,
    ParallelFsTier,
)

# 0.8 of the healthy figure leaves room for run-to-run spread while failing a fabric that fell back to TCP sockets
# or lost a fifth of its links. AWS's published runs clear the line rate (model/catalog/nccl_busbw.yaml); a node
# without one is judged against its line rate, scaled by the published ratio of its GPU generation when it has one.
NCCL_EFFICIENCY = 0.8
NCCL_EFFICIENCY_SOURCE = "busbw, the speed of the hardware bottleneck (NVIDIA/nccl-tests doc/PERFORMANCE.md)"
GIB = 1024**3
NCCL_MIN_BYTES = GIB
NCCL_MAX_BYTES_CAP = 16 * GIB  # the largest size AWS's reference run uses


@dataclass(frozen=True)
class Threshold:
    """`measured >= value` passes; `source` says how the value was derived and from what."""

    value: float
    unit: str
    source: str

    def passes(self, measured: float) -> bool:
        return measured >= self.value


def nccl_busbw_threshold(spec: EstateSpec, pool: NodePool) -> tuple[Threshold | None, str]:
    """The multi-node all-reduce mark of a pool (GB/s), or None with the reason it cannot be derived."""
    kind = kinds.of(spec.site_of_pool(pool.name))
    rate, where = kind.node_network_gbit(spec, pool.name)
    if rate is None:
        return None, where
    gpu, per_node = spec.pool_gpu_model(pool.name), spec.pool_gpus_per_node(pool.name)
    bw = catalog.node_busbw(kind.pool_instance_type(pool.name), rate, gpu, per_node)
    value = round(float(bw.gb_per_s) * NCCL_EFFICIENCY, 1)
    basis = bw.source if bw.measured else f"{bw.source}; {where}"
    return Threshold(
        value, "GB/s", f"{float(bw.gb_per_s):g} GB/s x {NCCL_EFFICIENCY} ({basis}; {NCCL_EFFICIENCY_SOURCE})"
    ), ""


def nccl_max_bytes(gpu: catalog.GpuModel) -> int:
    """Largest all-reduce size: the largest power of two within a quarter of GPU memory, 1-16 GiB."""
    size = NCCL_MIN_BYTES
    while size * 2 <= min(gpu.memory_mib * 1024**2 // 4, NCCL_MAX_BYTES_CAP):
        size *= 2
    return size


def training_node_gbps_default() -> float:
    """The schema's default per-node need (the one home of the figure: the FSx tier's field default)."""
    default = FsxLustreTier.model_fields["min_gbps_per_training_node"].default
    assert isinstance(default, float)
    return default


def training_node_gbps(tier: FsxLustreTier | ParallelFsTier) -> float:
    """GB/s one training node needs from a shared-hot tier: the FSx tier's own setting, else the same default."""
    return tier.min_gbps_per_training_node if isinstance(tier, FsxLustreTier) else training_node_gbps_default()


def storage_threshold(tier: FsxLustreTier | ParallelFsTier) -> Threshold:
    field = (
        f"storage tier {tier.name} min_gbps_per_training_node"
        if isinstance(tier, FsxLustreTier)
        else "the default of FsxLustreTier.min_gbps_per_training_node"
    )
    return Threshold(
        training_node_gbps(tier),
        "GB/s per node",
        f"{field}, the figure the estate's throughput warning uses (components/aws/storage.py throughput_warning)",
    )
