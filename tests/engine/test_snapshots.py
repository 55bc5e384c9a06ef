"""Every example stack matches its reviewed snapshot: one line per resource with its logical key, whether it is
protected / retained, and a digest of its normalised inputs. A changed key means the engine would replace the
resource (unless aliased); a changed digest means its inputs changed. Review the diff, then regenerate with
UPDATE_SNAPSHOTS=1 pytest tests/engine/test_snapshots.py."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from gpufleet.engine.plan import Plan
from tests.conftest import EXAMPLES, ROOT

SNAPSHOTS = ROOT / "tests" / "engine" / "snapshots"


def inventory(plan: Plan) -> str:
    lines = []
    for r in plan.resources:
        digest = hashlib.sha256(json.dumps(r.inputs, sort_keys=True).encode()).hexdigest()[:12]
        flags = ("P" if r.protect else "-") + ("R" if r.retain_on_delete else "-")
        lines.append(f"{flags} {digest} {r.key}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("stack", EXAMPLES)
def test_example_matches_reviewed_snapshot(stack: str, example_plans: dict[str, Plan]) -> None:
    path = SNAPSHOTS / f"{stack}.txt"
    current = inventory(example_plans[stack])
    if os.environ.get("UPDATE_SNAPSHOTS"):
        path.write_text(current)
    assert path.exists(), f"no snapshot for {stack}; run with UPDATE_SNAPSHOTS=1 and review it"
    assert current == path.read_text(), f"{stack} changed; review `git diff` after UPDATE_SNAPSHOTS=1"


def test_stateful_storage_is_protected_in_every_example(example_plans: dict[str, Plan]) -> None:
    stateful = (
        "aws:fsx/lustreFileSystem:LustreFileSystem",
        "aws:efs/fileSystem:FileSystem",
        "aws:s3/bucket:Bucket",
    )
    found = [r for p in example_plans.values() for r in p.resources if r.type in stateful]
    assert found
    assert all(r.protect and r.retain_on_delete for r in found), [r.key for r in found if not r.protect]
