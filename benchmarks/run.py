"""Run the fleet-scale benchmark: `python -m benchmarks.run [--sizes 250,1000,2500,5000] [--out FILE]`.

For each target size it generates a synthetic estate whose synthesized plan has about that many custom
resources (calibrated on a small estate first), then measures, each in a fresh interpreter:
- synth: wall time of `gpufleet.engine.synth` (imports excluded), peak RSS, policy evaluation time;
- floor: the same custom resources (same types, same inputs) registered directly under the same mocks,
  without components or any gpufleet logic.
Prints a table and writes JSON (with `ratio` = synth seconds / floor seconds per size).
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.generate import BASE, Scale, estate

ROOT = Path(__file__).resolve().parent.parent


def _measure(*args: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.measure", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _synth(scale: Scale, tmp: Path, tag: str) -> tuple[dict[str, Any], Path]:
    config = tmp / f"{tag}.config.json"
    plan = tmp / f"{tag}.plan.json"
    config.write_text(json.dumps(estate(scale)))
    return _measure("synth", str(config), str(plan)), plan


def run(sizes: list[int]) -> dict[str, Any]:
    rows = []
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        # Resources grow linearly with the scale factor plus a fixed part (sites, operators): fit both.
        small, _ = _synth(BASE, tmp, "calibration-1")
        big, _ = _synth(BASE.times(4), tmp, "calibration-4")
        per_factor = (big["resources"] - small["resources"]) / 3
        fixed = small["resources"] - per_factor
        for target in sizes:
            scale = BASE.times(max(0.2, (target - fixed) / per_factor))
            synth, plan = _synth(scale, tmp, f"s{target}")
            floor = _measure("floor", str(plan))
            rows.append(
                {
                    "target": target,
                    "scale": scale.__dict__,
                    "resources": synth["resources"],
                    "registrations": synth["registrations"],
                    "synth_seconds": round(synth["seconds"], 3),
                    "floor_seconds": round(floor["seconds"], 3),
                    "ratio": round(synth["seconds"] / floor["seconds"], 3),
                    "synth_peak_rss_mb": round(synth["peak_rss_mb"], 1),
                    "floor_peak_rss_mb": round(floor["peak_rss_mb"], 1),
                    "memory_ratio": round(synth["peak_rss_mb"] / floor["peak_rss_mb"], 3),
                    "policy_seconds": None if synth["policy_seconds"] is None else round(synth["policy_seconds"], 4),
                    "policy_share": None
                    if synth["policy_seconds"] is None
                    else round(synth["policy_seconds"] / synth["seconds"], 4),
                }
            )
    for a, b in itertools.pairwise(rows):
        b["time_growth_vs_previous"] = round(b["synth_seconds"] / a["synth_seconds"], 3)
        b["size_growth_vs_previous"] = round(b["resources"] / a["resources"], 3)
    return {
        "date": dt.date.today().isoformat(),
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "processor": platform.processor() or platform.machine(),
        },
        "sizes": rows,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="250,1000,2500,5000")
    ap.add_argument("--out", type=Path, default=None, help="JSON file (default benchmarks/results/<date>.json)")
    args = ap.parse_args()
    result = run([int(s) for s in args.sizes.split(",")])
    out = args.out or ROOT / "benchmarks" / "results" / f"{result['date']}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(
        f"{'target':>7} {'resources':>9} {'synth s':>8} {'floor s':>8} {'ratio':>6} {'RSS MB':>7} {'floor MB':>8} {'policy s':>8}"
    )
    for r in result["sizes"]:
        print(
            f"{r['target']:>7} {r['resources']:>9} {r['synth_seconds']:>8.2f} {r['floor_seconds']:>8.2f} "
            f"{r['ratio']:>6.2f} {r['synth_peak_rss_mb']:>7.0f} {r['floor_peak_rss_mb']:>8.0f} "
            f"{(r['policy_seconds'] or 0):>8.3f}"
        )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
