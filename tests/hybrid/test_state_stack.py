"""The estate program reads the burst window from the state stack `<stack>-burst` through a StackReference
(https://www.pulumi.com/docs/iac/concepts/stacks/#stackreferences; pulumi/stack_reference.py: a read of type
`pulumi:pulumi:StackReference` by the name `<organization>/<project>/<stack>`, whose state carries `outputs`), and
judges it at the later of the state's `as_of` (AWS's time of the burst command that recorded it) and the time the
program runs (the engine's `now` offline)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pulumi
import pytest

from gpufleet.engine.plan import Plan
from gpufleet.engine.synth import SynthError, _RecordingMocks, engine_config, run_program, synth_stack
from model.burst_state import BurstState, state_reference
from model.load import WINDOW_KEY, parse_window, read_stack
from tests.burst.helpers import STACK, hybrid_config, window
from tests.conftest import write_project
from tests.hybrid.test_capacity import burst_group, cloud_queue, cohort_gpus

LONG_AGO = dt.datetime(2024, 3, 1, 8, 0, tzinfo=dt.UTC)  # the machine's clock is years past this


def synth_state(tmp: Path, state: dict[str, Any], now: dt.datetime = LONG_AGO) -> Plan:
    proj = write_project(tmp, hybrid_config(), STACK)
    return synth_stack(proj, STACK, read_stack(proj, STACK), burst_state=state, now=now)


def state_at(as_of: dt.datetime, hours_after_start: float = 1) -> dict[str, Any]:
    w = parse_window(window(as_of - dt.timedelta(hours=hours_after_start), 8, nodes=2), "test")
    return BurstState(w, (), as_of).outputs()


def test_the_program_sizes_the_pool_from_the_state_stack(tmp_path: Path) -> None:
    plan = synth_state(tmp_path, state_at(LONG_AGO))
    assert burst_group(plan).inputs["scalingConfig"]["maxSize"] == 2
    assert cloud_queue(plan)["stopPolicy"] == "None" and cohort_gpus(plan) == 16


def test_a_recorded_draining_phase_holds_admission(tmp_path: Path) -> None:
    plan = synth_state(tmp_path, state_at(LONG_AGO, hours_after_start=8 + 10 / 60))  # 10 min into the grace
    assert cloud_queue(plan)["stopPolicy"] == "Hold" and burst_group(plan).inputs["scalingConfig"]["maxSize"] == 2


def test_a_plain_up_after_expiry_closes_admission_with_no_burst_command_run(tmp_path: Path) -> None:
    """The state still says open (recorded an hour into the window, never reconciled); the `up` runs a day later:
    the window is judged now, so the queues hold and drain, the caps are zero and no backstop is left."""
    plan = synth_state(tmp_path, state_at(LONG_AGO), now=LONG_AGO + dt.timedelta(days=1))
    assert cloud_queue(plan)["stopPolicy"] == "HoldAndDrain" and cohort_gpus(plan) == 0
    assert burst_group(plan).inputs["scalingConfig"] == {"minSize": 0, "desiredSize": 0, "maxSize": 1}
    assert not plan.find("aws:scheduler/schedule:Schedule") and not plan.find("kubernetes:batch/v1:CronJob")


def test_an_up_after_expiry_but_within_the_grace_holds_admission(tmp_path: Path) -> None:
    plan = synth_state(tmp_path, state_at(LONG_AGO), now=LONG_AGO + dt.timedelta(hours=7, minutes=10))
    assert cloud_queue(plan)["stopPolicy"] == "Hold" and burst_group(plan).inputs["scalingConfig"]["maxSize"] == 2


def test_a_machine_whose_clock_is_behind_cannot_reopen_what_a_command_closed(tmp_path: Path) -> None:
    """Recorded 10 minutes into the grace; the machine running `up` thinks it is an hour before: `as_of` wins."""
    state = state_at(LONG_AGO, hours_after_start=8 + 10 / 60)
    plan = synth_state(tmp_path, state, now=LONG_AGO - dt.timedelta(hours=1))
    assert cloud_queue(plan)["stopPolicy"] == "Hold"


def test_an_empty_state_stack_means_no_window(tmp_path: Path) -> None:
    plan = synth_state(tmp_path, {})
    assert cloud_queue(plan)["stopPolicy"] == "HoldAndDrain" and cohort_gpus(plan) == 0


def test_a_state_this_gpufleet_cannot_read_stops_the_program_with_one_message(tmp_path: Path) -> None:
    with pytest.raises(pulumi.RunError, match=r"stack test-burst: outputs.format: 3 is not a burst state"):
        synth_state(tmp_path, {**state_at(LONG_AGO), "format": 3})


def test_a_state_written_before_generations_reads_as_generation_0(tmp_path: Path) -> None:
    old = {k: v for k, v in state_at(LONG_AGO).items() if k != "generation"} | {"format": 1}
    plan = synth_state(tmp_path, old)
    assert burst_group(plan).inputs["scalingConfig"]["maxSize"] == 2


def test_a_recorded_window_that_does_not_fit_the_estate_is_refused(tmp_path: Path) -> None:
    bad = state_at(LONG_AGO)
    bad["window"]["pool"] = "no-such-pool"
    with pytest.raises(
        pulumi.RunError, match=r"stack test-burst: outputs.window.pool: no-such-pool is not a burst pool"
    ):
        synth_state(tmp_path, bad)


def test_the_reference_is_read_by_its_fully_qualified_name() -> None:
    """Pulumi Cloud: `<org>/<project>/<stack>`; a self-managed backend's organization is `organization`."""
    assert state_reference("organization", "gpufleet", "hybrid") == "organization/gpufleet/hybrid-burst"
    mocks = _RecordingMocks({"hybrid-burst": {"format": 1}})
    args = pulumi.runtime.MockResourceArgs(
        typ="pulumi:pulumi:StackReference", name="organization/gpufleet/hybrid-burst",
        inputs={"name": "organization/gpufleet/hybrid-burst"}, provider=None, resource_id="organization/gpufleet/hybrid-burst",
    )  # fmt: skip
    assert mocks.new_resource(args) == (
        "organization/gpufleet/hybrid-burst",
        {"name": "organization/gpufleet/hybrid-burst", "outputs": {"format": 1}, "secretOutputNames": []},
    )
    other = pulumi.runtime.MockResourceArgs(
        typ="pulumi:pulumi:StackReference", name="acme/net/prod", inputs={"name": "acme/net/prod"}
    )
    with pytest.raises(SynthError, match="stack reference acme/net/prod cannot be answered offline"):
        mocks.new_resource(other)


