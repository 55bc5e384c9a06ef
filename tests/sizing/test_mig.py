"""MIG pools as placements of slices (review of #32, item 9): notebooks and small serving on an owned MIG pool.

The onprem stack's `dev` pool: 2 servers × 8 H100-80GB in MIG 1g.10gb, 7 slices per GPU (catalog gpus.yaml, from
NVIDIA's MIG User Guide, Supported MIG Profiles): 56 slices a server, 112 in the pool, each 10 GB, at the
amortised server-hour ÷ 56 ($11.5753 ÷ 56 = $0.2067 a slice-hour; tests/model/test_pricing.py works the hour).
"""

from __future__ import annotations

from fractions import Fraction

from gpufleet.render.sizing import headline, sizing_text
from model.load import parse_estate
from model.pricing import server_hour_usd
from model.spec import BaremetalSite
from tests.conftest import example_estate
from tests.sizing.test_cases import on

NOTEBOOKS = {"name": "notebooks", "kind": "interactive", "parameters_billion": 3, "precision": "bf16",
             "kv_cache_gb": 1, "runs_per_period": 150, "gpus_per_run": 1, "hours_per_run": 8,
             "latency_p95_ms": 2000}  # fmt: skip


def test_small_notebooks_on_onprem_take_mig_slices_of_the_dev_pool_not_whole_training_h100s() -> None:
    # 3B × 2 B = 6 GB + 1 GB KV cache, + 20 % = 8.4 GB: fits a 10 GB 1g.10gb slice. Before: whole H100s of `train`
    # at $11.58 a session, dev skipped "shares GPUs (mig)". Now: 8 h × $11.5753 ÷ 56 = $1.65 a session on dev.
    r = on("onprem", NOTEBOOKS, period="week", hours_per_device=168)
    (cs,) = r.classes
    ch = cs.chosen
    assert ch is not None and ch.placement.name == "dev" and ch.placement.mig_profile == "1g.10gb" and ch.owned
    assert (ch.placement.gpus_per_node, ch.placement.capacity_gpus) == (56, 112)
    site = parse_estate(example_estate("onprem"), "onprem").sites[0]
    assert isinstance(site, BaremetalSite) and site.cost is not None
    expected = Fraction(str(server_hour_usd(site.cost))) / 56 * 8
    assert f"{float(ch.cost_per_run or 0):,.2f}" == f"{float(expected):,.2f}" == "1.65"
    assert "Uses owned servers (already paid for): dev for notebooks." in headline(r)
    assert "dev (H100-80GB MIG 1g.10gb slice) at $1.65 per run" in sizing_text(r)
    assert r.comparison is not None and r.comparison.skipped == []


def test_a_mig_slice_takes_no_work_bound_or_multi_gpu_class() -> None:
    # Hours of a training or batch run were measured on whole GPUs; a slice is a fraction of one.
    batch = {"name": "embed", "kind": "batch-inference", "parameters_billion": 1, "runs_per_period": 10,
             "gpus_per_run": 1, "hours_per_run": 1, "measured_on": "H100-80GB", "deadline_hours": 4}  # fmt: skip
    r = on("onprem", batch, period="week", hours_per_device=168)
    (cs,) = r.classes
    assert all(ch.placement.name != "dev" for ch in cs.choices)
    assert cs.chosen is not None and cs.chosen.placement.name == "train"
