"""NodeGroupBackstop: at a burst window's expiry + grace, AWS scales the burst node group to zero by itself.

An EventBridge Scheduler one-time schedule calls `eks:UpdateNodegroupConfig` through its universal target: idle
bounds (min 0, desired 0, max 1) and the stopped taint (model.conventions.BURST_STOPPED_TAINT), so the autoscaler
cannot regrow the group for work the in-cluster stop left pending. No runner, no reachable API. Not an Auto
Scaling scheduled action: EKS owns a managed node group's ASG.

The role may call that one action on that one group; the schedule fires once (ACTION_AFTER_COMPLETION). A failed
stop alarms the burst alert emails and an encrypted dead-letter queue keeps AWS's answer. Only the schedule is
per window.

It is built before the capacity, which depends on it, so an `up` that cannot create it fails before the group is
raised. The group's name is fixed (model.kinds.aws.burst_node_group_name), so it waits for nothing of the group.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from components.aws import iam
from model.conventions import BURST_STOPPED_TAINT
from model.kinds.aws import backstop_name

# `arn:aws:scheduler:::aws-sdk:<service>:<apiAction>`, the input being "the request parameters that EventBridge
# Scheduler sends to the target API", their shape "determined by the service API" (Scheduler user guide,
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
# The schedule group's metrics in AWS/Scheduler, dimension ScheduleGroup (Scheduler user guide,
# monitoring-cloudwatch.html, "List of metrics"). TargetErrorCount counts the first failed call, a day before retries
# run out, and TargetErrorThrottledCount a call the target throttled; the other three count calls given up
# (dropped, sent to the dead-letter queue, or not even that).
SCHEDULER_NAMESPACE = "AWS/Scheduler"
FAILURE_METRICS = (
    "TargetErrorCount",
    "TargetErrorThrottledCount",
    "InvocationDroppedCount",
    "InvocationsSentToDeadLetterCount",
    "InvocationsFailedToBeSentToDeadLetterCount",
)
ALARM_PERIOD_SECONDS = 60
# A dead-letter event is kept as long as SQS allows, 14 days (SQS API reference, SetQueueAttributes,
# MessageRetentionPeriod: 60 to 1,209,600 seconds): long enough to read after a weekend.
DEAD_LETTER_RETENTION_SECONDS = 1_209_600


def at_expression(when: dt.datetime) -> str:
    """A one-time schedule expression, `at(yyyy-mm-ddThh:mm:ss)`, read in UTC (Scheduler user guide,
    schedule-types.html#one-time: it fires within that minute)."""
    return f"at({when.astimezone(dt.UTC):%Y-%m-%dT%H:%M:%S})"


def update_request(cluster: str, node_group: str, scaling: tuple[int, int, int]) -> str:
    """The UpdateNodegroupConfig request parameters: the node group's idle (min, desired, max), and the stopped
    taint added (UpdateTaintsPayload.AddOrUpdateTaints; the group's other taints stay).

    A universal target takes "the request parameters" as the AWS SDK names them (Scheduler user guide,
    managing-targets-universal.html): the API model's member names with a capital first letter, as AWS's SDK
    integrations spell them ("Parameters ... are expressed in PascalCase, even if the native service API is in
    camelCase", Step Functions developer guide, supported-services-awssdk.html). Public Scheduler configs for this
    action report that the API's own camelCase is refused at create ("missing field ClusterName"). Enum values stay
    as the API spells them. A test derives the keys from botocore's EKS model."""
    lo, desired, hi = scaling
    taint = BURST_STOPPED_TAINT.as_eks()
    body: dict[str, Any] = {
        "ClusterName": cluster,
        "NodegroupName": node_group,
        "ScalingConfig": {"MinSize": lo, "DesiredSize": desired, "MaxSize": hi},
        "Taints": {"AddOrUpdateTaints": [{"Key": taint["key"], "Value": taint["value"], "Effect": taint["effect"]}]},
    }
    return json.dumps(body)


def node_group_arn(region: str, account: str, cluster: str, node_group: str) -> str:
    """Every node group of that name in that cluster: EKS ends a node group's ARN with an id it assigns at
    creation (`arn:${Partition}:eks:${Region}:${Account}:nodegroup/${ClusterName}/${NodegroupName}/${UUID}`,
    Service Authorization Reference, Amazon EKS resource types)."""
    return f"arn:{iam.partition(region)}:eks:{region}:{account}:nodegroup/{cluster}/{node_group}/*"


@dataclass(frozen=True)
class NodeGroupBackstopArgs:
    pool: str
    region: str
    cluster_name: str
    node_group_name: str  # fixed before the group exists (model.kinds.aws.burst_node_group_name)
    node_role_arn: pulumi.Input[str]  # any ARN of the site's account: the account the schedule acts in
    stop_at: dt.datetime | None  # None: no window holds capacity, so no schedule
    scaling: tuple[int, int, int]  # the node group's idle bounds (min, desired, max)
    tags: dict[str, str]
    alert_topic_arn: pulumi.Input[str] | None = None  # the burst alert topic (components.aws.burst_budget)


def failure_queries(schedule_group: pulumi.Input[str]) -> list[aws.cloudwatch.MetricAlarmMetricQueryArgs]:
    """The alarm's metric math: the sum of FAILURE_METRICS for one schedule group, a metric with no data as 0."""
    metrics = [
        aws.cloudwatch.MetricAlarmMetricQueryArgs(
            id=f"m{i}",
            return_data=False,
            metric=aws.cloudwatch.MetricAlarmMetricQueryMetricArgs(
                namespace=SCHEDULER_NAMESPACE,
                metric_name=metric,
                dimensions={"ScheduleGroup": schedule_group},
                period=ALARM_PERIOD_SECONDS,
                stat="Sum",
            ),
        )
        for i, metric in enumerate(FAILURE_METRICS)
    ]
    total = " + ".join(f"FILL(m{i}, 0)" for i in range(len(FAILURE_METRICS)))
    return [*metrics, aws.cloudwatch.MetricAlarmMetricQueryArgs(id="failures", expression=total, return_data=True)]


class NodeGroupBackstop(pulumi.ComponentResource):
    """Creates the schedule group (tagged), the execution role and its policy, the dead-letter queue and the alarm
    on the group's failures; and, while a window holds capacity (`stop_at`), the schedule."""

    schedule: aws.scheduler.Schedule | None
    alarm: aws.cloudwatch.MetricAlarm

    def __init__(self, name: str, args: NodeGroupBackstopArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:aws:NodeGroupBackstop", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        aws_name = backstop_name(args.cluster_name, args.region, args.pool)
        account = pulumi.Output.from_input(args.node_role_arn).apply(iam.account_of)
        group_arn = account.apply(lambda a: node_group_arn(args.region, a, args.cluster_name, args.node_group_name))
        role = aws.iam.Role(
            f"{name}-role",
            name=aws_name,
            assume_role_policy=account.apply(iam.scheduler_trust_policy),
            description=f"EventBridge Scheduler: stops burst pool {args.pool} at its window's end",
            tags=args.tags,
            opts=child,
        )
        # SSE-SQS, SQS's own keys: Scheduler sends as the execution role, which then needs no KMS grant (SQS
        # developer guide, sqs-server-side-encryption.html).
        queue = aws.sqs.Queue(
            f"{name}-dlq",
            name=f"{aws_name}-dlq",
            sqs_managed_sse_enabled=True,
            message_retention_seconds=DEAD_LETTER_RETENTION_SECONDS,
            tags=args.tags,
            opts=child,
        )
        policy = aws.iam.RolePolicy(
            f"{name}-policy",
            role=role.id,
            policy=pulumi.Output.all(group_arn, queue.arn).apply(lambda a: iam.node_group_scaling_policy(a[0], a[1])),
            opts=child,
        )
        group = aws.scheduler.ScheduleGroup(f"{name}-group", name=aws_name, tags=args.tags, opts=child)
        self.schedule = None if args.stop_at is None else self._schedule(name, args, group, role, queue, policy)
        # notBreaching: Scheduler publishes nothing before the schedule fires, and nothing is not a failure.
        actions = [args.alert_topic_arn] if args.alert_topic_arn is not None else []
        self.alarm = aws.cloudwatch.MetricAlarm(
            f"{name}-alarm",
            name=f"{aws_name}-failed",
            alarm_description=f"burst pool {args.pool}: the backstop could not stop the node group; stop it by hand "
            f"(dead-letter queue {aws_name}-dlq holds AWS's answer)",
            comparison_operator="GreaterThanThreshold",
            threshold=0,
            evaluation_periods=1,
            metric_queries=failure_queries(group.name),
            treat_missing_data="notBreaching",
            alarm_actions=actions,
            tags=args.tags,
            opts=child,
        )
        self.register_outputs({})

    def _schedule(
        self,
        name: str,
        args: NodeGroupBackstopArgs,
        group: aws.scheduler.ScheduleGroup,
        role: aws.iam.Role,
        queue: aws.sqs.Queue,
        policy: aws.iam.RolePolicy,
    ) -> aws.scheduler.Schedule:
        """The window's one-time schedule: at `stop_at`, the node group's idle bounds."""
        assert args.stop_at is not None
        aws_name = backstop_name(args.cluster_name, args.region, args.pool)
        request = update_request(args.cluster_name, args.node_group_name, args.scaling)
        return aws.scheduler.Schedule(
            f"{name}-schedule",
            name=aws_name,
            group_name=group.name,
            description=f"burst pool {args.pool}: to zero at {args.stop_at.astimezone(dt.UTC):%Y-%m-%d %H:%M} UTC",
            schedule_expression=at_expression(args.stop_at),
            schedule_expression_timezone="UTC",
            flexible_time_window=aws.scheduler.ScheduleFlexibleTimeWindowArgs(mode="OFF"),
            action_after_completion=ACTION_AFTER_COMPLETION,
            target=aws.scheduler.ScheduleTargetArgs(
                arn=UNIVERSAL_TARGET,
                role_arn=role.arn,
                input=request,
                retry_policy=RETRY,
                dead_letter_config=aws.scheduler.ScheduleTargetDeadLetterConfigArgs(arn=queue.arn),
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[policy]),
        )
