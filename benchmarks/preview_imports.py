"""`gpufleet preview` of each example against the imports it cannot avoid: `python -m benchmarks.preview_imports`.

The floor of a preview is a bare interpreter importing the provider SDK modules whose classes the example's plan
registers (found by recording one synth, `benchmarks.fair_floor`); everything above it is ours (the CLI, the
model, synthesis, policies, cost, rendering). Each is the fastest of `repeats` fresh-interpreter runs, measured
in turn in one run; `ratio` = preview wall / imports wall.

`gpufleet` runs its command with the cyclic garbage collector off (gpufleet/cli/app.py), which a bare import does
not: `imports_no_gc_seconds` is the same imports with the collector off too, and `ratio_no_gc` = preview wall /
that, the stricter comparison.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ("aws-train", "onprem", "hybrid")

_PROBE = """
import json, sys
from benchmarks import fair_floor
from gpufleet.engine.synth import synth
with fair_floor.recording() as rec:
    synth(".", sys.argv[1])
print(json.dumps(sorted({ref.module for ref in rec.classes.values()})))
"""


def _wall(cmd: list[str], repeats: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, env=env, check=True, capture_output=True)
        best = min(best, time.perf_counter() - start)
    return best


def provider_modules(stack: str) -> list[str]:
    """The modules of the SDK classes that register the resources of `stack`'s plan."""
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, stack],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
        capture_output=True,
        text=True,
    )
    modules: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return modules


def preview_vs_imports(repeats: int = 3) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    gpufleet = str(Path(sys.executable).parent / "gpufleet")
    for stack in EXAMPLES:
        modules = provider_modules(stack)
        load_before = os.getloadavg()[0]
        imports = _wall([sys.executable, "-c", f"import {', '.join(modules)}"], repeats)
        no_gc = _wall([sys.executable, "-c", f"import gc; gc.disable(); import {', '.join(modules)}"], repeats)
        preview = _wall([gpufleet, "preview", "--stack", stack], repeats)
        load_after = os.getloadavg()[0]
        rows[stack] = {
            "modules": len(modules),
            "imports_seconds": round(imports, 3),
            "preview_seconds": round(preview, 3),
            "ratio": round(preview / imports, 3),
            "imports_no_gc_seconds": round(no_gc, 3),
            "ratio_no_gc": round(preview / no_gc, 3),
            "load_average": [round(load_before, 2), round(load_after, 2)],
            "machine_busy": max(load_before, load_after) > 1.5,
        }
    return rows


def main() -> int:
    print(json.dumps(preview_vs_imports(), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
