"""BurstStop: on the cloud worker, CronJobs that hold the burst ClusterQueues at a window's expiry and hold and drain
them at its end, whether or not any `gpufleet burst` command or `up` runs then.

- Each stop is a CronJob at its minute (UTC), running `kubectl patch` of every burst tenant's ClusterQueue to the
  phase's `spec.stopPolicy` (Kueue apis/kueue/v1beta2/clusterqueue_types.go at versions.KUEUE). The patch is
  idempotent. A stop whose time has passed is left out: a CronJob never runs a time before its creation.
- Runs once: cron has no year, so the job also suspends its own CronJob (SUSPEND_DOCS). The next `up` after the
  window removes the component; a later window's `up` sets `suspend: false` again.
- Least privilege: a ServiceAccount in its own namespace (Pod Security restricted) may only get and patch those
  ClusterQueues and its own CronJobs, by name.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from model import versions
from model.conventions import ROLE_LABEL
from model.queues import KUEUE_API
from model.tags import Tags

NAMESPACE = "gpufleet-burst-stop"
SERVICE_ACCOUNT = "burst-stop"
ROLE = "gpufleet-burst-stop"
NONROOT_UID = 65532
# Run late rather than never if the CronJob controller missed the minute (kube-controller-manager down): a day.
STARTING_DEADLINE_SECONDS = 86_400
# "If you set spec.suspend to true, all subsequent executions are suspended. This setting does not apply to already
# started executions" (CronJob concepts, "Schedule suspension").
SUSPEND_DOCS = "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#schedule-suspension"
# On the burst ClusterQueues and the CronJobs while the jobs may patch them: the next `up` takes `stopPolicy` and
# `suspend` back from those patches instead of failing on the server-side apply conflict (pulumi-kubernetes docs,
# managing-resources-with-server-side-apply, "Upsert a Resource": the annotation forces an override of conflicts).
PATCH_FORCE = {"pulumi.com/patchForce": "true"}
# The image is pinned by digest, so a node's copy is the same bytes and is used without a pull. A node that has
# never run it pulls it at the stop (from registry.k8s.io): a stop can be late while the registry is unreachable.
PULL_POLICY = "IfNotPresent"


@dataclass(frozen=True)
class Stop:
    """At `at`, every burst ClusterQueue gets `stop_policy`."""

    name: str  # `hold` or `drain`: the CronJob's name suffix
    at: dt.datetime
    stop_policy: str


def cron_schedule(at: dt.datetime) -> str:
    """The cron line of `at`'s minute of the year (UTC; model.burst.Backstop times are whole minutes)."""
    utc = at.astimezone(dt.UTC)
    return f"{utc.minute} {utc.hour} {utc.day} {utc.month} *"


def cron_job_name(stop: Stop) -> str:
    return f"burst-{stop.name}"


def merge_patch(kind: str, name: str, body: dict[str, Any], namespace: str | None = None) -> list[str]:
    where = [f"--namespace={namespace}"] if namespace else []
    text = json.dumps(body, separators=(",", ":"))
    return ["kubectl", "patch", kind, name, *where, "--type=merge", f"--patch={text}"]


def patch_command(queue: str, stop_policy: str) -> list[str]:
    return merge_patch("clusterqueues.kueue.x-k8s.io", queue, {"spec": {"stopPolicy": stop_policy}})


def suspend_command(stop: Stop) -> list[str]:
    """The job's own CronJob suspended, so it never runs again (SUSPEND_DOCS)."""
    return merge_patch("cronjobs.batch", cron_job_name(stop), {"spec": {"suspend": True}}, NAMESPACE)


def _container(name: str, command: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "image": versions.KUBECTL.reference,
        "imagePullPolicy": PULL_POLICY,
        "command": command,
        "env": [{"name": "HOME", "value": "/tmp"}],  # kubectl's cache; the root file system is read-only
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}},
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
    }


def pod_spec(queues: Sequence[str], stop: Stop) -> dict[str, Any]:
    """One container per ClusterQueue (`kubectl patch` takes one name) and one that suspends the CronJob, side by
    side: a failed patch is retried in the same Job whatever the CronJob's state. Pod Security restricted, on
    system nodes."""
    containers = [_container(f"patch-{i}", patch_command(q, stop.stop_policy)) for i, q in enumerate(queues)]
    return {
        "serviceAccountName": SERVICE_ACCOUNT,
        "restartPolicy": "OnFailure",
        "nodeSelector": {ROLE_LABEL: "system"},
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": NONROOT_UID,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [*containers, _container("suspend", suspend_command(stop))],
        "volumes": [{"name": "tmp", "emptyDir": {"sizeLimit": "16Mi"}}],
    }


