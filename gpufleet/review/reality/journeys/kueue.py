"""Kueue's Configuration on a cluster and whether Kueue manages a workload, as Kueue decides it at the tag of
versions.KUEUE (kubernetes-sigs/kueue).

The Configuration is the one the kueue release mounts (`managerConfig.controllerManagerConfigYaml`). Whether
a workload is managed follows pkg/controller/jobframework/utils.go (WorkloadShouldBeSuspended) and
apis/config/v1beta2/configuration_types.go (managedJobsNamespaceSelector):
- a workload with a queue name is managed; pod-based ones (Pod, Deployment, StatefulSet) only in namespaces the
  selector matches ("never managed ... even if they have a kueue.x-k8s.io/queue-name label");
- without one, it is managed when manageJobsWithoutQueueName is on and the selector matches its namespace.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import yaml

from gpufleet.review.reality.journeys.core import Cite, ClusterView, Workload
from gpufleet.review.reality.journeys.resources import Amounts, matches, quantity
from model.versions import KUEUE

TAG = f"kubernetes-sigs/kueue@v{KUEUE.version}"
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"  # pkg/controller/admissionchecks/multikueue
POD_ADMISSION_GATE = "kueue.x-k8s.io/admission"  # pkg/controller/jobs/pod/constants: the gate Kueue adds to pods
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"  # pkg/constants: names a WorkloadPriorityClass

# Kind (API group, kind) -> Kueue integration name (pkg/controller/jobs/*, `integrations.frameworks`).
# A CronJob creates Jobs, which Kueue manages as batch/job.
FRAMEWORK_OF: dict[tuple[str, str], str] = {
    ("batch", "Job"): "batch/job",
    ("batch", "CronJob"): "batch/job",
    ("", "Pod"): "pod",
    ("apps", "Deployment"): "deployment",
    ("apps", "StatefulSet"): "statefulset",
    ("jobset.x-k8s.io", "JobSet"): "jobset.x-k8s.io/jobset",
    ("kubeflow.org", "MPIJob"): "kubeflow.org/mpijob",
    ("kubeflow.org", "PyTorchJob"): "kubeflow.org/pytorchjob",
    ("trainer.kubeflow.org", "TrainJob"): "trainer.kubeflow.org/trainjob",
}
POD_BASED = frozenset({"pod", "deployment", "statefulset"})

MANAGED_CITE = Cite(
    "which workloads Kueue manages (queue name, manageJobsWithoutQueueName, managedJobsNamespaceSelector)",
    f"{TAG} pkg/controller/jobframework/utils.go",
)


@dataclass(frozen=True)
class Config:
    """The parts of Kueue's Configuration a journey needs."""

    manage_without_queue_name: bool
    namespace_selector: dict[str, Any] | None
    frameworks: tuple[str, ...]
    exclude_prefixes: tuple[str, ...]
    transformations: tuple[dict[str, Any], ...]
    multikueue: bool
    pods_ready_timeout: str | None = None  # waitForPodsReady.timeout: how long a gang's pods may take to run
    device_class_mappings: tuple[dict[str, Any], ...] = ()  # resources.deviceClassMappings (claims.py)

    def excluded(self, resource: str) -> bool:
        """Kueue ignores a resource matching `resources.excludeResourcePrefixes` (configuration_types.go)."""
        return any(resource.startswith(p) for p in self.exclude_prefixes)

    def effective(self, requests: Amounts) -> Amounts:
        """A pod's requests as Kueue's quota sees them: excluded prefixes dropped, then `resources.transformations`
        applied (pkg/workload/workload.go, dropExcludedResources and applyResourceTransformations): each input's
        outputs are its amount (times `multiplyBy`'s) per unit, summed, never below zero; Replace drops the input."""
        kept = {r: v for r, v in requests.items() if not self.excluded(r)}
        rules = {str(t.get("input")): t for t in self.transformations}
        retained: Amounts = {}
        generated: Amounts = {}
        for r, v in kept.items():
            rule = rules.get(r)
            if rule is None:
                retained[r] = v
                continue
            base = v * kept[rule["multiplyBy"]] if rule.get("multiplyBy") in kept else v
            for out, factor in (rule.get("outputs") or {}).items():
                generated[out] = generated.get(out, Decimal(0)) + base * quantity(factor)
            if rule.get("strategy", "Retain") == "Retain":
                retained[r] = v
        for r, v in generated.items():
            retained[r] = retained.get(r, Decimal(0)) + max(v, Decimal(0))
        return retained


