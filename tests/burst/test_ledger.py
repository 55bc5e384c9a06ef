"""A closed window is booked at the node-hours its burst node group held, as AWS measured them (the
`AWS/AutoScaling` metric `GroupTotalInstances`, https://docs.aws.amazon.com/autoscaling/ec2/userguide/
ec2-auto-scaling-metrics.html), found by the autoscaler's discovery tags; at the cap where AWS cannot say.
Under moto: an Auto Scaling group with the burst pool's tags, and the metric's one-minute datapoints."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpufleet.burst import flows
from gpufleet.burst.aws import TOTAL_INSTANCES, Aws
from gpufleet.burst.ledger import burst_group_tags
from gpufleet.cli import burst as burst_cli
from gpufleet.cli.app import app
from model.burst_spend import spend_in_month
from model.load import parse_estate, read_stack
from tests.burst.helpers import NOW, STACK, FakeDriver, burst_state, hybrid_config, project, window

runner = CliRunner()
GROUP = "eks-cloud-burst-h100-0123"


@pytest.fixture
def burst_group(moto_aws: Aws) -> Iterator[str]:
    """The burst node group's Auto Scaling group, tagged as components/aws/autoscaler.py tags it."""
    spec = parse_estate(hybrid_config()["gpufleet:estate"], "test")
    moto_aws.ec2.create_launch_template(
        LaunchTemplateName="burst", LaunchTemplateData={"ImageId": "ami-12c6146b", "InstanceType": "p5.48xlarge"}
    )
    tags = burst_group_tags(spec, "burst-h100")
    moto_aws.autoscaling.create_auto_scaling_group(
        AutoScalingGroupName=GROUP, LaunchTemplate={"LaunchTemplateName": "burst"}, MinSize=0, MaxSize=2,
        DesiredCapacity=0, AvailabilityZones=["us-east-1a"],
        Tags=[{"Key": k, "Value": v, "PropagateAtLaunch": False} for k, v in tags.items()],
    )  # fmt: skip
    yield GROUP
    moto_aws.autoscaling.delete_auto_scaling_group(AutoScalingGroupName=GROUP, ForceDelete=True)
    moto_aws.ec2.delete_launch_template(LaunchTemplateName="burst")


def in_service(aws: Aws, start: dt.datetime, minutes: int, nodes: float) -> None:
    """One datapoint a minute: `nodes` instances in service from `start` for `minutes`."""
    points: list[dict[str, Any]] = [
        {"MetricName": TOTAL_INSTANCES, "Dimensions": [{"Name": "AutoScalingGroupName", "Value": GROUP}],
         "Timestamp": start + dt.timedelta(minutes=i), "Value": nodes}
        for i in range(minutes)
    ]  # fmt: skip
    for i in range(0, len(points), 500):
        aws.cloudwatch.put_metric_data(Namespace="AWS/AutoScaling", MetricData=points[i : i + 500])


