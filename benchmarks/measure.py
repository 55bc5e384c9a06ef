"""One measurement in a fresh interpreter (so peak RSS belongs to it alone); prints one JSON line.

Every mode runs its program once to warm up (lazy imports of provider modules, first-use caches), then times
`repeats` more runs and keeps the fastest (wall and CPU seconds), so the figures are steady-state synthesis, not
interpreter and import start-up. Peak RSS is read right after the timed runs. The floors import every module the
synth run had loaded, so peak-RSS comparisons are about registrations, not about which libraries are imported.

python -m benchmarks.measure synth CONFIG.json OUT REPEATS   the real program under the mocks; writes OUT.plan.json,
                                                            OUT.modules and OUT.recording (benchmarks.fair_floor)
python -m benchmarks.measure fair OUT REPEATS               the fair floor: OUT.recording replayed request by request
python -m benchmarks.measure floor OUT REPEATS              the old floor: the same custom resources (types, inputs)
                                                            registered flat, without parents, options or components
"""

from __future__ import annotations

import gc
import importlib
import json
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi
import pulumi_aws  # noqa: F401 - imported before timing, as in synth
import pulumi_kubernetes  # noqa: F401

from benchmarks import fair_floor
from gpufleet.engine.plan import Plan
from gpufleet.engine.synth import run_program


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def best_of(fn: Callable[[], Any], repeats: int) -> tuple[float, float, Any]:
    """Fastest wall and CPU seconds of `repeats` runs of `fn` (after the caller's warm-up), and the last result.

    Each run starts with the previous run's garbage collected (untimed): the engine pauses automatic collection
    during a run, so a run's cyclic garbage is collected after it; `collect_seconds` times that for the last run."""
    wall, cpu, result = float("inf"), float("inf"), None
    for _ in range(repeats):
        result = None
        gc.collect()
        c, t = time.process_time(), time.perf_counter()
        result = fn()
        wall, cpu = min(wall, time.perf_counter() - t), min(cpu, time.process_time() - c)
    return wall, cpu, result


def collect_seconds() -> float:
    start = time.perf_counter()
    gc.collect()
    return time.perf_counter() - start


def measure_synth(config_path: Path, out: Path, repeats: int) -> dict[str, Any]:
    from gpufleet.engine.synth import synth
    from gpufleet.review.check import evaluate
    from model.load import parse_estate
    from tests.conftest import write_project

    config = json.loads(config_path.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        project = write_project(Path(tmp), config, stack="bench")
        synth(project, "bench")  # warm-up
        wall, cpu, plan = best_of(lambda: synth(project, "bench"), repeats)
        peak, collect = _peak_mb(), collect_seconds()
        spec = parse_estate(config["gpufleet:estate"], "bench")
        evaluate(plan, spec)  # warm-up (imports the packs)
        policy_wall, policy_cpu, _ = best_of(lambda: evaluate(plan, spec), repeats)
        with fair_floor.recording() as rec:  # after the peak was read: the recording is not the program's memory
            synth(project, "bench")
    rec.exports = plan.outputs
    rec.save(out.with_suffix(".recording"))
    out.with_suffix(".plan.json").write_text(plan.to_json())
    out.with_suffix(".modules").write_text("\n".join(sorted(m for m in sys.modules if not m.startswith("__"))))
    return {
        "mode": "synth",
        "resources": sum(1 for r in plan.resources if r.custom),
        "registrations": len(plan.resources),
        "seconds": wall,
        "cpu_seconds": cpu,
        "policy_seconds": policy_wall,
        "policy_cpu_seconds": policy_cpu,
        "peak_rss_mb": peak,
        "collect_seconds": collect,
    }


def _import_modules(out: Path) -> None:
    for module in out.with_suffix(".modules").read_text().split():
        try:
            importlib.import_module(module)
        except Exception:  # a module that imports only inside its package context is skipped
            continue


def measure_fair(out: Path, repeats: int) -> dict[str, Any]:
    _import_modules(out)
    synthesized = Plan.from_dict(json.loads(out.with_suffix(".plan.json").read_text()))
    with tempfile.TemporaryDirectory() as tmp:
        program = fair_floor.load_for_replay(out.with_suffix(".recording"), Path(tmp))

        def replay() -> Plan:
            return run_program(program, synthesized.project, synthesized.stack, {}, [])

        replay()  # warm-up
        wall, cpu, plan = best_of(replay, repeats)
        peak, collect = _peak_mb(), collect_seconds()
    if plan.resources != synthesized.resources or plan.outputs != synthesized.outputs:
        raise SystemExit("the fair floor's plan differs from the synthesized plan: not the same registrations")
    return {"mode": "fair", "resources": len(plan.resources), "seconds": wall, "cpu_seconds": cpu,
            "peak_rss_mb": peak, "collect_seconds": collect}  # fmt: skip


def _floor_program(plan: Plan) -> None:
    for i, r in enumerate(r for r in plan.resources if r.custom):
        name = f"r{i}"
        if r.type.startswith("pulumi:providers:"):
            pulumi.ProviderResource(r.type.split(":")[-1], name, dict(r.inputs))
        else:
            pulumi.CustomResource(r.type, name, dict(r.inputs))


def measure_floor(out: Path, repeats: int) -> dict[str, Any]:
    _import_modules(out)
    with tempfile.TemporaryDirectory() as tmp:
        program = Path(tmp) / "__main__.py"
        program.write_text(
            "import json, sys\nfrom benchmarks.measure import _floor_program\nfrom gpufleet.engine.plan import Plan\n"
            f"_floor_program(Plan.from_dict(json.loads(open({str(out.with_suffix('.plan.json'))!r}).read())))\n"
        )
        run_program(program, "gpufleet", "floor", {}, [])  # warm-up
        wall, cpu, floor = best_of(lambda: run_program(program, "gpufleet", "floor", {}, []), repeats)
    return {"mode": "floor", "resources": len(floor.resources), "seconds": wall, "cpu_seconds": cpu,
            "peak_rss_mb": _peak_mb()}  # fmt: skip


def main(argv: list[str]) -> int:
    if len(argv) == 4 and argv[0] == "synth":
        result = measure_synth(Path(argv[1]), Path(argv[2]), int(argv[3]))
    elif len(argv) == 3 and argv[0] in ("fair", "floor"):
        result = (measure_fair if argv[0] == "fair" else measure_floor)(Path(argv[1]), int(argv[2]))
    else:
        raise SystemExit(__doc__)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
