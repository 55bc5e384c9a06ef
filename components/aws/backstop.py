"""NodeGroupBackstop: at a burst window's expiry + grace, AWS scales the burst node group to zero by itself.

An EventBridge Scheduler one-time schedule calls `eks:UpdateNodegroupConfig` through its universal target and sets
the group's idle bounds: min 0, desired 0, max 1. It needs no runner and no reachable cluster API.

Why not an Auto Scaling scheduled action on the group's ASG:
- EKS owns a managed node group's ASG. Its documented control is the node group's scaling config: "the Cluster
  Autoscaler doesn't scale a managed node group lower than minSize or higher than maxSize", and a desired size
  below the running nodes terminates the extra ones (EKS API reference, NodegroupScalingConfig).
- A scheduled action would change the ASG behind EKS, and the two would disagree.

The role may call that one action on that one node group. The schedule fires once (ACTION_AFTER_COMPLETION).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from components.aws import iam

# `arn:aws:scheduler:::aws-sdk:<service>:<apiAction>`, the input being the API's request body (Scheduler user guide,
# managing-targets-universal.html).
UNIVERSAL_TARGET = "arn:aws:scheduler:::aws-sdk:eks:updateNodegroupConfig"
# A failed call (throttled, the group mid-update) is retried as long and as often as Scheduler allows (Scheduler API
# reference, RetryPolicy: MaximumEventAgeInSeconds at most 86400, MaximumRetryAttempts at most 185).
# An `at(...)` expression names the year, so the schedule fires once. Schedules take no tags, so it sits in a
# tagged schedule group. Scheduler API reference, CreateSchedule: "ActionAfterCompletion ... Valid Values: NONE |
# DELETE". NONE: DELETE would remove a schedule Pulumi's state still holds, and the next window's update of it would
# fail. The next full `up` deletes it.
ACTION_AFTER_COMPLETION = "NONE"
RETRY = aws.scheduler.ScheduleTargetRetryPolicyArgs(maximum_event_age_in_seconds=86_400, maximum_retry_attempts=185)


def at_expression(when: dt.datetime) -> str:
    """A one-time schedule expression, `at(yyyy-mm-ddThh:mm:ss)`, read in UTC (Scheduler user guide,
    schedule-types.html#one-time: it fires within that minute)."""
    return f"at({when.astimezone(dt.UTC):%Y-%m-%dT%H:%M:%S})"


def update_request(cluster: str, node_group: str | None, scaling: tuple[int, int, int]) -> str:
    """The UpdateNodegroupConfig request body (EKS API reference): the node group's idle (min, desired, max)."""
    lo, desired, hi = scaling
    body: dict[str, Any] = {
        "clusterName": cluster,
        "nodegroupName": node_group or "NODE_GROUP_NAME_KNOWN_AT_APPLY",  # offline synth never learns it
        "scalingConfig": {"minSize": lo, "desiredSize": desired, "maxSize": hi},
    }
    return json.dumps(body)


@dataclass(frozen=True)
class NodeGroupBackstopArgs:
    pool: str
    cluster_name: str
    node_group: aws.eks.NodeGroup
    stop_at: dt.datetime
    scaling: tuple[int, int, int]  # the node group's idle bounds (min, desired, max)
    tags: dict[str, str]


class NodeGroupBackstop(pulumi.ComponentResource):
    """Creates the schedule group (tagged), the execution role and its one-action policy, and the schedule."""

    schedule: aws.scheduler.Schedule

    def __init__(self, name: str, args: NodeGroupBackstopArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:NodeGroupBackstop", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        ng = args.node_group
        account = ng.arn.apply(iam.account_of)
        role = aws.iam.Role(
            f"{name}-role",
            assume_role_policy=account.apply(iam.scheduler_trust_policy),
            description=f"EventBridge Scheduler: stops burst pool {args.pool} at its window's end",
            tags=args.tags,
            opts=child,
        )
        policy = aws.iam.RolePolicy(
            f"{name}-policy", role=role.id, policy=ng.arn.apply(iam.node_group_scaling_policy), opts=child
        )
        group = aws.scheduler.ScheduleGroup(f"{name}-group", tags=args.tags, opts=child)
        request = ng.node_group_name.apply(lambda n: update_request(args.cluster_name, n, args.scaling))
        self.schedule = aws.scheduler.Schedule(
            f"{name}-schedule",
            group_name=group.name,
            description=f"burst pool {args.pool}: to zero at {args.stop_at.astimezone(dt.UTC):%Y-%m-%d %H:%M} UTC",
            schedule_expression=at_expression(args.stop_at),
            schedule_expression_timezone="UTC",
            flexible_time_window=aws.scheduler.ScheduleFlexibleTimeWindowArgs(mode="OFF"),
            action_after_completion=ACTION_AFTER_COMPLETION,
            target=aws.scheduler.ScheduleTargetArgs(
                arn=UNIVERSAL_TARGET, role_arn=role.arn, input=request, retry_policy=RETRY
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[policy]),
        )
        self.register_outputs({})
