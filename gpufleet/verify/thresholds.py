"""Pass marks of the acceptance suite, each derived from the estate and the catalog that built it.

- Fabric: NCCL `all_reduce_perf` bus bandwidth across nodes. nccl-tests defines busbw so that it "should reflect
  the speed of the hardware bottleneck" (NVIDIA/nccl-tests doc/PERFORMANCE.md); across nodes the bottleneck is a
  node's network, so the mark is the node's network bandwidth in GB/s times NCCL_EFFICIENCY. The node bandwidth
  comes from the catalog (`network_performance`, EC2 DescribeInstanceTypes) on AWS, and from the inventory on bare
  metal (`ib_rate_gbps` x `ib_ports` of the pool's slowest server).
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

# The healthy reference runs AWS publishes for 2 nodes (aws-samples/awsome-distributed-training
# micro-benchmarks/nccl-tests/README.md, "Results") reach 487 GB/s busbw on p5.48xlarge (catalog: 3200 Gbit/s =
# 400 GB/s, ratio 1.22) and 78.3 GB/s on p4de.24xlarge (400 Gbit/s = 50 GB/s, ratio 1.57). A healthy fabric
# therefore clears the node's line rate; 0.8 of it leaves room for run-to-run spread while failing a fabric that
# fell back to TCP sockets or lost a fifth of its links.
NCCL_EFFICIENCY = 0.8
NCCL_EFFICIENCY_SOURCE = (
    "busbw vs the node's network bandwidth (NVIDIA/nccl-tests doc/PERFORMANCE.md); efficiency 0.8, below the "
    "ratios of AWS's published 2-node runs (aws-samples/awsome-distributed-training "
    "micro-benchmarks/nccl-tests/README.md: p5.48xlarge 487 GB/s of 400, p4de.24xlarge 78.3 GB/s of 50)"
)
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


def node_network_gbps(spec: EstateSpec, pool: NodePool) -> tuple[float | None, str]:
    """A pool node's network bandwidth in Gbit/s and where it comes from (None with the reason when unknown)."""
    rate, where = kinds.of(spec.site_of_pool(pool.name)).node_network_gbit(spec, pool.name)
    return (None if rate is None else float(rate)), where


def nccl_busbw_threshold(spec: EstateSpec, pool: NodePool) -> tuple[Threshold | None, str]:
    """The multi-node all-reduce mark of a pool (GB/s), or None with the reason it cannot be derived."""
    gbps, where = node_network_gbps(spec, pool)
    if gbps is None:
        return None, where
    value = round(gbps / 8 * NCCL_EFFICIENCY, 1)
    return Threshold(value, "GB/s", f"{gbps:g} Gbit/s / 8 x {NCCL_EFFICIENCY} ({where}; {NCCL_EFFICIENCY_SOURCE})"), ""


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
