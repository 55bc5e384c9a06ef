"""The burst backstop: while a window holds capacity, it stops by itself where the capacity lives, with no runner.

- AWS: an EventBridge Scheduler one-time schedule (`at(...)`, Scheduler user guide schedule-types.html#one-time)
  calls `eks:UpdateNodegroupConfig` through the universal target (managing-targets-universal.html) at expiry +
  grace, setting the node group's idle bounds (EKS API reference, UpdateNodegroupConfig / NodegroupScalingConfig).
- Cloud worker: CronJobs patch the burst ClusterQueues' `spec.stopPolicy` to Hold at expiry and HoldAndDrain at
  expiry + grace (Kueue apis/kueue/v1beta2/clusterqueue_types.go at versions.KUEUE).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest

from components.aws.autoscaler import iam_policy
from components.aws.backstop import at_expression, update_request
from components.hybrid.burst_queues import stops
from components.hybrid.burst_stop import cron_schedule, role_rules
from gpufleet.engine.plan import Plan, PlanResource
from gpufleet.engine.synth import synth_stack
from model import clock, versions
from model.burst import AWS_STOP_LEAD, backstop, minute_at_or_after
from model.burst_spend import RECONCILE_LAG, booking
from model.burst_state import BurstState
from model.conventions import GPU_TAINT
from model.kinds.aws import AUTOSCALED_TAG, backstop_name
from model.load import ESTATE_KEY, check_window, parse_window, read_stack
from tests.burst.helpers import STACK, hybrid_config, window
from tests.conftest import write_project
from tests.hybrid.plan_helpers import cluster, depends_on, kueue_objects
from tests.hybrid.test_capacity import burst_group

START = dt.datetime(2026, 11, 20, 9, 0, 30, tzinfo=dt.UTC)  # 8 h window, 30 min grace (hybrid_config)
EXPIRES = START + dt.timedelta(hours=8)
SCHEDULE = "aws:scheduler/schedule:Schedule"
CRONJOB = "kubernetes:batch/v1:CronJob"


def synth_at(tmp: Path, now: dt.datetime) -> Plan:
    proj = write_project(tmp, hybrid_config(), STACK)
    w = parse_window(window(START, 8, nodes=2), "test")
    state = BurstState(w, (), START).outputs()
    return synth_stack(proj, STACK, read_stack(proj, STACK), burst_state=state, now=now)


def only(plan: Plan, type_: str) -> PlanResource:
    (r,) = plan.find(type_)
    return r


def cron_jobs(plan: Plan) -> dict[str, dict[str, Any]]:
    return {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in plan.find(CRONJOB)}


@pytest.fixture(scope="module")
def open_plan(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    return synth_at(tmp_path_factory.mktemp("open"), START + dt.timedelta(hours=1))


def test_the_node_group_goes_to_zero_at_expiry_plus_grace_by_an_aws_schedule(open_plan: Plan) -> None:
    schedule = only(open_plan, SCHEDULE).inputs
    assert schedule["scheduleExpression"] == "at(2026-11-20T17:31:00)"  # 17:00:30 + 30 min, on the next minute
    assert schedule["scheduleExpressionTimezone"] == "UTC" and schedule["flexibleTimeWindow"] == {"mode": "OFF"}
    target = schedule["target"]
    assert target["arn"] == "arn:aws:scheduler:::aws-sdk:eks:updateNodegroupConfig"
    request = json.loads(target["input"])
    assert request["ClusterName"] == burst_group(open_plan).inputs["clusterName"]
    assert request["ScalingConfig"] == {"MinSize": 0, "DesiredSize": 0, "MaxSize": 1}  # the idle group's bounds
    assert target["retryPolicy"] == {"maximumRetryAttempts": 185, "maximumEventAgeInSeconds": 86400}


def test_the_schedule_role_may_only_scale_that_one_node_group(open_plan: Plan) -> None:
    (role,) = [r for r in open_plan.find("aws:iam/role:Role") if r.name.endswith("-backstop-role")]
    (statement,) = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
    assert statement["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert "aws:SourceAccount" in statement["Condition"]["StringEquals"]
    (policy,) = [r for r in open_plan.find("aws:iam/rolePolicy:RolePolicy") if r.name.endswith("-backstop-policy")]
    allowed, _queue = json.loads(policy.inputs["policy"])["Statement"]
    assert allowed["Action"] == "eks:UpdateNodegroupConfig"
    # The one node group's ARN, its EKS-assigned id left open (Service Authorization Reference, Amazon EKS)
    cluster = burst_group(open_plan).inputs["clusterName"]
    assert allowed["Resource"].endswith(f":nodegroup/{cluster}/burst-h100/*"), allowed["Resource"]
    assert allowed["Resource"].startswith("arn:aws:eks:us-east-1:")


def test_the_backstop_is_tagged_where_aws_takes_tags(open_plan: Plan) -> None:
    """Schedules take no tags (pulumi-aws aws.scheduler.Schedule has no `tags` input); their group and role do."""
    group = only(open_plan, "aws:scheduler/scheduleGroup:ScheduleGroup")
    assert group.inputs["tags"] == burst_group(open_plan).inputs["tags"]
    assert "tags" not in only(open_plan, SCHEDULE).inputs


def test_the_cloud_worker_holds_at_expiry_and_drains_at_the_end_by_itself(open_plan: Plan) -> None:
    jobs = cron_jobs(open_plan)
    assert {n: j["schedule"] for n, j in jobs.items()} == {"burst-hold": "1 17 20 11 *", "burst-drain": "31 17 20 11 *"}
    assert all(j["timeZone"] == "Etc/UTC" for j in jobs.values())
    for name, policy in (("burst-hold", "Hold"), ("burst-drain", "HoldAndDrain")):
        pod = jobs[name]["jobTemplate"]["spec"]["template"]["spec"]
        container, _suspend = pod["containers"]
        assert container["image"] == versions.KUBECTL.reference
        body = json.dumps({"spec": {"stopPolicy": policy}}, separators=(",", ":"))
        assert container["command"] == [
            "kubectl", "patch", "clusterqueues.kueue.x-k8s.io", "research", "--type=merge", f"--patch={body}"
        ]  # fmt: skip
    assert {cluster(r) for r in open_plan.find(CRONJOB)} == {"cloud"}


def test_the_stop_jobs_run_restricted_with_only_get_and_patch_on_the_burst_queues(open_plan: Plan) -> None:
    (ns,) = [r for r in open_plan.find("kubernetes:core/v1:Namespace") if r.name.endswith("-stop-ns")]
    assert ns.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    (role,) = [
        r
        for r in open_plan.find("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")
        if r.name.endswith("-stop-role")
    ]
    assert role.inputs["rules"] == [
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues"], "resourceNames": ["research"],
         "verbs": ["get", "patch"]}
    ]  # fmt: skip
    pod = cron_jobs(open_plan)["burst-hold"]["jobTemplate"]["spec"]["template"]["spec"]
    assert (
        pod["securityContext"]["runAsNonRoot"] and pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    )
    for c in pod["containers"]:
        assert c["securityContext"] == {
            "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True, "capabilities": {"drop": ["ALL"]}
        }  # fmt: skip


def test_a_stop_runs_once_it_suspends_its_own_cron_job_which_recurs_yearly_otherwise(open_plan: Plan) -> None:
    """Cron has no year field, so `1 17 20 11 *` fires again on 20 November next year. Each job also patches its
    own CronJob to `suspend: true`: "all subsequent executions are suspended. This setting does not apply to
    already started executions" (https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/
    #schedule-suspension), so the running patches still finish and retry. The `up` that creates it sets
    `suspend: false` and forces it back from that patch (a later window reuses the names)."""
    jobs = {r.inputs["metadata"]["name"]: r for r in open_plan.find(CRONJOB)}
    for name, job in jobs.items():
        spec = job.inputs["spec"]
        assert spec["suspend"] is False
        assert job.inputs["metadata"]["annotations"] == {"pulumi.com/patchForce": "true"}
        containers = spec["jobTemplate"]["spec"]["template"]["spec"]["containers"]
        (suspend,) = [c for c in containers if c["name"] == "suspend"]
        assert suspend["command"] == [
            "kubectl", "patch", "cronjobs.batch", name, "--namespace=gpufleet-burst-stop", "--type=merge",
            '--patch={"spec":{"suspend":true}}',
        ]  # fmt: skip
    (own,) = [r for r in open_plan.find("kubernetes:rbac.authorization.k8s.io/v1:Role") if r.name.endswith("-own-role")]
    assert own.inputs["metadata"]["namespace"] == "gpufleet-burst-stop"
    assert own.inputs["rules"] == [
        {"apiGroups": ["batch"], "resources": ["cronjobs"], "resourceNames": ["burst-hold", "burst-drain"],
         "verbs": ["get", "patch"]}
    ]  # fmt: skip
    (bound,) = [
        r
        for r in open_plan.find("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding")
        if r.name.endswith("-own-binding")
    ]
    assert bound.inputs["roleRef"]["kind"] == "Role" and bound.inputs["subjects"][0]["name"] == "burst-stop"


def test_the_stop_image_is_pinned_by_digest_at_the_clusters_minor(open_plan: Plan) -> None:
    """A digest pins the bytes, so IfNotPresent is safe (Checkov CKV_K8S_15 and CKV_K8S_43 pass on a digest); the
    kubectl minor is the cluster's (https://kubernetes.io/releases/version-skew-policy/#kubectl)."""
    assert versions.KUBECTL.digest is not None and versions.KUBECTL.digest.startswith("sha256:")
    minor = lambda v: v.lstrip("v").split(".")[:2]  # noqa: E731
    assert minor(versions.KUBECTL.tag) == minor(versions.CLUSTER_AUTOSCALER_APP)
    for job in open_plan.find(CRONJOB):
        for c in job.inputs["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]:
            assert c["image"].endswith(f"@{versions.KUBECTL.digest}") and c["imagePullPolicy"] == "IfNotPresent"


def test_the_aws_schedule_fires_once_and_is_kept_for_the_stack_to_remove(open_plan: Plan) -> None:
    """`at(yyyy-mm-ddThh:mm:ss)` names the year: a one-time schedule invokes its target once
    (https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html#one-time). ActionAfterCompletion
    stays NONE, set explicitly (https://docs.aws.amazon.com/scheduler/latest/APIReference/API_CreateSchedule.html):
    DELETE would remove a schedule Pulumi's state still holds, and the next window's update of it would fail on a
    schedule that no longer exists. The next full `up` deletes it."""
    schedule = only(open_plan, SCHEDULE).inputs
    assert schedule["scheduleExpression"].startswith("at(2026-")
    assert schedule["actionAfterCompletion"] == "NONE"


def test_an_open_windows_queues_wait_for_the_node_group_update(open_plan: Plan) -> None:
    """Opening: the queues admit only once EKS has raised the group's max and removed the stopped taint (Pulumi
    waits for the update to finish before dependents), so Kueue's ProvisioningRequest is not judged against a
    stopped group (cluster-autoscaler would mark it CapacityIsNotFound and retry). The worker's Kubernetes stack,
    which the queues wait for, waits for the site's node groups."""
    (cq,) = [r for r in kueue_objects(open_plan, "ClusterQueue", "cloud") if r.inputs["metadata"]["name"] == "research"]
    assert depends_on(open_plan, cq, burst_group(open_plan))


def test_the_next_up_takes_the_stop_policy_back_from_the_jobs_patch(open_plan: Plan) -> None:
    (cq,) = [r for r in kueue_objects(open_plan, "ClusterQueue", "cloud") if r.inputs["metadata"]["name"] == "research"]
    assert cq.inputs["metadata"]["annotations"] == {"pulumi.com/patchForce": "true"}


def test_while_draining_only_the_stops_still_ahead_are_left(tmp_path: Path) -> None:
    plan = synth_at(tmp_path, EXPIRES + dt.timedelta(minutes=10))
    assert set(cron_jobs(plan)) == {"burst-drain"}  # a CronJob never runs a time before its creation
    assert only(plan, SCHEDULE).inputs["scheduleExpression"] == "at(2026-11-20T17:31:00)"


def test_after_the_grace_the_schedule_is_gone_and_the_queues_carry_no_force(tmp_path: Path) -> None:
    plan = synth_at(tmp_path, EXPIRES + dt.timedelta(hours=1))
    assert not plan.find(SCHEDULE) and not plan.find(CRONJOB)
    assert not [r for r in plan.resources if r.name.endswith("-stop")]
    # Review of L, defect 5: the dead-letter queue and the alarm outlive the window, so the first `up` after the
    # stop keeps AWS's answer (14 days) and a late failure still alarms; only the schedule is per window.
    kept = {r.type for r in plan.resources if "backstop" in r.key}
    assert {"aws:sqs/queue:Queue", "aws:cloudwatch/metricAlarm:MetricAlarm"} <= kept
    (cq,) = [r for r in kueue_objects(plan, "ClusterQueue", "cloud") if r.inputs["metadata"]["name"] == "research"]
    assert "annotations" not in cq.inputs["metadata"]


def test_backstop_times_are_whole_minutes_never_before_the_moment() -> None:
    assert minute_at_or_after(dt.datetime(2026, 1, 1, 10, 0, tzinfo=dt.UTC)) == dt.datetime(
        2026, 1, 1, 10, 0, tzinfo=dt.UTC
    )
    assert minute_at_or_after(dt.datetime(2026, 12, 31, 23, 59, 1, tzinfo=dt.UTC)) == dt.datetime(
        2027, 1, 1, tzinfo=dt.UTC
    )
    local = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert at_expression(local) == "at(2026-06-01T10:00:00)" and cron_schedule(local) == "0 10 1 6 *"


def test_the_update_request_names_the_group_its_bounds_and_the_stopped_taint() -> None:
    assert json.loads(update_request("c", "ng", (0, 0, 1))) == {
        "ClusterName": "c", "NodegroupName": "ng", "ScalingConfig": {"MinSize": 0, "DesiredSize": 0, "MaxSize": 1},
        "Taints": {"AddOrUpdateTaints": [
            {"Key": "gpufleet.io/burst-stopped", "Value": "backstop", "Effect": "NO_SCHEDULE"},
        ]},
    }  # fmt: skip
    assert role_rules(["a", "b"])[0]["resourceNames"] == ["a", "b"]


def sdk_name(member: str) -> str:
    """A member name as AWS's SDK integrations spell it: PascalCase (Step Functions developer guide,
    supported-services-awssdk.html: "expressed in PascalCase, even if the native service API is in camelCase")."""
    return member[:1].upper() + member[1:]


def test_the_request_keys_are_the_eks_api_member_names_as_the_sdk_spells_them() -> None:
    """The universal target's input is the API's request parameters (Scheduler user guide,
    managing-targets-universal.html), named as the SDK names them: botocore's EKS model members, PascalCase.
    camelCase is refused at create (third-party reports, components/aws/backstop.py update_request)."""
    import botocore.loaders

    model = botocore.loaders.Loader().load_service_model("eks", "service-2")
    shapes = model["shapes"]

    def names(shape: str) -> set[str]:
        return {sdk_name(m) for m in shapes[shape]["members"]}

    request = json.loads(update_request("c", "ng", (0, 0, 1)))
    assert set(request) <= names("UpdateNodegroupConfigRequest")
    assert {"ClusterName", "NodegroupName"} <= set(request)  # the request's required members
    assert {sdk_name(m) for m in shapes["UpdateNodegroupConfigRequest"]["required"]} <= set(request)
    assert set(request["ScalingConfig"]) == names("NodegroupScalingConfig")
    assert set(request["Taints"]) <= names("UpdateTaintsPayload")
    (taint,) = request["Taints"]["AddOrUpdateTaints"]
    assert set(taint) == names("Taint")
    assert taint["Effect"] in shapes["TaintEffect"]["enum"]


def test_a_stopped_group_cannot_grow_again_for_the_pods_the_cluster_left_pending(open_plan: Plan) -> None:
    """EKS keeps a max of at least 1, so the stopped group could grow one node. The autoscaler builds an empty
    managed group's node with the group's taints from DescribeNodegroup (kubernetes/autoscaler
    cluster-autoscaler/cloudprovider/aws/aws_manager.go, buildNodeFromTemplate; cached up to 7 minutes,
    managed_nodegroup_cache.go) and EKS puts them on the nodes it launches, so a pod that does not tolerate the
    stopped taint fits neither. No pod gpufleet writes tolerates it, and an open window's group does not carry it."""
    request = json.loads(only(open_plan, SCHEDULE).inputs["target"]["input"])
    (stopped,) = request["Taints"]["AddOrUpdateTaints"]
    assert stopped["Key"] not in {t["key"] for t in burst_group(open_plan).inputs.get("taints", [])}
    tolerated = {t.get("key") for r in open_plan.resources for t in _tolerations(r.inputs)}
    assert GPU_TAINT.key in tolerated  # the walk finds the tolerations gpufleet writes
    assert stopped["Key"] not in tolerated and None not in tolerated  # nor does any tolerate every taint


@pytest.mark.parametrize("after_stop", [dt.timedelta(minutes=-4), dt.timedelta(hours=1)])
def test_no_later_up_undoes_the_aws_stop(tmp_path: Path, after_stop: dt.timedelta) -> None:
    """After the AWS stop, a refreshing `up` compares the live group with the program's. The program declares the
    stop's bounds and taint itself, so the update sends nothing back (Pulumi sends only what differs from the
    refreshed state). An `up` judged 4 minutes before the stop, a clock that far behind AWS's, judges the group
    stopped too (model.burst.stop_phase, CLOCK_SKEW)."""
    aws_stop = minute_at_or_after(EXPIRES + dt.timedelta(minutes=30))  # hybrid_config: 30 minutes' grace
    (tmp_path / "open").mkdir()
    (tmp_path / "later").mkdir()
    opened = synth_at(tmp_path / "open", aws_stop - dt.timedelta(minutes=6))
    assert burst_group(opened).inputs["scalingConfig"]["maxSize"] == 2  # a clock 6 minutes behind: not yet
    plan = synth_at(tmp_path / "later", aws_stop + after_stop)
    group = burst_group(plan)
    stop = json.loads(update_request("c", "ng", (0, 0, 1)))
    assert group.inputs["scalingConfig"] == {
        "minSize": stop["ScalingConfig"]["MinSize"],
        "desiredSize": stop["ScalingConfig"]["DesiredSize"],
        "maxSize": stop["ScalingConfig"]["MaxSize"],
    }
    (stopped,) = stop["Taints"]["AddOrUpdateTaints"]
    assert {"key": stopped["Key"], "value": stopped["Value"], "effect": stopped["Effect"]} in group.inputs["taints"]
    assert "scalingConfig.desiredSize" not in group.ignore_changes


def test_a_stopped_group_is_out_of_the_autoscalers_reach_until_a_window_opens(open_plan: Plan, tmp_path: Path) -> None:
    """A group that has had nodes is built from the autoscaler's copy of its last node, untainted, until the
    autoscaler restarts (kubernetes/autoscaler cluster-autoscaler/cloudprovider/aws/README.md at the pinned tag:
    DescribeNodegroup only for a group that "has never had any nodes"). So a stopped group loses gpufleet's
    discovery tag: the autoscaler discovers groups with every key of autoDiscovery.tags, and its IAM policy scales
    only groups carrying that tag. An open window's group has it."""
    stopped = synth_at(tmp_path, EXPIRES + dt.timedelta(hours=1))

    def tagged(plan: Plan) -> set[str]:
        group = burst_group(plan)
        return {t.inputs["tag"]["key"] for t in plan.find("aws:autoscaling/tag:Tag") if t.parent == group.parent}

    assert AUTOSCALED_TAG in tagged(open_plan) and AUTOSCALED_TAG not in tagged(stopped)
    assert "gpufleet.io/burst-stopped" in {t["key"] for t in burst_group(stopped).inputs["taints"]}
    policy = json.loads(iam_policy("c"))
    (scale,) = [st for st in policy["Statement"] if "autoscaling:SetDesiredCapacity" in st["Action"]]
    assert scale["Condition"]["Null"] == {f"aws:ResourceTag/{AUTOSCALED_TAG}": "false"}


def _tolerations(value: object) -> list[dict[str, object]]:
    """Every toleration anywhere in a resource's inputs."""
    if isinstance(value, dict):
        own = value.get("tolerations")
        found = [t for t in own if isinstance(t, dict)] if isinstance(own, list) else []
        return found + [t for v in value.values() for t in _tolerations(v)]
    if isinstance(value, list):
        return [t for v in value for t in _tolerations(v)]
    return []


def test_backstop_names_fit_aws_limits_whatever_the_site_and_pool_names() -> None:
    """Schedule, schedule group and role names hold at most 64 characters (Scheduler API reference, CreateSchedule
    `Name`; CloudFormation AWS::Scheduler::ScheduleGroup `Name`: `^[0-9a-zA-Z-_.]+$`, at most 64); a cluster name
    may hold 100 and a pool 40. The region tells two regions' roles apart (IAM names are per account)."""
    cluster, pool = "e" * 40 + "-prod-" + "s" * 40, "p" * 40
    names = {backstop_name(cluster, region, pool) for region in ("us-east-1", "eu-west-1")}
    assert len(names) == 2
    assert all(len(n) <= 64 and re.fullmatch(r"[0-9a-zA-Z\-_.]+", n) for n in names)


def test_the_backstop_is_named_explicitly_and_names_the_node_group_it_stops(open_plan: Plan) -> None:
    """Pulumi's auto-names add a suffix to the logical name, past 64 characters for long site and pool names; and
    the schedule must name the node group before the group is raised, so both names are fixed."""
    ng = burst_group(open_plan)
    assert ng.inputs["nodeGroupName"] == "burst-h100"
    schedule = only(open_plan, SCHEDULE).inputs
    assert json.loads(schedule["target"]["input"])["NodegroupName"] == "burst-h100"
    name = backstop_name(ng.inputs["clusterName"], "us-east-1", "burst-h100")
    group = only(open_plan, "aws:scheduler/scheduleGroup:ScheduleGroup").inputs
    (role,) = [r for r in open_plan.find("aws:iam/role:Role") if r.name.endswith("-backstop-role")]
    assert schedule["name"] == group["name"] == role.inputs["name"] == name and schedule["groupName"] == name


def test_no_grace_leaves_only_the_drain_so_no_hold_can_land_after_it(tmp_path: Path) -> None:
    """grace_minutes 0 puts Hold and HoldAndDrain in the same minute; two CronJobs would race, and a Hold landing
    last would leave the queues holding admitted work. HoldAndDrain alone also stops admission."""
    config = hybrid_config()
    config[ESTATE_KEY]["burst"]["grace_minutes"] = 0
    spec = read_stack(write_project(tmp_path, config, STACK), STACK).estate()
    w = parse_window(window(START, 8, nodes=2), "test")
    assert [(s.name, s.stop_policy) for s in stops(spec, w, START)] == [("drain", "HoldAndDrain")]


def test_an_up_long_before_the_stop_keeps_the_aws_schedule_and_one_minutes_before_stops_the_group_itself(
    tmp_path: Path,
) -> None:
    """The stop is judged from the window, not the program's now: an `up` an hour before the stop keeps the
    schedule it made earlier, unchanged. An `up` 4 minutes before it (deploy.yml, a draining reconcile, a lowered
    budget's moved expiry) stops the group itself (model.burst.group_stopped, CLOCK_SKEW) and sends no schedule,
    so no schedule time so near that AWS might refuse it can hold back the group's update, which depends on it."""
    stop = minute_at_or_after(EXPIRES + dt.timedelta(minutes=30))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "c").mkdir()
    early = synth_at(tmp_path / "a", START + dt.timedelta(hours=1))
    later = synth_at(tmp_path / "b", stop - dt.timedelta(hours=1))
    assert only(later, SCHEDULE).inputs == only(early, SCHEDULE).inputs
    assert only(later, SCHEDULE).inputs["scheduleExpression"] == at_expression(stop)
    late = synth_at(tmp_path / "c", stop - dt.timedelta(minutes=4))
    assert not late.find(SCHEDULE)
    assert burst_group(late).inputs["scalingConfig"] == {"minSize": 0, "desiredSize": 0, "maxSize": 1}
    assert set(cron_jobs(late)) == {"burst-drain"}


