"""A burst command's `up` targets exactly the resources a window changes: the burst node group's scaling and the
cloud worker's burst Cohort and ClusterQueues (Automation API `Stack.up(target=[urns], target_dependents=True)`,
pulumi/automation/_stack.py; URN format https://www.pulumi.com/docs/iac/concepts/resources/names/#urns)."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from gpufleet.burst.targets import burst_targets
from gpufleet.engine.plan import Plan
from gpufleet.engine.synth import synth_stack
from model.burst_state import BurstState
from model.load import parse_window, read_stack
from tests.burst.helpers import STACK, hybrid_config, window
from tests.conftest import write_project

AS_OF = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.UTC)


def plans(proj: Path) -> dict[str, Plan]:
    sf = read_stack(proj, STACK)

    def at(hours_since_start: float | None) -> Plan:
        if hours_since_start is None:
            return synth_stack(proj, STACK, sf, burst_state={})
        w = parse_window(window(AS_OF - dt.timedelta(hours=hours_since_start), 8, nodes=2), "test")
        return synth_stack(proj, STACK, sf, burst_state=BurstState(w, (), AS_OF).outputs(), now=AS_OF)

    return {"idle": at(None), "open": at(1), "draining": at(8.2), "past grace": at(9)}


def test_targets_are_exactly_the_resources_whose_inputs_a_window_changes(tmp_path: Path) -> None:
    proj = write_project(tmp_path, hybrid_config(), STACK)
    by_phase = plans(proj)
    idle = {r.key: r for r in by_phase["idle"].resources}
    changed: set[str] = set()
    for plan in by_phase.values():
        changed |= {r.key for r in plan.resources if r.key in idle and r.inputs != idle[r.key].inputs}
    project = read_stack(proj, STACK).project
    targets = [t for t in burst_targets(proj, STACK) if "*" not in t]
    assert targets == sorted(f"urn:pulumi:{STACK}::{project}::{key}" for key in changed)
    kinds = sorted(t.rsplit("::", 2)[1].rsplit("$", 1)[-1] for t in targets)
    assert kinds == [
        "aws:eks/nodeGroup:NodeGroup",
        "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue",
        "kubernetes:kueue.x-k8s.io/v1beta2:Cohort",
    ]
    assert any(t.endswith("::cloud-burst-h100-ng") for t in targets)


BACKSTOPS = ("gpufleet:aws:NodeGroupBackstop", "gpufleet:hybrid:BurstStop")


def glob_matches(glob: str, target: str) -> bool:
    """Pulumi's target glob: `**` any characters, `*` any but `:` (pulumi/pulumi pkg/resource/deploy/deployment.go,
    `UrnTargets.getMatcher`)."""
    pattern = ".*".join("[^:]*".join(re.escape(p) for p in seg.split("*")) for seg in glob.split("**"))
    return re.fullmatch(pattern, target) is not None


def test_what_a_window_adds_is_its_backstop_targeted_by_glob_and_built_before_the_capacity(tmp_path: Path) -> None:
    """A window adds only its backstop's schedule and CronJobs (components.aws.backstop, components.hybrid.
    burst_stop) and the burst group's discovery tag. The targets reach every part of them by glob (a literal URN of a backstop not there would fail the
    `up`), and the node group and ClusterQueues depend on it, so an `up` that cannot create it never raises the
    capacity."""
    proj = write_project(tmp_path, hybrid_config(), STACK)
    by_phase = plans(proj)
    idle = {r.key for r in by_phase["idle"].resources}
    assert {r.key for r in by_phase["past grace"].resources} == idle
    project = read_stack(proj, STACK).project
    globs = [t for t in burst_targets(proj, STACK) if "*" in t]
    for phase in ("open", "draining"):
        plan = by_phase[phase]
        added = {r.key for r in plan.resources} - idle
        assert added, phase
        for key in added:
            assert any(glob_matches(g, f"urn:pulumi:{STACK}::{project}::{key}") for g in globs), key
        roots = {r.type: r.key for r in plan.resources if r.type in BACKSTOPS}
        assert sorted(roots) == sorted(BACKSTOPS), phase
        assert any(plan.get(k).type == "aws:scheduler/schedule:Schedule" for k in added), phase
        (ng,) = [r for r in plan.find("aws:eks/nodeGroup:NodeGroup") if r.name == "cloud-burst-h100-ng"]
        (cq,) = plan.find("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue", "hyb-multikueue-cloud-burst-cq-research")
        for capacity, root in ((ng, "gpufleet:aws:NodeGroupBackstop"), (cq, "gpufleet:hybrid:BurstStop")):
            # a dependency on a component is one on each of its resources (Pulumi expands it)
            parts = {r.key for r in plan.resources if r.parent == roots[root]}
            assert parts and parts <= set(capacity.dependencies), (phase, root)
    # Idle, the globs reach only the burst pool's own backstop parts (queue, alarm, group, role): they outlive a
    # window so that a failure after it still alarms and keeps AWS's answer (review of L, defect 5).
    reached = {k for k in idle if any(glob_matches(g, f"urn:pulumi:{STACK}::{project}::{k}") for g in globs)}
    assert {by_phase["idle"].get(k).type for k in reached} == {
        "gpufleet:aws:NodeGroupBackstop",
        "aws:iam/role:Role",
        "aws:iam/rolePolicy:RolePolicy",
        "aws:sqs/queue:Queue",
        "aws:scheduler/scheduleGroup:ScheduleGroup",
        "aws:cloudwatch/metricAlarm:MetricAlarm",
    }