def test_offline_the_stack_files_window_stands_for_the_state_and_is_not_config(tmp_path: Path) -> None:
    """Offline (preview, review, cost) the stack file's window key is the state stack's answer: the program sees
    it through the reference, and never as config (where a real `up` would only warn about it)."""
    config = hybrid_config(window(dt.datetime.now(dt.UTC) - dt.timedelta(hours=1), 8, nodes=2))
    proj = write_project(tmp_path, config, STACK)
    plan = synth_stack(proj, STACK, read_stack(proj, STACK))
    assert burst_group(plan).inputs["scalingConfig"]["maxSize"] == 2
    assert not any(WINDOW_KEY in w for w in plan.warnings)


def test_a_window_left_in_stack_config_is_not_read_by_up_and_says_how_to_migrate(tmp_path: Path) -> None:
    """Under the engine the stack file's config reaches the program as config: the window there is ignored (the
    state stack decides) with a warning naming the key and `gpufleet burst migrate`."""
    config = hybrid_config(window(dt.datetime.now(dt.UTC) - dt.timedelta(hours=1), 8, nodes=2))
    proj = write_project(tmp_path, config, STACK)
    sf = read_stack(proj, STACK)
    engine, secrets = engine_config(sf)
    plan = run_program(proj / "__main__.py", sf.project, STACK, engine, secrets, {"test-burst": {}})
    assert burst_group(plan).inputs["scalingConfig"]["maxSize"] == 1  # the empty state stack decides
    (warning,) = [w for w in plan.warnings if WINDOW_KEY in w]
    assert "not read by `up`" in warning and "gpufleet burst migrate -s test" in warning


