"""Stage `api`: the workload's kind is served on the cluster it is submitted to.

- Built-in kinds: served when kubernetes-validate bundles a schema for that apiVersion and kind at the cluster's
  Kubernetes version (its schemas are generated from the upstream OpenAPI,
  https://kubernetes.io/docs/reference/kubernetes-api/).
- Custom resources: a CustomResourceDefinition of the cluster's objects (plan and rendered charts) defines the
  group and kind and serves that version (`spec.versions[].served`).
- On a hybrid estate the manager's Kueue must enable the kind's framework and every worker must serve the kind:
  MultiKueue creates the object there (model/frameworks.py).
"""

from __future__ import annotations

from typing import Any

from gpufleet.review.reality.journeys import kueue
from gpufleet.review.reality.journeys.core import Cite, ClusterView, Stage, Walk
from gpufleet.review.reality.journeys.estate import MANAGER
from model import kinds
from model.frameworks import FRAMEWORKS

BUILTIN_CITE = Cite(
    "built-in kinds served at the pinned Kubernetes version", "https://kubernetes.io/docs/reference/kubernetes-api/"
)
CRD_CITE = Cite(
    "a custom resource is served by a CRD version with served: true",
    "https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/",
)
# What installs the CRDs of the job frameworks gpufleet does not offer, in a user's words.
OPERATORS = {
    "MPIJob": "MPI Operator (kubeflow/mpi-operator)",
    "PyTorchJob": "Kubeflow Training Operator (kubeflow/training-operator)",
    "TrainJob": "Kubeflow Trainer (kubeflow/trainer)",
}
BUILTIN_GROUPS = frozenset({"", "apps", "batch"})


def version_of(cluster: ClusterView, spec: Any) -> str:
    """The Kubernetes minor of `cluster`: its site's, else the default the reality checks assume."""
    from gpufleet.review.reality.first_up import DEFAULT_VERSION

    site = next((s for s in spec.sites if s.name == cluster.site), None) if cluster.site else None
    version = kinds.of(site).kubernetes_version if site is not None else None
    return version or DEFAULT_VERSION


def serves(cluster: ClusterView, api_version: str, kind: str, version: str) -> bool:
    """Whether `cluster` serves `kind` at `api_version` (built in at `version`, or a CRD it has)."""
    from gpufleet.review.reality.validate import is_builtin

    group, _, ver = api_version.rpartition("/")
    if group in BUILTIN_GROUPS:
        return is_builtin(api_version, kind, version)
    for crd in cluster.of("CustomResourceDefinition"):
        s = crd.get("spec") or {}
        if s.get("group") == group and (s.get("names") or {}).get("kind") == kind:
            return any(v.get("name") == ver and v.get("served", False) for v in s.get("versions") or [])
    return False


def _unblock(walk: Walk) -> str:
    """What would let the kind be served: the framework to enable if gpufleet offers it, else what it offers."""
    name = kueue.framework(walk.workload)
    if name in FRAMEWORKS and FRAMEWORKS[name].operator:
        return f"enable it on the site: `kubernetes.job_frameworks: [..., {name}]` (gpufleet installs its operator)"
    offered = ", ".join(FRAMEWORKS)
    installer = OPERATORS.get(walk.workload.kind, f"the operator of {walk.workload.api_version} {walk.workload.kind}")
    return f"gpufleet installs no {installer}; offered frameworks: {offered}"


def workers(cluster: ClusterView, clusters: dict[str, ClusterView]) -> list[ClusterView]:
    """The workers a MultiKueue manager dispatches to (its MultiKueueClusters that are clusters of the estate)."""
    names = [str((o.get("metadata") or {}).get("name")) for o in cluster.of("MultiKueueCluster")]
    return [clusters[n] for n in names if n in clusters]


def check(walk: Walk) -> Stage:
    w, cluster = walk.workload, walk.cluster
    version = version_of(cluster, walk.spec)
    targets = [cluster]
    if cluster.name == MANAGER:
        targets += workers(cluster, walk.clusters)
    for target in targets:
        v = version_of(target, walk.spec)
        if not serves(target, w.api_version, w.kind, v):
            where = "the MultiKueue manager" if target.name == MANAGER else f"cluster {target.name}"
            builtin = w.group in BUILTIN_GROUPS
            how = f"at Kubernetes {v}" if builtin else "(no CustomResourceDefinition serves it)"
            return Stage(
                "api",
                False,
                f"{w.api_version} {w.kind} is not served on {where} {how}",
                blocker=f"CustomResourceDefinition/{w.kind.lower()}s.{w.group}" if not builtin else w.api_version,
                unblock=(f"use an apiVersion Kubernetes {v} serves" if builtin else _unblock(walk)),
                cites=(BUILTIN_CITE if builtin else CRD_CITE,),
            )
    if cluster.name == MANAGER:
        cfg = kueue.config(cluster)
        name = kueue.framework(w)
        if cfg is not None and name not in cfg.frameworks:
            return Stage(
                "api",
                False,
                f"the MultiKueue manager's Kueue does not enable {name or w.kind} (integrations.frameworks: "
                f"{', '.join(cfg.frameworks)}), so it never dispatches a {w.kind}",
                blocker="Configuration/kueue-system/kueue",
                unblock=_unblock(walk),
                cites=(Cite("frameworks MultiKueue dispatches", f"{kueue.TAG} cmd/kueue/main.go"),),
            )
    served = "built in" if w.group in BUILTIN_GROUPS else "from its CustomResourceDefinition"
    where = ", ".join(t.name for t in targets)
    return Stage(
        "api",
        True,
        f"{w.api_version} {w.kind} is served ({served}, Kubernetes {version}) on {where}",
        cites=(BUILTIN_CITE if w.group in BUILTIN_GROUPS else CRD_CITE,),
    )
