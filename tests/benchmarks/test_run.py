"""The benchmark's targets: our part's growth per doubling, the 50,000-GPU preview, the code-change diff."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.run import per_doubling, verdicts


def test_growth_is_judged_per_doubling_whatever_the_size_step() -> None:
    assert per_doubling(2.5, 2.5) == pytest.approx(2.0)  # linear from 20,000 to 50,000 GPUs
    assert per_doubling(4.0, 2.0) == pytest.approx(4.0)  # quadratic
    assert per_doubling(6.25, 2.5) == pytest.approx(4.0)


def _row(gpus: int, **values: Any) -> dict[str, Any]:
    base = {"gpus": gpus, "fair_ratio": 1.0, "policy_share": 0.01, "memory_ratio": 1.0, "diff_vs_preview": 1.0,
            "code_diff_vs_preview": 1.5, "preview_seconds": 100.0, "preview_peak_rss_mb": 2000.0}  # fmt: skip
    return {**base, **values}


def test_the_50000_gpu_preview_is_held_to_five_minutes_and_4_gb() -> None:
    rows = [_row(20_000), _row(50_000, preview_seconds=301.0, preview_peak_rss_mb=3000.0, ours_per_doubling=2.3)]
    targets = verdicts({"sizes": rows})
    assert not targets["preview_50000_gpus_seconds"]["met"]
    assert targets["preview_50000_gpus_peak_mb"]["met"]
    assert not targets["ours_per_doubling"]["met"]
    assert targets["code_diff_vs_preview"] == {"worst": 1.5, "target": 2.2, "met": True}


def test_onprem_preview_has_its_own_target() -> None:
    examples = {"aws-train": {"ratio": 1.1}, "onprem": {"ratio": 1.6}}
    targets = verdicts({"sizes": [_row(5_000)], "examples": examples})
    assert targets["preview_vs_imports"]["met"] and not targets["onprem_preview_vs_imports"]["met"]
