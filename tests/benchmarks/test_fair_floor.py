"""The fair floor replays exactly the synthesized program's requests through the same SDK classes and mocks."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import fair_floor
from gpufleet.engine.plan import Plan
from gpufleet.engine.synth import run_program, synth
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def hybrid() -> tuple[Plan, fair_floor.Recording]:
    """The hybrid example (AWS and bare metal sites, MultiKueue, secrets, aliases) synthesized and recorded."""
    with fair_floor.recording() as rec:
        plan = synth(ROOT, "hybrid")
    rec.exports = plan.outputs
    return plan, rec


def _replay(rec: fair_floor.Recording, tmp: Path, stack: str = "hybrid") -> tuple[Plan, fair_floor.Recording]:
    rec.save(tmp / "replay.recording")
    program = fair_floor.load_for_replay(tmp / "replay.recording", tmp)
    with fair_floor.recording() as replayed:
        plan = run_program(program, "gpufleet", stack, {}, [])
    return plan, replayed


def test_replay_sends_the_same_requests_through_the_same_classes(
    hybrid: tuple[Plan, fair_floor.Recording], tmp_path: Path
) -> None:
    plan, rec = hybrid
    assert any(isinstance(c, fair_floor.Registration) and c.secret_keys for c in rec.calls)
    assert any(isinstance(c, fair_floor.Registration) and c.property_deps for c in rec.calls)
    assert any(isinstance(c, fair_floor.Registration) and c.aliases for c in rec.calls)
    replayed_plan, replayed = _replay(rec, tmp_path)
    assert fair_floor.differences(rec, replayed) == []
    assert replayed_plan.resources == plan.resources
    assert replayed_plan.outputs == plan.outputs


def test_a_replay_that_drops_a_dependency_is_reported(
    hybrid: tuple[Plan, fair_floor.Recording], tmp_path: Path
) -> None:
    _, rec = hybrid
    broken = fair_floor.Recording(list(rec.calls), dict(rec.classes), dict(rec.exports))
    i, reg = next((i, c) for i, c in enumerate(broken.calls) if isinstance(c, fair_floor.Registration) and c.depends_on)
    broken.calls[i] = fair_floor.Registration(**{**reg.__dict__, "depends_on": reg.depends_on[1:]})
    _, replayed = _replay(broken, tmp_path)
    problems = fair_floor.differences(rec, replayed)
    assert len(problems) == 2 and reg.urn in problems[0] and reg.urn in problems[1]


def test_invokes_and_component_outputs_are_replayed(tmp_path: Path) -> None:
    (tmp_path / "p").mkdir()
    program = tmp_path / "p" / "__main__.py"
    program.write_text(
        "import pulumi, pulumi_aws as aws\n"
        "it = aws.ec2.get_instance_type(instance_type='p5.48xlarge')\n"
        "c = pulumi.ComponentResource('test:index:Box', 'box')\n"
        "aws.ec2.Vpc('vpc', cidr_block='10.0.0.0/16', tags={'vcpus': str(it.default_vcpus)},\n"
        "            opts=pulumi.ResourceOptions(parent=c))\n"
        "c.register_outputs({'vcpus': it.default_vcpus})\n"
        "pulumi.export('vcpus', it.default_vcpus)\n"
    )
    with fair_floor.recording() as rec:
        plan = run_program(program, "gpufleet", "t", {}, [])
    rec.exports = plan.outputs
    kinds = {type(c).__name__ for c in rec.calls}
    assert kinds == {"Registration", "Outputs", "Invoke"}
    replayed_plan, replayed = _replay(rec, tmp_path, "t")
    assert fair_floor.differences(rec, replayed) == []
    assert replayed_plan.resources == plan.resources and replayed_plan.outputs == plan.outputs == {"vcpus": 192}