def test_a_window_whose_stop_would_be_within_the_lead_of_its_opening_gets_a_later_aws_stop(tmp_path: Path) -> None:
    """Rather than refused, a 4-minute window with no grace stops on AWS AWS_STOP_LEAD after its expiry, far enough
    ahead for the schedule; its worst case and booking count to that time."""
    config = hybrid_config()
    config[ESTATE_KEY]["burst"]["grace_minutes"] = 0
    spec = read_stack(write_project(tmp_path, config, STACK), STACK).estate()
    w = parse_window(window(START, 4 / 60, nodes=2), "test")
    assert w is not None
    with clock.frozen(START):
        check_window(spec, w, "test")
    b = backstop(spec, w, START)
    assert b is not None and b.aws_stop_at == minute_at_or_after(w.expires + AWS_STOP_LEAD)
    assert b.aws_stop_at - START > AWS_STOP_LEAD


def test_a_failed_stop_lands_in_an_encrypted_dead_letter_queue_the_role_may_send_to(open_plan: Plan) -> None:
    """Scheduler delivers what its retries could not as the execution role (Scheduler user guide,
    configuring-schedule-dlq.html): the queue is standard (no FIFO), SSE-SQS encrypted, and the role may send."""
    queue = only(open_plan, "aws:sqs/queue:Queue")
    assert queue.inputs["sqsManagedSseEnabled"] is True and not queue.inputs.get("fifoQueue")
    assert queue.inputs["messageRetentionSeconds"] == 1_209_600
    target = only(open_plan, SCHEDULE).inputs["target"]
    assert "deadLetterConfig" in target and "retryPolicy" in target
    (policy,) = [r for r in open_plan.find("aws:iam/rolePolicy:RolePolicy") if r.name.endswith("-backstop-policy")]
    actions = {s["Action"] for s in json.loads(policy.inputs["policy"])["Statement"]}
    assert actions == {"eks:UpdateNodegroupConfig", "sqs:SendMessage"}