def test_a_budget_lowered_mid_window_closes_admission_in_a_plain_up(tmp_path: Path) -> None:
    """A 2-node window opened 3 h ago for 8 h, within a $20,000 budget. The stack file's budget is lowered to $500:
    its worst case (2 x $55.04/h x (8 h + 0.5 h grace)) no longer fits, so the program moves its expiry earlier
    (model.burst_spend.within_budget) to where it does: 4 h 2 min from its start. 3 h in, the window still admits; 4 h
    10 min in, a plain `up` holds admission and the pool drains, with no burst command run."""
    proj = write_project(tmp_path, hybrid_config(), STACK)
    config = read_stack(proj, STACK)
    config.config["gpufleet:estate"]["burst"]["budget_usd"] = 500

    def plan_at(hours_in: float) -> Plan:
        as_of = LONG_AGO + dt.timedelta(hours=hours_in)
        w = parse_window(window(LONG_AGO, 8, nodes=2, usd_per_hour=55.04), "test")
        return synth_stack(proj, STACK, config, burst_state=BurstState(w, (), as_of).outputs(), now=as_of)

    assert cloud_queue(plan_at(3))["stopPolicy"] == "None"
    lowered = plan_at(4 + 10 / 60)
    assert cloud_queue(lowered)["stopPolicy"] == "Hold"  # draining: admission closed, running work has its grace
    assert burst_group(lowered).inputs["scalingConfig"]["maxSize"] == 2  # the cap stays: never shrunk under nodes


def test_a_window_reopened_over_draining_nodes_leaves_their_desired_size_to_the_live_count(tmp_path: Path) -> None:
    """close-then-open: the new window keeps room for the 2 nodes still in their grace, and the desired size stays
    ignored, so Pulumi sends the refreshed live count (gpufleet/burst/driver.py), never 0 or a stale cap."""
    w = parse_window(window(LONG_AGO, 8, nodes=1), "test")
    assert w is not None
    reopened = w.model_copy(update={"draining_nodes": 2, "draining_until": LONG_AGO + dt.timedelta(minutes=30)})
    plan = synth_state(tmp_path, BurstState(reopened, (), LONG_AGO + dt.timedelta(minutes=5)).outputs())
    group = burst_group(plan)
    assert group.inputs["scalingConfig"]["maxSize"] == 2
    assert "scalingConfig.desiredSize" in group.ignore_changes


def test_an_up_that_would_replace_the_node_group_of_a_live_recorded_window_is_refused(tmp_path: Path) -> None:
    """The window in the state stack was opened on on-demand capacity; the stack file now asks for spot, which the
    node group's capacityType sends differently: a replacement, refused while the window is open (model.node_groups)."""
    config = hybrid_config()
    config["gpufleet:estate"]["sites"][1]["node_pools"][0]["capacity"] = {"type": "spot", "checkpointing": True}
    proj = write_project(tmp_path, config, STACK)
    state = state_at(LONG_AGO)
    state["window"]["capacity_type"] = "on-demand"
    with pytest.raises(
        pulumi.RunError, match=r"node_pools\[0\]\.capacity\.type: pool burst-h100 has a burst window open"
    ):
        synth_stack(proj, STACK, read_stack(proj, STACK), burst_state=state, now=LONG_AGO)


def test_a_clock_minutes_slow_cannot_reopen_what_the_in_cluster_stop_held(tmp_path: Path) -> None:
    """The hold CronJob patched the queues at the expiry; a refreshing `up` on a machine 4 minutes slow judges the
    window 4 minutes before it and would take the patch back (pulumi.com/patchForce). The queues are judged
    CLOCK_SKEW (5 minutes, the SigV4 window: IAM user guide, reference_aws-signing.html) later, so they stay held."""
    w = parse_window(window(LONG_AGO - dt.timedelta(hours=1), 8, nodes=2), "test")
    state = BurstState(w, (), LONG_AGO).outputs()
    plan = synth_state(tmp_path, state, now=w.expires - dt.timedelta(minutes=4))
    assert cloud_queue(plan)["stopPolicy"] == "Hold"
    assert burst_group(plan).inputs["scalingConfig"]["maxSize"] == 2  # only admission moves early, not the nodes
