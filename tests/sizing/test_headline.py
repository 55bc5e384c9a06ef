"""The headline of `gpufleet size` says only what is true (issue #32 audit, gap 2)."""

from __future__ import annotations

from gpufleet.render.sizing import headline, sizing_text
from tests.sizing.test_cases import on

# A 405B pre-train with no measured_on: its hours cannot be compared across GPU models, so nothing is placed.
PRETRAIN = {"name": "pretrain-405b", "kind": "training", "parameters_billion": 405, "runs_per_period": 1,
            "gpus_per_run": 1024, "hours_per_run": 1000, "deadline_hours": 1500, "gang": True}  # fmt: skip


def test_nothing_placed_says_nothing_is_bought_and_no_installed_range() -> None:
    # Before: "Buys nothing: owned servers take it all. Not placed: pretrain-405b." with no owned server at all, and
    # an installed range with no pool. Pooled: 1,024,000 GPU-hours ÷ 730 h ÷ 70 % = 2,003.91 → 2,004 and ÷ 50 % =
    # 2,805.48 → 2,806.
    r = on(None, PRETRAIN, period="month", hours_per_device=730)
    assert r.pools == [] and r.unplaced == ["pretrain-405b"]
    assert headline(r) == "Uses no owned servers. Buys nothing; not placed: pretrain-405b."
    text = sizing_text(r)
    assert "owned servers take it all" not in text and "Installed range" not in text
    assert "No pool is recommended, so nothing is installed. Pooled, the scenarios give 2004-2806 " in text
