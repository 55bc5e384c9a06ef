"""Storage sizing in `gpufleet size` (review of #32, item 9): GB/s per training node and the FSx for Lustre
PERSISTENT_2 capacity that feeds a pool's peak (FSx for Lustre User Guide, throughput per TiB by tier)."""

from __future__ import annotations

from fractions import Fraction

from gpufleet.render.sizing import sizing_text
from gpufleet.sizing.storage import class_storage, fsx_capacity_gib, pool_storage
from tests.sizing.test_cases import FT70B, on

STORAGE = {"dataset_gb": 20000, "dataset_passes": 3, "checkpoint_gb": 1000, "checkpoints_per_run": 336}


def test_a_64_gpu_fine_tune_is_planned_at_the_per_node_guidance_and_gets_an_fsx_size_per_tier() -> None:
    # One run: 20,000 GB × 3 passes + 1,000 GB × 336 checkpoints = 396,000 GB over 336 h on 8 p5.48xlarge:
    # 396,000 ÷ (336 × 3,600) ÷ 8 = 0.0409 GB/s a node, below the estate's 5 GB/s (FsxLustreTier default), so
    # 5 GB/s × 9 nodes at peak (8 + 1 spare) = 45 GB/s. At 1,000 MB/s/TiB: 45 TiB = 46,080 GiB -> 48,000 (2,400
    # steps, 46.9 GB/s); at 125 MB/s/TiB: 360 TiB = 368,640 GiB -> 369,600.
    c = dict(FT70B, gpus_per_run=64, hours_per_run=336, hours_on={}, deadline_hours=400, storage=STORAGE)
    r = on(None, c, period="month", hours_per_device=730)
    (cs,) = r.classes
    st = class_storage(cs)
    assert st is not None and st.average_gbps_per_node == Fraction(396000, 336 * 3600 * 8)
    assert st.planned_gbps_per_node == 5 and st.gb_stored == 22000
    (rec,) = r.pools
    ps = pool_storage(rec, [st])
    assert ps is not None and (ps.nodes, ps.gbps) == (9, 45)
    assert ps.capacity_gib == {125: 369600, 250: 184800, 500: 93600, 1000: 48000}
    assert "Shared storage" in sizing_text(r)


def test_fsx_capacity_holds_the_data_when_the_data_needs_more_than_the_throughput() -> None:
    # 1 GB/s at 1,000 MB/s/TiB is 1 TiB, but 100,000 GB is 90.95 TiB = 93,132.3 GiB -> 93,600.
    assert fsx_capacity_gib(Fraction(1), Fraction(100000), 1000) == 93600
    assert fsx_capacity_gib(Fraction(1), Fraction(0), 1000) == 1200  # the smallest PERSISTENT_2 file system