def test_reconcile_books_the_node_hours_aws_measured_not_the_cap(
    tmp_path: Path, moto_aws: Aws, burst_group: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    start = NOW - dt.timedelta(hours=4)
    proj = project(tmp_path, hybrid_config(window(start, 3, nodes=2, usd_per_hour=55.04)))
    # one node for 90 of the cap's 2 x 226 min (expiry + grace + stop lag); every other minute reports none
    in_service(moto_aws, start, 30, 0.0)
    in_service(moto_aws, start + dt.timedelta(minutes=30), 90, 1.0)
    in_service(moto_aws, start + dt.timedelta(minutes=120), 106, 0.0)
    monkeypatch.setattr(burst_cli, "make_aws", lambda region: moto_aws)
    monkeypatch.setattr(burst_cli, "clock", lambda region: NOW)  # past expiry and grace
    monkeypatch.setattr(burst_cli, "make_driver", lambda p: FakeDriver(p))
    result = runner.invoke(app, ["burst", "reconcile", "--stack", STACK, "--project", str(proj)])
    assert result.exit_code == 0, result.output
    state = burst_state(proj)
    assert state is not None and state.window is None
    (entry,) = state.ledger
    assert (
        entry.usd == round(55.04 * 1.5, 2) and entry.closed_by == "gpufleet burst reconcile (1.5 node-hours measured)"
    )
    assert entry.nodes == 2 and entry.end == start + dt.timedelta(hours=3, minutes=46)  # the cap, to the backstop


def test_a_window_across_a_month_boundary_is_booked_to_the_month_its_nodes_ran_in(
    tmp_path: Path, moto_aws: Aws, burst_group: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From 22:00 on November 30th for 3 h: 2 nodes ran until midnight, none after. One entry per month holds what
    ran in it, so December's budget is charged nothing; one entry split by time would have charged December
    106/226 of the window ($103.26)."""
    start = dt.datetime(2026, 11, 30, 22, 0, tzinfo=dt.UTC)
    now = start + dt.timedelta(hours=5)  # past the backstop time, 01:46
    proj = project(tmp_path, hybrid_config(window(start, 3, nodes=2, usd_per_hour=55.04)))
    in_service(moto_aws, start, 120, 2.0)
    in_service(moto_aws, start + dt.timedelta(minutes=120), 106, 0.0)
    monkeypatch.setattr(burst_cli, "make_aws", lambda region: moto_aws)
    monkeypatch.setattr(burst_cli, "clock", lambda region: now)
    monkeypatch.setattr(burst_cli, "make_driver", lambda p: FakeDriver(p))
    result = runner.invoke(app, ["burst", "reconcile", "--stack", STACK, "--project", str(proj)])
    assert result.exit_code == 0, result.output
    state = burst_state(proj)
    assert state is not None
    november, december = state.ledger
    assert (november.start, november.end, november.usd) == (start, dt.datetime(2026, 12, 1, tzinfo=dt.UTC), 220.16)
    assert (december.end, december.usd) == (start + dt.timedelta(hours=3, minutes=46), 0.0)
    assert spend_in_month(state.ledger, now) == 0.0 and spend_in_month(state.ledger, start) == 220.16
    assert "booked at $220.16" in result.output


def test_open_turns_on_the_groups_in_service_metric(
    tmp_path: Path, moto_aws: Aws, burst_group: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from botocore.stub import Stubber

    proj = project(tmp_path, hybrid_config())
    stub = Stubber(moto_aws.quotas)
    stub.add_response(
        "get_service_quota", {"Quota": {"ServiceCode": "ec2", "QuotaCode": "L-417A185B", "Value": 768.0}},
        {"ServiceCode": "ec2", "QuotaCode": "L-417A185B"},
    )  # fmt: skip
    monkeypatch.setattr(burst_cli, "make_aws", lambda region: moto_aws)
    monkeypatch.setattr(burst_cli, "clock", lambda region: NOW)
    monkeypatch.setattr(burst_cli, "make_driver", lambda p: FakeDriver(p))
    with stub:
        result = runner.invoke(app, ["burst", "open", "--stack", STACK, "--project", str(proj), "--gpus", "8",
                                     "--hours", "2"])  # fmt: skip
    assert result.exit_code == 0, result.output
    (group,) = moto_aws.autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[GROUP])["AutoScalingGroups"]
    assert {m["Metric"] for m in group.get("EnabledMetrics", [])} == {TOTAL_INSTANCES}


def test_a_minute_the_metric_missed_is_booked_at_the_cap_not_as_zero(moto_aws: Aws, burst_group: str) -> None:
    """Group metrics are sent on a best-effort basis and gaps are not backfilled (ec2-auto-scaling-metrics.html):
    a missing minute may have held every node of the cap, so it counts so. 60 minutes, 30 of them reported at one
    node, 30 missing at a cap of 2: 0.5 + 1.0 node-hours."""
    start = NOW - dt.timedelta(days=3)
    in_service(moto_aws, start, 30, 1.0)
    assert moto_aws.node_hours(burst_group, start, start + dt.timedelta(hours=1), gap_nodes=2) == 1.5
    assert moto_aws.node_hours(burst_group, start - dt.timedelta(days=2), start, gap_nodes=2) is None  # none at all


def test_capacity_outliving_the_backstop_is_booked_and_reconcile_fails_loudly(
    tmp_path: Path, moto_aws: Aws, burst_group: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed AWS-side stop: the group holds a node past the backstop time. Measured up to now, not the backstop
    time, and reconcile exits 1 saying so (after its `up`, which idles the group)."""
    start = NOW - dt.timedelta(days=7)  # apart from the other tests' datapoints (moto keeps them)
    now = start + dt.timedelta(hours=5)
    proj = project(tmp_path, hybrid_config(window(start, 3, nodes=2, usd_per_hour=55.04)))
    in_service(moto_aws, start, 300, 1.0)  # one node all along: 226 min to the backstop time, 74 after it
    moto_aws.autoscaling.set_desired_capacity(AutoScalingGroupName=GROUP, DesiredCapacity=1)  # still one now
    monkeypatch.setattr(burst_cli, "make_aws", lambda region: moto_aws)
    monkeypatch.setattr(burst_cli, "clock", lambda region: now)
    monkeypatch.setattr(burst_cli, "make_driver", lambda p: FakeDriver(p))
    result = runner.invoke(app, ["burst", "reconcile", "--stack", STACK, "--project", str(proj)])
    assert result.exit_code == 1, result.output
    assert "was not at zero after its backstop time" in " ".join(result.output.split())
    state = burst_state(proj)
    assert state is not None and state.window is not None  # the `up` ran and idled the group; the window stays
    assert state.window.overrun_since == now
    (entry,) = state.ledger
    assert entry.usd == round(55.04 * 5, 2) and entry.end == now
    assert "5 node-hours measured, 1.2333 of them after the backstop time; 1 instances (desired 1) still running" in (
        entry.closed_by
    )

    # The same history, the group empty since: the same figure, whenever it is booked
    moto_aws.autoscaling.set_desired_capacity(AutoScalingGroupName=GROUP, DesiredCapacity=0)
    in_service(moto_aws, now, 60, 0.0)
    (tmp_path / "again").mkdir()
    again = project(tmp_path / "again", hybrid_config(window(start, 3, nodes=2, usd_per_hour=55.04)))
    monkeypatch.setattr(burst_cli, "clock", lambda region: now + dt.timedelta(hours=1))
    result = runner.invoke(app, ["burst", "reconcile", "--stack", STACK, "--project", str(again)])
    assert result.exit_code == 0, result.output
    state = burst_state(again)
    assert state is not None and state.ledger[0].usd == entry.usd


def test_an_overrun_window_stays_until_its_group_is_at_zero_and_each_interval_is_booked_once(
    tmp_path: Path, moto_aws: Aws, burst_group: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After an overrun, the window stays in state (overrun) and every reconcile books the nodes' time since the
    last booking, in an entry of its own, until it sees the group at zero (desired 0 and no instances)."""
    start = NOW - dt.timedelta(days=10)  # apart from the other tests' datapoints (moto keeps them)
    now = start + dt.timedelta(hours=5)
    proj = project(tmp_path, hybrid_config(window(start, 3, nodes=2, usd_per_hour=55.04)))
    in_service(moto_aws, start, 360, 1.0)  # one node until an hour after the first reconcile
    in_service(moto_aws, start + dt.timedelta(hours=6), 60, 0.0)
    moto_aws.autoscaling.set_desired_capacity(AutoScalingGroupName=GROUP, DesiredCapacity=1)
    monkeypatch.setattr(burst_cli, "make_aws", lambda region: moto_aws)
    monkeypatch.setattr(burst_cli, "make_driver", lambda p: FakeDriver(p))

    def reconcile_at(t: dt.datetime) -> int:
        monkeypatch.setattr(burst_cli, "clock", lambda region: t)
        return runner.invoke(app, ["burst", "reconcile", "--stack", STACK, "--project", str(proj)]).exit_code

    assert reconcile_at(now) == 1
    first = burst_state(proj)
    assert first is not None and first.window is not None and first.window.overrun_since == now
    status = runner.invoke(app, ["burst", "status", "--stack", STACK, "--project", str(proj)])
    assert "overrun" in status.output
    # Its nodes' time since the last booking is not booked yet: status counts it at the cap (2 nodes, half an hour)
    spec = read_stack(proj, STACK).estate()
    later = flows.status(spec, first, now + dt.timedelta(minutes=30))
    assert later.spend_usd == round(first.ledger[0].usd + 2 * 55.04 * 0.5, 2)
    # A new window would take over the group and stop tracking the overrun: refused, nothing written
    refused = runner.invoke(app, ["burst", "open", "--stack", STACK, "--project", str(proj), "--gpus", "8",
                                  "--hours", "2"])  # fmt: skip
    assert refused.exit_code != 0 and "overran" in " ".join(refused.output.split()), refused.output
    assert burst_state(proj) == first

    # An hour on, still one node: the hour is booked in a second entry; the first is kept as it was
    assert reconcile_at(now + dt.timedelta(hours=1)) == 1
    second = burst_state(proj)
    assert second is not None and second.window is not None
    assert second.ledger[0] == first.ledger[0]
    (hour,) = second.ledger[1:]
    assert (hour.start, hour.end, hour.usd) == (now, now + dt.timedelta(hours=1), 55.04)
    assert second.window.overrun_since == now + dt.timedelta(hours=1)

    # The group at zero: the last interval (no node seen) is booked and the window leaves
    moto_aws.autoscaling.set_desired_capacity(AutoScalingGroupName=GROUP, DesiredCapacity=0)
    assert reconcile_at(now + dt.timedelta(hours=2)) == 0
    done = burst_state(proj)
    assert done is not None and done.window is None
    assert done.ledger[:2] == second.ledger
    (last,) = done.ledger[2:]
    assert (last.start, last.end, last.usd) == (now + dt.timedelta(hours=1), now + dt.timedelta(hours=2), 0.0)
