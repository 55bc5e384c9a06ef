"""Property: whatever mutation of a usage profile, an ip-ranges document, a state stack's outputs or Pulumi.yaml a
user (or a broken backend) hands gpufleet, the answer is exit 0 or 2 naming the file, never a traceback or exit
70, and a refused input writes nothing; an accepted ip-ranges document opens no non-public or over-wide range
and leaves the catalog no worse (no region lost, no older copy). Seeded and bounded (tens of seconds);
benchmarks/fuzz_inputs.py --surfaces is the larger run."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from tests.cli.fuzz_surfaces import run_surface, surfaces


@settings(
    derandomize=True,
    max_examples=40,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
@given(surfaces())
def test_mutated_surfaces_never_crash_or_write_when_refused(case: tuple[str, Any]) -> None:
    with pytest.MonkeyPatch.context() as mp:
        run_surface(*case, lambda target, value: mp.setattr(target, value))


@settings(
    derandomize=True,
    max_examples=40,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
@given(surfaces(only="ip-ranges"))
def test_mutated_ip_ranges_documents_never_leave_the_s3_catalog_worse(case: tuple[str, Any]) -> None:
    with pytest.MonkeyPatch.context() as mp:
        run_surface(*case, lambda target, value: mp.setattr(target, value))
