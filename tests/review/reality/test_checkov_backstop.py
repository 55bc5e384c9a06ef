"""Checkov's Terraform checks over the AWS side of an open window's backstop and the burst budget, as the Terraform
resources they amount to (aws_iam_role, aws_iam_role_policy, aws_scheduler_schedule, aws_sqs_queue,
aws_cloudwatch_metric_alarm, aws_budgets_budget, aws_sns_topic): the plan
as `gpufleet preview --burst-window` builds it, since only an open window brings the schedule.

Checkov 3.3.30 (.venv-checkov), framework terraform_json; its checks are in checkov/terraform/checks/resource/aws/ at
that tag (e.g. SchedulerScheduleUsesCMK.py and the IAM policy checks).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpufleet.engine.plan import Plan, PlanResource
from tests.review.reality.test_checkov import scan, window_plan

# Registered, with why: the schedule keeps EventBridge Scheduler's default AWS owned key. Its payload is a cluster
# name, a node group name and three sizes, nothing secret; Scheduler encrypts it at rest with an AWS owned key by
# default (https://docs.aws.amazon.com/scheduler/latest/UserGuide/encryption-rest.html). A customer managed key
# would add a key policy that the backstop depends on at the moment it must fire.
# The burst alert topic keeps SNS's default, unencrypted: a CloudWatch alarm cannot publish to a topic under the AWS
# managed key (https://repost.aws/knowledge-center/cloudwatch-configure-alarm-sns); its messages name an alarm.
ACCEPTED = {"CKV_AWS_297", "CKV_AWS_26"}


def _backstop_resources(plan: Plan) -> list[PlanResource]:
    return [
        r
        for r in plan.resources
        if r.custom and ("-backstop-" in r.name or r.type.startswith(("aws:budgets/", "aws:sns/")))
    ]


def terraform(resources: list[PlanResource]) -> dict[str, Any]:
    """The Terraform JSON of the fields Checkov reads, from each resource's Pulumi inputs."""
    out: dict[str, dict[str, Any]] = {}
    for r in resources:
        i = r.inputs
        match r.type:
            case "aws:iam/role:Role":
                out.setdefault("aws_iam_role", {})[r.name] = {"assume_role_policy": i["assumeRolePolicy"]}
            case "aws:iam/rolePolicy:RolePolicy":
                out.setdefault("aws_iam_role_policy", {})[r.name] = {"role": "backstop", "policy": i["policy"]}
            case "aws:scheduler/schedule:Schedule":
                target = i["target"]
                body = {
                    "schedule_expression": i["scheduleExpression"],
                    "flexible_time_window": {"mode": i["flexibleTimeWindow"]["mode"]},
                    "target": {"arn": target["arn"], "role_arn": "backstop", "input": target["input"]},
                    **({"kms_key_arn": i["kmsKeyArn"]} if "kmsKeyArn" in i else {}),
                }
                if "deadLetterConfig" in target:
                    body["target"]["dead_letter_config"] = {"arn": "backstop-dlq"}
                out.setdefault("aws_scheduler_schedule", {})[r.name] = body
            case "aws:scheduler/scheduleGroup:ScheduleGroup":
                out.setdefault("aws_scheduler_schedule_group", {})[r.name] = {"tags": i.get("tags", {})}
            case "aws:sqs/queue:Queue":
                out.setdefault("aws_sqs_queue", {})[r.name] = {
                    "name": i["name"], "sqs_managed_sse_enabled": i.get("sqsManagedSseEnabled", False),
                    "message_retention_seconds": i["messageRetentionSeconds"],
                }  # fmt: skip
            case "aws:sns/topic:Topic":
                out.setdefault("aws_sns_topic", {})[r.name] = {"name": i["name"]}
            case "aws:cloudwatch/metricAlarm:MetricAlarm":
                out.setdefault("aws_cloudwatch_metric_alarm", {})[r.name] = {
                    "alarm_name": i["name"], "comparison_operator": i["comparisonOperator"],
                    "evaluation_periods": i["evaluationPeriods"], "threshold": i["threshold"],
                    "alarm_actions": ["burst-alerts"] if i.get("alarmActions") else [],
                    "actions_enabled": True,
                }  # fmt: skip
            case "aws:budgets/budget:Budget":
                out.setdefault("aws_budgets_budget", {})[r.name] = {
                    "budget_type": i["budgetType"], "limit_amount": i["limitAmount"], "limit_unit": i["limitUnit"],
                    "time_unit": i["timeUnit"],
                }  # fmt: skip
    return {"resource": out}


def _scan(doc: dict[str, Any], tmp: Path) -> tuple[set[tuple[str, str]], int]:
    (tmp / "main.tf.json").write_text(json.dumps(doc))
    report = scan(tmp, "terraform_json")
    failed = {(f["check_id"], f["resource"]) for f in report.get("results", {}).get("failed_checks", [])}
    return failed, report["summary"]["passed"]


def test_the_backstop_schedule_and_its_role_pass_checkov_but_the_registered_key_check(tmp_path: Path) -> None:
    resources = _backstop_resources(window_plan())
    types = {r.type for r in resources}
    assert {"aws:scheduler/schedule:Schedule", "aws:iam/rolePolicy:RolePolicy", "aws:budgets/budget:Budget"} <= types
    assert {"aws:sqs/queue:Queue", "aws:cloudwatch/metricAlarm:MetricAlarm", "aws:sns/topic:Topic"} <= types
    (tmp_path / "ours").mkdir()
    failed, passed = _scan(terraform(resources), tmp_path / "ours")
    assert passed > 0
    assert {check for check, _ in failed} == ACCEPTED


def test_the_same_scan_fails_a_backstop_role_allowed_everything(tmp_path: Path) -> None:
    """So the scan can fail: the backstop role's policy widened to every action on every resource."""
    doc = terraform(_backstop_resources(window_plan()))
    wildcard = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    for policy in doc["resource"]["aws_iam_role_policy"].values():
        policy["policy"] = json.dumps(wildcard)
    failed, _ = _scan(doc, tmp_path)
    assert {check for check, _ in failed} - ACCEPTED


def test_the_same_scan_fails_a_dead_letter_queue_left_unencrypted(tmp_path: Path) -> None:
    """So the queue is scanned: without SSE-SQS, Checkov's SQS encryption check fails it."""
    doc = terraform(_backstop_resources(window_plan()))
    for queue in doc["resource"]["aws_sqs_queue"].values():
        queue["sqs_managed_sse_enabled"] = False
    failed, _ = _scan(doc, tmp_path)
    assert "CKV_AWS_27" in {check for check, _ in failed}
