"""The larger bad-input run: `python -m benchmarks.fuzz_inputs [--examples 300] [--seed 0] [--surfaces]`.

The same mutations as tests/cli/test_fuzz_inputs.py (tests/cli/fuzz.py), many more of them, against every
command that reads a stack file - preview and check included, which synthesize the program when the mutation
leaves the stack valid - with each command's peak Python memory traced (tracemalloc). Prints the exit codes
seen, the slowest answer and the largest peak; exits 1 on the first case that breaks the property.
With --surfaces it mutates the other inputs instead (tests/cli/fuzz_surfaces.py): usage profiles, ip-ranges
documents (each accepted one must leave the S3 catalog no worse), state-stack outputs and Pulumi.yaml;
`--only ip-ranges` runs one surface.
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, seed, settings
from hypothesis.errors import FlakyFailure

from tests.cli.badinput import READERS
from tests.cli.fuzz import Case, Outcome, cases, check_outcome, run_case
from tests.cli.fuzz_surfaces import SURFACES, run_surface, surfaces

SECONDS = 30.0  # preview of a valid mutated stack synthesizes it (seconds on a shared 2-core machine)
PEAK_MB = 300.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=300)
    ap.add_argument("--seed", type=int, default=random.randrange(2**32))
    ap.add_argument("--surfaces", action="store_true", help="usage, ip-ranges, state outputs, Pulumi.yaml")
    ap.add_argument("--only", choices=SURFACES, help="with --surfaces: mutate this one surface only")
    args = ap.parse_args()
    if args.surfaces:
        return _surfaces(args.examples, args.seed, args.only)
    codes: collections.Counter[tuple[str, int]] = collections.Counter()
    worst: list[Outcome] = []

    @seed(args.seed)
    @settings(max_examples=args.examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(cases())
    def run(case: Case) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            for o in run_case(case, Path(tmp), list(READERS), trace_memory=True):
                codes[(o.command, o.answer.code)] += 1
                worst.append(o)
                check_outcome(o, Path(tmp), SECONDS, PEAK_MB)

    print(f"seed {args.seed}, {args.examples} examples")
    try:
        run()
    except (AssertionError, FlakyFailure) as err:  # flaky: a case over a time bound once, not on its rerun
        print(f"FAILED: {err}")
        return 1
    finally:
        for (command, code), n in sorted(codes.items()):
            print(f"  {command:<13} exit {code}: {n}")
        if worst:
            slow = max(worst, key=lambda o: o.seconds)
            big = max(worst, key=lambda o: o.peak_mb)
            print(f"  slowest: {slow.command} {slow.seconds:.2f} s; largest peak: {big.command} {big.peak_mb:.0f} MB")
    return 0


def _surfaces(examples: int, at: int, only: str | None) -> int:
    import pytest

    seen: collections.Counter[str] = collections.Counter()

    @seed(at)
    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(surfaces(only))
    def run(case: tuple[str, object]) -> None:
        seen[case[0]] += 1
        with pytest.MonkeyPatch.context() as mp:
            run_surface(*case, lambda target, value: mp.setattr(target, value))

    print(f"seed {at}, {examples} examples over the other surfaces")
    try:
        run()
    except (AssertionError, FlakyFailure) as err:  # flaky: a case over a time bound once, not on its rerun
        print(f"FAILED: {err}")
        return 1
    finally:
        for surface, n in sorted(seen.items()):
            print(f"  {surface:<12} {n} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