def cron_job_spec(stop: Stop, queues: Sequence[str], labels: dict[str, str]) -> dict[str, Any]:
    return {
        "schedule": cron_schedule(stop.at),
        "timeZone": "Etc/UTC",
        "suspend": False,  # set, so an `up` takes it back from the job's own patch (PATCH_FORCE)
        "concurrencyPolicy": "Forbid",
        "startingDeadlineSeconds": STARTING_DEADLINE_SECONDS,
        "successfulJobsHistoryLimit": 1,
        "failedJobsHistoryLimit": 1,
        "jobTemplate": {
            "spec": {
                "backoffLimit": 6,
                "template": {"metadata": {"labels": labels}, "spec": pod_spec(queues, stop)},
            }
        },
    }


def role_rules(queues: Sequence[str]) -> list[dict[str, Any]]:
    """Get and patch the named ClusterQueues, nothing else."""
    group = KUEUE_API.split("/", 1)[0]
    return [
        {"apiGroups": [group], "resources": ["clusterqueues"], "resourceNames": list(queues), "verbs": ["get", "patch"]}
    ]


def own_rules(stops: Sequence[Stop]) -> list[dict[str, Any]]:
    """In the stops' namespace: get and patch their own CronJobs, by name (to suspend them)."""
    names = [cron_job_name(s) for s in stops]
    return [{"apiGroups": ["batch"], "resources": ["cronjobs"], "resourceNames": names, "verbs": ["get", "patch"]}]


def _rules(rules: list[dict[str, Any]]) -> list[k8s.rbac.v1.PolicyRuleArgs]:
    return [
        k8s.rbac.v1.PolicyRuleArgs(
            api_groups=r["apiGroups"], resources=r["resources"], resource_names=r["resourceNames"], verbs=r["verbs"]
        )
        for r in rules
    ]


@dataclass(frozen=True)
class BurstStopArgs:
    tags: Tags
    queues: Sequence[str]  # the burst ClusterQueues
    stops: Sequence[Stop]  # those still ahead
    depends_on: Sequence[pulumi.Resource]  # the queues


class BurstStop(pulumi.ComponentResource):
    """The namespace, ServiceAccount, ClusterRole and binding, and one CronJob per stop."""

    def __init__(self, name: str, args: BurstStopArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:hybrid:BurstStop", name, None, opts)
        labels = args.tags.labels()
        child = pulumi.ResourceOptions(parent=self)
        psa = {"pod-security.kubernetes.io/enforce": "restricted"}
        ns = k8s.core.v1.Namespace(
            f"{name}-ns", metadata=k8s.meta.v1.ObjectMetaArgs(name=NAMESPACE, labels={**labels, **psa}), opts=child
        )
        in_ns = pulumi.ResourceOptions(parent=self, depends_on=[ns])
        sa = k8s.core.v1.ServiceAccount(
            f"{name}-sa", metadata=k8s.meta.v1.ObjectMetaArgs(name=SERVICE_ACCOUNT, namespace=NAMESPACE, labels=labels),
            opts=in_ns,
        )  # fmt: skip
        role = k8s.rbac.v1.ClusterRole(
            f"{name}-role", metadata=k8s.meta.v1.ObjectMetaArgs(name=ROLE, labels=labels),
            rules=_rules(role_rules(args.queues)), opts=child,
        )  # fmt: skip
        subjects = [k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=SERVICE_ACCOUNT, namespace=NAMESPACE)]
        binding = k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-binding",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=ROLE, labels=labels),
            role_ref=k8s.rbac.v1.RoleRefArgs(api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=ROLE),
            subjects=subjects,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[sa, role]),
        )
        own = k8s.rbac.v1.Role(
            f"{name}-own-role", metadata=k8s.meta.v1.ObjectMetaArgs(name=ROLE, namespace=NAMESPACE, labels=labels),
            rules=_rules(own_rules(args.stops)), opts=in_ns,
        )  # fmt: skip
        own_binding = k8s.rbac.v1.RoleBinding(
            f"{name}-own-binding",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=ROLE, namespace=NAMESPACE, labels=labels),
            role_ref=k8s.rbac.v1.RoleRefArgs(api_group="rbac.authorization.k8s.io", kind="Role", name=ROLE),
            subjects=subjects,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[sa, own]),
        )
        for stop in args.stops:
            spec: Any = cron_job_spec(stop, args.queues, labels)  # a plain dict, as the API takes it
            k8s.batch.v1.CronJob(
                f"{name}-{stop.name}",
                metadata=k8s.meta.v1.ObjectMetaArgs(
                    name=cron_job_name(stop), namespace=NAMESPACE, labels=labels, annotations=PATCH_FORCE
                ),
                spec=spec,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[binding, own_binding, *args.depends_on]),
            )
        self.register_outputs({})