# Kueue's defaults where the Configuration leaves a field out (apis/config/v1beta2/defaults.go).
DEFAULT_FRAMEWORKS = ("batch/job",)


def config(cluster: ClusterView) -> Config | None:
    """Kueue's Configuration on `cluster`; None when no kueue release runs there. Read once per cluster: every
    walk asks."""
    if "kueue" not in cluster.derived:
        cluster.derived["kueue"] = _config(cluster)
    kept: Config | None = cluster.derived["kueue"]
    return kept


def _config(cluster: ClusterView) -> Config | None:
    values = cluster.releases.get("kueue")
    if values is None:
        return None
    text = ((values.get("managerConfig") or {}).get("controllerManagerConfigYaml")) or ""
    raw = yaml.safe_load(text) if isinstance(text, str) and text else {}
    raw = raw if isinstance(raw, dict) else {}
    resources = raw.get("resources") or {}
    return Config(
        manage_without_queue_name=bool(raw.get("manageJobsWithoutQueueName", False)),
        namespace_selector=raw.get("managedJobsNamespaceSelector"),
        frameworks=tuple((raw.get("integrations") or {}).get("frameworks") or DEFAULT_FRAMEWORKS),
        exclude_prefixes=tuple(resources.get("excludeResourcePrefixes") or ()),
        transformations=tuple(resources.get("transformations") or ()),
        multikueue="multiKueue" in raw,
        pods_ready_timeout=(raw.get("waitForPodsReady") or {}).get("timeout"),
        device_class_mappings=tuple(resources.get("deviceClassMappings") or ()),
    )


def framework(workload: Workload) -> str | None:
    return FRAMEWORK_OF.get((workload.group, workload.kind))


def managed(workload: Workload, cfg: Config, ns_labels: dict[str, str]) -> tuple[bool, str]:
    """Whether Kueue manages `workload` in a namespace with `ns_labels`, and why, in words."""
    name = framework(workload)
    if name is None or name not in cfg.frameworks:
        enabled = ", ".join(cfg.frameworks)
        return False, f"Kueue does not manage {workload.kind} here (integrations.frameworks: {enabled})"
    in_selector = cfg.namespace_selector is None or matches(cfg.namespace_selector, ns_labels)
    if workload.queue_name:
        if name in POD_BASED and not in_selector:
            return False, (
                f"namespace {workload.namespace} is outside managedJobsNamespaceSelector: Kueue never manages "
                f"pod-based workloads there, queue name or not"
            )
        return True, f"queue name {workload.queue_name}"
    if cfg.manage_without_queue_name and in_selector:
        return True, "no queue name; manageJobsWithoutQueueName and namespace selector match"
    return False, (
        f"no queue name and Kueue does not manage namespace {workload.namespace} "
        "(manageJobsWithoutQueueName off, or managedJobsNamespaceSelector does not match)"
    )


PRIORITY_CITE = Cite(
    "the Workload's priority: its WorkloadPriorityClass label, else the pods' PriorityClass; an unknown class "
    "fails the Workload's creation",
    f"{TAG} pkg/controller/jobframework/reconciler.go (ExtractPriority) and pkg/util/priority/priority.go",
)


def workload_priority_class(workload: Workload) -> str:
    """The WorkloadPriorityClass a workload names: the label on the object Kueue builds the Workload from (the
    job, or the pods of a pod-based workload). A Deployment's or StatefulSet's own label wins: Kueue copies it
    onto the pods (kubernetes-sigs/kueue at versions.KUEUE: pkg/controller/jobs/deployment/deployment_webhook.go
    Default, and pkg/controller/jobs/statefulset/statefulset_pod_reconciler.go)."""
    name = framework(workload)
    if name in POD_BASED and workload.kind != "Pod":
        if PRIORITY_CLASS_LABEL in workload.labels:
            return workload.labels[PRIORITY_CLASS_LABEL]
        return next((p.labels[PRIORITY_CLASS_LABEL] for p in workload.pod_sets if PRIORITY_CLASS_LABEL in p.labels), "")
    return workload.labels.get(PRIORITY_CLASS_LABEL, "")
