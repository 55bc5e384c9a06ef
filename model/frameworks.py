"""Kueue job integrations ("frameworks") gpufleet can enable, and what a cluster needs to serve each one.

Pure data. Names are Kueue's integration names (`integrations.frameworks` of the config.kueue.x-k8s.io/v1beta2
Configuration; kubernetes-sigs/kueue pkg/controller/jobs/ at the tag of versions.KUEUE).

Why this matters in a hybrid estate: the MultiKueue manager opens a watch on every worker for the kind of every
framework it enables, and one watch that cannot be opened (the worker lacks the CRD) fails the whole connection
("however let's not accept this for now", `pkg/controller/admissionchecks/multikueue/multikueuecluster.go`,
`updateConfigAndRefreshWatchers`, at the pinned tag, versions.KUEUE): the cluster goes inactive and nothing is dispatched to it. So a
framework is offered only where gpufleet can make every cluster serve it: built into Kubernetes, or installed
by gpufleet from a chart pinned in `model/versions.py` (CRD and controller). The MPI Operator, Kubeflow,
KubeRay and LeaderWorkerSet integrations are not offered (NOT_OFFERED): gpufleet installs none of their operators.
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


# Kueue integrations gpufleet does not offer, by Kueue's name (`integrations.frameworks` in charts/kueue
# values.yaml at versions.KUEUE) -> the operator that serves the kind. No chart for any of them is pinned in
# versions.py and rendered offline, so gpufleet cannot make a cluster serve it.
NOT_OFFERED: dict[str, str] = {
    "kubeflow.org/mpijob": "the MPI Operator (MPIJob)",
    "kubeflow.org/pytorchjob": "the Kubeflow Training Operator (PyTorchJob)",
    "kubeflow.org/tfjob": "the Kubeflow Training Operator (TFJob)",
    "kubeflow.org/xgboostjob": "the Kubeflow Training Operator (XGBoostJob)",
    "kubeflow.org/paddlejob": "the Kubeflow Training Operator (PaddleJob)",
    "kubeflow.org/jaxjob": "the Kubeflow Training Operator (JAXJob)",
    "trainer.kubeflow.org/trainjob": "Kubeflow Trainer (TrainJob)",
    "ray.io/rayjob": "KubeRay (RayJob)",
    "ray.io/rayservice": "KubeRay (RayService)",
    "ray.io/raycluster": "KubeRay (RayCluster)",
    "leaderworkerset.x-k8s.io/leaderworkerset": "LeaderWorkerSet",
    "workload.codeflare.dev/appwrapper": "AppWrapper",
    "sparkoperator.k8s.io/sparkapplication": "the Spark Operator (SparkApplication)",
}
JOBSET_INSTEAD = "run MPI and PyTorch jobs (nccl-tests, torchrun) as a JobSet: docs/stack-file.md, Job frameworks"


def offered(name: object) -> object:
    """`name` unchanged if gpufleet offers it; else the error a stack file gets, naming what is offered and why
    the rest is not (a before-validator of `job_frameworks` entries)."""
    if not isinstance(name, str) or name in FRAMEWORKS:
        return name  # a non-string gets the schema's own type error
    choices = ", ".join(FRAMEWORKS)
    if name in NOT_OFFERED:
        raise ValueError(
            f"{name} needs {NOT_OFFERED[name]}, which gpufleet does not install (it installs only operators whose "
            f"chart it pins and renders offline); offered: {choices}; {JOBSET_INSTEAD}"
        )
    raise ValueError(f"unknown job framework {name!r}; offered (Kueue integration names): {choices}")


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
