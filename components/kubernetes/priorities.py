"""Priorities: one Kubernetes PriorityClass and one Kueue WorkloadPriorityClass per workload kind.

- The two carry the same names and values, so a job ranks the same whether the kube-scheduler or Kueue
  (label `kueue.x-k8s.io/priority-class`) compares it.
- Order, highest first: inference, training, interactive, batch.
- No class is `globalDefault`. A cluster has at most one, and pods without a class keep priority 0, below batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.kubernetes.kueue import kube_object
from model.queues import KUEUE_API
from model.tags import Tags


@dataclass(frozen=True)
class PriorityLevel:
    name: str
    value: int
    preemption_policy: str  # PreemptLowerPriority | Never
    description: str


# `preemptionPolicy` (scheduling.k8s.io/v1) says whether pods of this class may preempt lower-priority pods; it
# never protects a class from being preempted. A lower-priority pod can never preempt a higher-priority one, so
# batch cannot preempt inference whatever inference's policy is. Inference keeps PreemptLowerPriority: a serving
# replica that cannot be placed may evict lower classes. Batch gets Never: it is the preemptible filler and must
# not evict anything, not even pods without a PriorityClass (priority 0).
PRIORITY_LEVELS: tuple[PriorityLevel, ...] = (
    PriorityLevel("inference", 100_000, "PreemptLowerPriority", "Online inference: highest; may evict lower classes."),
    PriorityLevel("training", 10_000, "PreemptLowerPriority", "Training jobs and gangs; preempt only lower classes."),
    PriorityLevel("interactive", 5_000, "PreemptLowerPriority", "Notebooks and development sessions."),
    PriorityLevel("batch", 1_000, "Never", "Preemptible batch work; never preempts anything itself."),
)
"""Highest first. User-defined priorities must stay at or below 1,000,000,000 (system classes sit above)."""


@dataclass(frozen=True)
class PrioritiesArgs:
    tags: Tags
    kueue: pulumi.Resource | None  # the Kueue release whose CRDs WorkloadPriorityClasses need


class Priorities(pulumi.ComponentResource):
    """Creates a PriorityClass and a matching Kueue WorkloadPriorityClass for each of PRIORITY_LEVELS."""

    def __init__(self, name: str, args: PrioritiesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:kubernetes:Priorities", name, None, opts)
        self._name = name
        self._labels = args.tags.labels()
        self.priority_classes = {lv.name: self._priority_class(lv) for lv in PRIORITY_LEVELS}
        self.workload_priority_classes = {
            lv.name: self._workload_priority_class(lv, args.kueue) for lv in PRIORITY_LEVELS
        }
        self.register_outputs({})

    def _priority_class(self, level: PriorityLevel) -> k8s.scheduling.v1.PriorityClass:
        return k8s.scheduling.v1.PriorityClass(
            f"{self._name}-{level.name}",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=level.name, labels=self._labels),
            value=level.value,
            preemption_policy=level.preemption_policy,
            global_default=False,
            description=level.description,
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _workload_priority_class(self, level: PriorityLevel, kueue: pulumi.Resource | None) -> pulumi.CustomResource:
        # WorkloadPriorityClass (kueue.x-k8s.io/v1beta2) has top-level `value` (int32) and `description`.
        return kube_object(
            f"{self._name}-{level.name}-workload",
            KUEUE_API,
            "WorkloadPriorityClass",
            {"name": level.name, "labels": self._labels},
            {"value": level.value, "description": level.description},
            pulumi.ResourceOptions(parent=self, depends_on=[kueue] if kueue else []),
        )
