"""House rule: no Python module outside tests over 500 lines (components/, policies/ and gpufleet/)."""

from __future__ import annotations

from tests.conftest import ROOT

LIMIT = 500


def test_no_module_of_components_policies_or_gpufleet_is_over_500_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): n
        for package in ("components", "model", "policies", "gpufleet")
        for path in sorted((ROOT / package).rglob("*.py"))
        if (n := len(path.read_text().splitlines())) > LIMIT
    }
    assert long == {}
