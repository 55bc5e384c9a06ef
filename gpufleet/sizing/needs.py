"""What a workload class needs besides GPUs: an online service's throughput, a training run's storage.

Storage: a run reads its dataset `dataset_passes` times and writes `checkpoints_per_run` checkpoints; over the
run that is an average GB/s per node. A node is planned at the larger of that and the estate's per-node guidance
(`FsxLustreTier.min_gbps_per_training_node`, the figure the FSx throughput warning and `gpufleet verify` use).
An FSx for Lustre PERSISTENT_2 file system delivers its throughput tier (125-1000 MB/s) per TiB of storage
(FSx for Lustre User Guide, "Performance characteristics of SSD and HDD storage classes",
https://docs.aws.amazon.com/fsx/latest/LustreGuide/ssd-storage.html; "Managing throughput capacity").
"""

from __future__ import annotations

from fractions import Fraction

from pydantic import BaseModel, ConfigDict, Field

from gpufleet.sizing.arithmetic import ceil, q
from model.spec.base import MAX_TEXT


class Model(BaseModel):
    # Numbers finite and strings bounded, as in the estate schema (model.spec.base.Model).
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, str_max_length=MAX_TEXT)


class Throughput(Model):
    """An online service's load and one replica's measured throughput: its replicas follow from them."""

    requests_per_second: float = Field(gt=0, le=10_000_000, description="Peak requests per second to serve.")
    tokens_per_request: float = Field(gt=0, le=10_000_000, description="Tokens generated per request.")
    tokens_per_second_per_replica: float = Field(
        gt=0, le=1e9, description="Tokens per second one replica sustains within the latency objective."
    )
    source: str = Field(min_length=1, description="Where the replica's throughput comes from (a benchmark run).")
    steady_requests_per_second: float | None = Field(
        default=None,
        gt=0,
        le=10_000_000,
        description="Requests per second outside the peak: the always-on floor's replicas (default: the peak's).",
    )

    def _replicas(self, rps: float) -> int:
        return ceil(q(rps) * q(self.tokens_per_request) / q(self.tokens_per_second_per_replica))

    @property
    def replicas(self) -> int:
        """ceil(requests/s × tokens per request ÷ tokens/s per replica), at the peak."""
        return self._replicas(self.requests_per_second)

    @property
    def steady_replicas(self) -> int:
        """The same at steady load (the peak's when no steady_requests_per_second is given), never above it."""
        return min(self.replicas, self._replicas(self.steady_requests_per_second or self.requests_per_second))


class StorageNeed(Model):
    """A training run's data: what it reads and writes to shared storage."""

    dataset_gb: float = Field(ge=0, le=1e9, description="Training data one run reads per pass, in GB.")
    dataset_passes: float = Field(default=1, gt=0, le=10_000, description="Passes (epochs) over the data a run.")
    checkpoint_gb: float = Field(default=0, ge=0, le=1e9, description="One checkpoint's size in GB.")
    checkpoints_per_run: int = Field(default=0, ge=0, le=1_000_000, description="Checkpoints a run writes.")
    checkpoints_kept: int = Field(default=2, ge=0, le=10_000, description="Checkpoints kept on the file system.")

    def gb_moved(self) -> Fraction:
        """GB one run reads and writes: dataset × passes + checkpoint × checkpoints."""
        return q(self.dataset_gb) * q(self.dataset_passes) + q(self.checkpoint_gb) * self.checkpoints_per_run

    def gb_stored(self) -> Fraction:
        """GB on the file system: the dataset and the checkpoints kept."""
        return q(self.dataset_gb) + q(self.checkpoint_gb) * self.checkpoints_kept
