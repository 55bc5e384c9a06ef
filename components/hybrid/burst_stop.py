"""BurstStop: on the cloud worker, CronJobs that hold the burst ClusterQueues at a window's expiry and hold and drain
them at its end, whether or not any `gpufleet burst` command or `up` runs then.

- Each stop is a CronJob at its minute (UTC, `spec.timeZone`), running `kubectl patch` of every burst tenant's
  ClusterQueue to the phase's `spec.stopPolicy` (Kueue apis/kueue/v1beta2/clusterqueue_types.go at versions.KUEUE:
  Hold stops admission, HoldAndDrain also evicts admitted work). The patch is idempotent, so a late or repeated run
  is harmless. A stop whose time has passed is left out: a CronJob never runs a time before its creation.
- Least privilege: a ServiceAccount in its own namespace (Pod Security restricted) may only get and patch those
  ClusterQueues, by name.
- Cron has no year: a CronJob left behind would patch again a year later. The next `up` after the window removes
  the whole component.
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


def patch_command(queue: str, stop_policy: str) -> list[str]:
    body = json.dumps({"spec": {"stopPolicy": stop_policy}}, separators=(",", ":"))
    return ["kubectl", "patch", "clusterqueues.kueue.x-k8s.io", queue, "--type=merge", f"--patch={body}"]


def pod_spec(queues: Sequence[str], stop_policy: str) -> dict[str, Any]:
    """One container per ClusterQueue (`kubectl patch` takes one name), Pod Security restricted, on system nodes."""
    container_context = {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    containers = [
        {
            "name": f"patch-{i}",
            "image": versions.KUBECTL.reference,
            "command": patch_command(q, stop_policy),
            "env": [{"name": "HOME", "value": "/tmp"}],  # kubectl's cache; the root file system is read-only
            "securityContext": container_context,
            "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}},
            "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
        }
        for i, q in enumerate(queues)
    ]
    return {
        "serviceAccountName": SERVICE_ACCOUNT,
        "restartPolicy": "OnFailure",
        "nodeSelector": {ROLE_LABEL: "system"},
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": NONROOT_UID,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": containers,
        "volumes": [{"name": "tmp", "emptyDir": {"sizeLimit": "16Mi"}}],
    }


def cron_job_spec(stop: Stop, queues: Sequence[str], labels: dict[str, str]) -> dict[str, Any]:
    return {
        "schedule": cron_schedule(stop.at),
        "timeZone": "Etc/UTC",
        "concurrencyPolicy": "Forbid",
        "startingDeadlineSeconds": STARTING_DEADLINE_SECONDS,
        "successfulJobsHistoryLimit": 1,
        "failedJobsHistoryLimit": 1,
        "jobTemplate": {
            "spec": {
                "backoffLimit": 6,
                "template": {"metadata": {"labels": labels}, "spec": pod_spec(queues, stop.stop_policy)},
            }
        },
    }


def role_rules(queues: Sequence[str]) -> list[dict[str, Any]]:
    """Get and patch the named ClusterQueues, nothing else."""
    group = KUEUE_API.split("/", 1)[0]
    return [
        {"apiGroups": [group], "resources": ["clusterqueues"], "resourceNames": list(queues), "verbs": ["get", "patch"]}
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
        rules = [
            k8s.rbac.v1.PolicyRuleArgs(
                api_groups=r["apiGroups"], resources=r["resources"], resource_names=r["resourceNames"], verbs=r["verbs"]
            )
            for r in role_rules(args.queues)
        ]
        role = k8s.rbac.v1.ClusterRole(
            f"{name}-role", metadata=k8s.meta.v1.ObjectMetaArgs(name=ROLE, labels=labels), rules=rules, opts=child
        )
        binding = k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-binding",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=ROLE, labels=labels),
            role_ref=k8s.rbac.v1.RoleRefArgs(api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=ROLE),
            subjects=[k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=SERVICE_ACCOUNT, namespace=NAMESPACE)],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[sa, role]),
        )
        for stop in args.stops:
            spec: Any = cron_job_spec(stop, args.queues, labels)  # a plain dict, as the API takes it
            k8s.batch.v1.CronJob(
                f"{name}-{stop.name}",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=f"burst-{stop.name}", namespace=NAMESPACE, labels=labels),
                spec=spec,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[binding, *args.depends_on]),
            )
        self.register_outputs({})
