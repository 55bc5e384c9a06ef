"""Kueue job integrations ("frameworks") gpufleet can enable, and what a cluster needs to serve each one.

Pure data. Names are Kueue's integration names (`integrations.frameworks` of the config.kueue.x-k8s.io/v1beta2
Configuration; kubernetes-sigs/kueue pkg/controller/jobs/ at the tag of versions.KUEUE).

Why this matters in a hybrid estate: the MultiKueue manager opens a watch on every worker for the kind of every
framework it enables, and one watch that cannot be opened (the worker lacks the CRD) fails the whole connection
("however let's not accept this for now", `pkg/controller/admissionchecks/multikueue/multikueuecluster.go`,
`updateConfigAndRefreshWatchers`, at the pinned tag, versions.KUEUE): the cluster goes inactive and nothing is dispatched to it. So a
framework is offered only where gpufleet can make every cluster serve it: built into Kubernetes, or installed
by gpufleet from a chart pinned in `model/versions.py` (CRD and controller). Kubeflow, KubeRay
and LeaderWorkerSet integrations are not offered: gpufleet installs none of their operators.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

FrameworkName = Literal["batch/job", "pod", "deployment", "statefulset", "jobset.x-k8s.io/jobset"]

DEFAULT_FRAMEWORKS: tuple[FrameworkName, ...] = ("batch/job", "pod", "deployment", "statefulset")
"""What a site's Kueue enables unless the stack says otherwise: the frameworks Kubernetes itself serves."""


@dataclass(frozen=True)
class JobFramework:
    """One Kueue integration and what serving it takes."""

    name: FrameworkName
    group: str  # API group of the object MultiKueue creates on a worker ("" = core)
    resource: str  # its plural resource (RBAC, watches)
    status: bool  # MultiKueue reads `<resource>/status` on the worker
    crd: str | None  # the CRD a cluster needs (None: built into Kubernetes)
    operator: str | None  # what installs CRD and controller (a chart pinned in versions.py), None: built in
    implies: tuple[FrameworkName, ...] = ()  # frameworks Kueue runs it through (ImplicitlyEnabledFrameworkNames)


FRAMEWORKS: dict[FrameworkName, JobFramework] = {
    f.name: f
    for f in (
        JobFramework("batch/job", "batch", "jobs", status=True, crd=None, operator=None),
        JobFramework("pod", "", "pods", status=False, crd=None, operator=None),
        # Deployments and StatefulSets are admitted as pod groups: Kueue turns on `pod` for them
        # (pkg/controller/jobs/deployment/deployment_controller.go, statefulset/statefulset_controller.go).
        JobFramework("deployment", "apps", "deployments", status=False, crd=None, operator=None, implies=("pod",)),
        JobFramework("statefulset", "apps", "statefulsets", status=True, crd=None, operator=None, implies=("pod",)),
        JobFramework(
            "jobset.x-k8s.io/jobset",
            "jobset.x-k8s.io",
            "jobsets",
            status=True,
            crd="jobsets.jobset.x-k8s.io",
            operator="jobset",
        ),
    )
}

# Frameworks whose objects MultiKueue itself creates on a worker (a MultiKueueAdapter in Kueue); a Deployment
# is dispatched as its pods, so it needs no rule of its own on the worker.
DISPATCHED: frozenset[FrameworkName] = frozenset({"batch/job", "pod", "statefulset", "jobset.x-k8s.io/jobset"})


def enabled(declared: list[FrameworkName] | tuple[FrameworkName, ...]) -> list[FrameworkName]:
    """The frameworks a Kueue configuration lists: the declared ones and what they run through, in the order of
    FRAMEWORKS. `pod` is listed explicitly (not left implicit) so that its MultiKueue adapter is registered too:
    Kueue builds the adapters from the configured list only (cmd/kueue/main.go, GetMultiKueueAdapters)."""
    wanted = set(declared)
    for name in declared:
        wanted.update(FRAMEWORKS[name].implies)
    return [n for n in FRAMEWORKS if n in wanted]


def operators(names: list[FrameworkName]) -> list[str]:
    """The operators (chart keys) a cluster enabling `names` needs installed, in a stable order."""
    return sorted({op for n in names if (op := FRAMEWORKS[n].operator) is not None})