def test_a_failed_stop_raises_an_alarm_to_the_burst_alert_emails(open_plan: Plan) -> None:
    """The alarm sums the schedule group's failure metrics (AWS/Scheduler, dimension ScheduleGroup: Scheduler user
    guide, monitoring-cloudwatch.html); the first target error is enough, a day before the retries run out."""
    alarm = only(open_plan, "aws:cloudwatch/metricAlarm:MetricAlarm").inputs
    metrics = [q["metric"] for q in alarm["metricQueries"] if "metric" in q]
    assert {m["metricName"] for m in metrics} >= {
        "TargetErrorCount",
        "TargetErrorThrottledCount",
        "InvocationsSentToDeadLetterCount",
    }
    group = only(open_plan, "aws:scheduler/scheduleGroup:ScheduleGroup").inputs["name"]
    assert all(m["namespace"] == "AWS/Scheduler" and m["dimensions"] == {"ScheduleGroup": group} for m in metrics)
    assert alarm["threshold"] == 0 and alarm["treatMissingData"] == "notBreaching"
    (topic,) = open_plan.find("aws:sns/topic:Topic")
    assert len(alarm["alarmActions"]) == 1  # the burst alert topic's ARN, known at apply
    (sub,) = open_plan.find("aws:sns/topicSubscription:TopicSubscription")
    assert sub.inputs["protocol"] == "email" and sub.inputs["endpoint"] == "ml-platform-oncall@example.com"
    assert topic.inputs["name"].endswith("-burst-alerts")


