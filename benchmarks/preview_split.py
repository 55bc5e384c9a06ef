"""Where `gpufleet preview` spends its time on the example stacks: `python -m benchmarks.preview_split`.

For each example, in a fresh interpreter: interpreter start-up, importing the tool, the first synth (which
also imports the provider SDK modules the program uses), a second synth of the same stack (the synthesis work
alone), policy evaluation, the cost envelope and the first-up simulation (gpufleet/review/reality/checks.py, with the
configured chart cache), with the seconds automatic garbage collection took inside those phases (`collector`,
timed with `gc.callbacks`; the `gpufleet` console script runs without it, gpufleet/cli/app.py). Also the wall
time of the whole `gpufleet preview` command.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ("aws-train", "onprem", "hybrid")

_PROBE = """
import gc, time, json, sys
collector = [0.0, 0.0]
def _timed(phase, info):
    if phase == "start":
        collector[1] = time.perf_counter()
    else:
        collector[0] += time.perf_counter() - collector[1]
gc.callbacks.append(_timed)
t0 = time.perf_counter()
import datetime as dt
from gpufleet import cli  # noqa: F401 - the CLI's own imports
from gpufleet.engine.synth import synth
from gpufleet.review import check
from gpufleet.review.cost.envelope import estate_cost
from model.load import read_stack
from gpufleet.charts.cache import ChartCache
from gpufleet.review.reality import checks as reality
t1 = time.perf_counter()
plan = synth(".", sys.argv[1])
t2 = time.perf_counter()
synth(".", sys.argv[1])
t3 = time.perf_counter()
stack = read_stack(__import__("pathlib").Path("."), sys.argv[1])
spec = stack.estate()
check.evaluate(plan, spec)
t4 = time.perf_counter()
estate_cost(spec, stack.window(), dt.datetime.now(dt.UTC))
t5 = time.perf_counter()
reality.first_up(plan, spec, ChartCache())
t6 = time.perf_counter()
print(json.dumps({"import_tool": t1 - t0, "first_synth": t2 - t1, "synth_work": t3 - t2,
                  "sdk_imports_in_first_synth": (t2 - t1) - (t3 - t2), "policies": t4 - t3, "cost": t5 - t4,
                  "first_up": t6 - t5, "collector": collector[0], "resources": len(plan.resources)}))
"""


def main() -> int:
    rows = {}
    for stack in EXAMPLES:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        interpreter = time.perf_counter() - start
        out = subprocess.run(
            [sys.executable, "-c", _PROBE, stack], cwd=ROOT, check=True, capture_output=True, text=True
        )
        probe = json.loads(out.stdout.strip().splitlines()[-1])
        start = time.perf_counter()
        subprocess.run(
            [str(Path(sys.executable).parent / "gpufleet"), "preview", "--stack", stack],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        wall = time.perf_counter() - start
        rows[stack] = {"interpreter": interpreter, "preview_wall": wall, **probe}
    print(json.dumps({k: {n: round(v, 3) for n, v in r.items()} for k, r in rows.items()}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
