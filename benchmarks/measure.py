"""One measurement in a fresh interpreter (so peak RSS belongs to it alone); prints one JSON line.

Both modes run their program once to warm up (lazy imports of provider modules, first-use caches) and time
the second run, so the figures are steady-state synthesis, not interpreter and import start-up. The floor
imports every module the synth run had loaded, so the peak-RSS comparison is about registrations, not about
which libraries happen to be imported.

python -m benchmarks.measure synth CONFIG.json PLAN_OUT.json   the real program under the mocks
python -m benchmarks.measure floor PLAN.json                    the same custom resources registered
                                                                directly, without components
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pulumi
import pulumi_aws  # noqa: F401 - imported before timing, as in synth
import pulumi_kubernetes  # noqa: F401

from gpufleet.engine.plan import Plan
from gpufleet.engine.synth import run_program


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure_synth(config_path: Path, plan_out: Path) -> dict[str, Any]:
    from components.model.load import parse_estate
    from gpufleet.engine.synth import synth
    from tests.conftest import write_project

    config = json.loads(config_path.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        project = write_project(Path(tmp), config, stack="bench")
        synth(project, "bench")  # warm-up
        start = time.perf_counter()
        plan = synth(project, "bench")
        synth_s = time.perf_counter() - start
    spec = parse_estate(config["gpufleet:estate"], "bench")
    policy_s = None
    try:
        from gpufleet.review.check import evaluate
    except ImportError:
        evaluate = None  # type: ignore[assignment]
    if evaluate is not None:
        start = time.perf_counter()
        evaluate(plan, spec)
        policy_s = time.perf_counter() - start
    plan_out.write_text(plan.to_json())
    plan_out.with_suffix(".modules").write_text("\n".join(sorted(m for m in sys.modules if not m.startswith("__"))))
    custom = [r for r in plan.resources if r.custom]
    return {
        "mode": "synth",
        "resources": len(custom),
        "registrations": len(plan.resources),
        "seconds": synth_s,
        "policy_seconds": policy_s,
        "peak_rss_mb": _peak_mb(),
    }


def _floor_program(plan: Plan) -> None:
    for i, r in enumerate(r for r in plan.resources if r.custom):
        name = f"r{i}"
        if r.type.startswith("pulumi:providers:"):
            pulumi.ProviderResource(r.type.split(":")[-1], name, dict(r.inputs))
        else:
            pulumi.CustomResource(r.type, name, dict(r.inputs))


def measure_floor(plan_path: Path) -> dict[str, Any]:
    import importlib

    for module in plan_path.with_suffix(".modules").read_text().split():
        try:
            importlib.import_module(module)
        except Exception:  # a module that imports only inside its package context is skipped
            continue
    with tempfile.TemporaryDirectory() as tmp:
        program = Path(tmp) / "__main__.py"
        program.write_text(
            "import json, sys\nfrom benchmarks.measure import _floor_program\nfrom gpufleet.engine.plan import Plan\n"
            f"_floor_program(Plan.from_dict(json.loads(open({str(plan_path)!r}).read())))\n"
        )
        run_program(program, "gpufleet", "floor", {}, [])  # warm-up
        start = time.perf_counter()
        floor = run_program(program, "gpufleet", "floor", {}, [])
        seconds = time.perf_counter() - start
    return {"mode": "floor", "resources": len(floor.resources), "seconds": seconds, "peak_rss_mb": _peak_mb()}


def main(argv: list[str]) -> int:
    if argv[0] == "synth":
        result = measure_synth(Path(argv[1]), Path(argv[2]))
    elif argv[0] == "floor":
        result = measure_floor(Path(argv[1]))
    else:
        raise SystemExit(__doc__)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
