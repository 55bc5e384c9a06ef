"""Storage sizing in `gpufleet size` (review of #32, item 9): GB/s per training node and the FSx for Lustre
PERSISTENT_2 capacity that feeds a pool's peak (FSx for Lustre User Guide, throughput per TiB by tier)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from gpufleet.render.sizing import sizing_text
from gpufleet.sizing.report import SizingReport, size
from gpufleet.sizing.storage import SiteStorage, class_storage, fsx_capacity_gib, pool_storage, site_storage
from model.load import parse_estate
from tests.conftest import example_estate
from tests.sizing.helpers import wfile
from tests.sizing.test_cases import FT70B, TODAY, on

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


def _onprem_storage(*tiers: dict[str, Any]) -> SizingReport:
    """ft70b with storage on the onprem stack's owned `train` pool (site dc1), the site's tiers plus `tiers`."""
    raw = example_estate("onprem")
    raw["sites"][0]["storage"] += list(tiers)
    spec = parse_estate(raw, "onprem")
    return size(wfile(dict(FT70B, storage=STORAGE)), "w.yaml", spec, "onprem", today=TODAY)


def _site(r: SizingReport) -> SiteStorage:
    (cs,) = r.classes
    (rec,) = r.pools
    st = class_storage(cs)
    assert st is not None and rec.demand.placement.name == "train"
    ps = pool_storage(rec, [st])
    assert ps is not None
    (site,) = site_storage([ps])
    return site


def _shared(r: SizingReport) -> str:
    text = sizing_text(r)
    return text[text.index("Shared storage") : text.index("Stack onprem")]


def test_a_pool_on_a_bare_metal_site_gets_the_sites_own_tiers_not_fsx() -> None:
    # Before: FSx for Lustre GiB per tier for the owned `train` pool, on site dc1 where FSx does not exist. dc1
    # declares nfs `home`, scratch `nvme` and s3-onprem `objects`, no parallel-fs. Peak: 4 servers × 5 GB/s.
    r = _onprem_storage()
    s = _site(r)
    assert (s.site, s.pools, s.gbps, s.gb_stored) == ("dc1", ("train",), 20, 22000)
    assert [(t.name, t.kind) for t in s.tiers] == [("home", "nfs"), ("nvme", "scratch"), ("objects", "s3-onprem")]
    assert s.shared_hot == [] and s.carried_by == []
    shared = _shared(r)
    assert "FSx GiB" not in shared and "FSx for Lustre PERSISTENT_2" not in shared
    assert "home (nfs)" in shared and "nvme (scratch)" in shared and "objects (s3-onprem)" in shared
    assert "Site dc1 declares no parallel-fs tier for the 20 GB/s its pools need at peak" in shared
    assert "(kind: parallel-fs, a throughput_gbps of at least 20;" in shared


def test_a_declared_parallel_fs_carries_the_peak_or_says_how_short_it_is() -> None:
    fast = {"kind": "parallel-fs", "name": "lustre", "csi_driver": "lustre.csi.k8s.io", "throughput_gbps": 50}
    r = _onprem_storage(fast)
    assert [t.name for t in _site(r).carried_by] == ["lustre"]
    shared = _shared(r)
    assert "lustre (parallel-fs)" in shared and "50 GB/s declared: carries the 20 GB/s at peak" in shared
    assert "declares no parallel-fs" not in shared and "FSx GiB" not in shared
    slow = _onprem_storage(dict(fast, throughput_gbps=12))
    assert _site(slow).carried_by == []
    shared = _shared(slow)
    assert "12 GB/s declared: 8 GB/s short of the 20 GB/s at peak" in shared
    assert "No parallel-fs tier of site dc1 carries the 20 GB/s" in shared


def test_a_catalog_instance_type_still_gets_fsx() -> None:
    # The same class with no stack: a catalog instance type, on AWS, sized as FSx for Lustre as before.
    r = on(None, dict(FT70B, storage=STORAGE))
    st = class_storage(r.classes[0])
    assert st is not None
    ps = pool_storage(r.pools[0], [st])
    assert ps is not None and ps.site is None and site_storage([ps]) == []
    assert set(ps.capacity_gib) == {125, 250, 500, 1000}
    assert "FSx GiB at 250 MB/s/TiB" in sizing_text(r)


def test_a_pool_the_stack_has_is_fed_at_its_max_the_nodes_preview_counts() -> None:
    # aws-train's h100 (p5.48xlarge, max 4 nodes) takes an 8-GPU fine-tune a week: demand needs 1 node, but the
    # pool runs up to its 4. A run moves 20,000 × 3 + 1,000 × 336 = 396,000 GB in 10 h on one node: 11 GB/s a
    # node, × 4 nodes = 44 GB/s (found by review: the demand's node counted, 11 GB/s).
    c = dict(
        FT70B, parameters_billion=7, gpus_per_run=8, runs_per_period=1, hours_per_run=10, hours_on={}, storage=STORAGE
    )
    r = on("aws-train", c)
    (rec,) = [x for x in r.pools if x.name == "h100"]
    assert rec.demand.raised is not None and rec.demand.raised.max == 4 and rec.demand.scale_max_nodes < 4
    cs = r.classes[0]
    st = class_storage(cs)
    assert st is not None
    ps = pool_storage(rec, [st])
    assert st.planned_gbps_per_node == 11
    assert ps is not None and (ps.nodes, ps.gbps) == (4, 44)