def test_a_close_with_a_short_grace_sends_a_stop_far_enough_ahead_and_books_to_it(tmp_path: Path) -> None:
    """`close` records the expiry as now; with a 6-minute grace the schedule would name a minute that can pass
    before its `up` sends it. It goes AWS_STOP_LEAD after the expiry instead, and the money is booked to that time
    (one rule: model.burst_spend.backstop_time); the cloud queues still drain at expiry + grace."""
    config = hybrid_config()
    config[ESTATE_KEY]["burst"]["grace_minutes"] = 6
    proj = write_project(tmp_path, config, STACK)
    spec = read_stack(proj, STACK).estate()
    closed_at = START + dt.timedelta(hours=1)
    w = parse_window(window(START, 8, nodes=2), "test")
    assert w is not None
    closed = w.model_copy(update={"expires": closed_at})
    plan = synth_stack(proj, STACK, read_stack(proj, STACK), burst_state=BurstState(closed, (), closed_at).outputs(),
                       now=closed_at)  # fmt: skip
    aws_stop = minute_at_or_after(closed_at + AWS_STOP_LEAD)
    assert only(plan, SCHEDULE).inputs["scheduleExpression"] == at_expression(aws_stop)
    assert aws_stop - closed_at >= AWS_STOP_LEAD
    assert cron_jobs(plan)["burst-drain"]["schedule"] == cron_schedule(
        minute_at_or_after(closed_at + dt.timedelta(minutes=6))
    )
    assert booking(spec, closed, "test").end == aws_stop + RECONCILE_LAG
