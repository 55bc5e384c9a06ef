"""Workloads read from manifest files as users write them: each object becomes a `Workload` with its pod sets.

Pod counts follow Kueue at the tag of versions.KUEUE, because Kueue admits a workload's pod sets at once:
- a Job runs min(parallelism, completions) pods (pkg/controller/jobs/job/job_controller.go, podsCount);
- a JobSet runs replicas x that per replicated Job (pkg/controller/jobs/jobset/jobset_controller.go);
- an MPIJob its launcher and workers; a PyTorchJob its master and workers; a TrainJob `numNodes` nodes.

Bad input raises `ManifestError`, naming the file and the document.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

from gpufleet.review.reality.journeys.core import PodSet, Workload
from gpufleet.review.reality.journeys.resources import quantity

DEFAULT_NAMESPACE = "default"


class ManifestError(Exception):
    """A manifest that cannot be read as a workload; the message names the file and the document."""


def _int(value: Any, default: int, where: str) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{where} must be a non-negative integer, not {value!r}")
    return value


def _pod_spec(spec: dict[str, Any], where: str) -> dict[str, Any]:
    """`spec` when it is a pod spec the stages can read: containers with names and quantities, lists of mappings."""
    if not isinstance(spec.get("containers"), list):
        raise ValueError(f"{where}.containers is missing")
    for key in ("containers", "initContainers", "ephemeralContainers", "volumes", "tolerations"):
        items = spec.get(key) or []
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise ValueError(f"{where}.{key} must be a list of mappings")
    for key in ("nodeSelector", "securityContext", "affinity"):
        if not isinstance(spec.get(key) or {}, dict):
            raise ValueError(f"{where}.{key} must be a mapping")
    for key in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(key) or []):
            resources = c.get("resources") or {}
            for kind in ("requests", "limits"):
                values = resources.get(kind) if isinstance(resources, dict) else None
                if not isinstance(values or {}, dict):
                    raise ValueError(f"{where}.{key}[{i}].resources.{kind} must be a mapping")
                for r, v in (values or {}).items():
                    try:
                        quantity(v)
                    except (ValueError, TypeError):
                        raise ValueError(f"{where}.{key}[{i}].resources.{kind}.{r}: {v!r} is not a quantity") from None
    return spec


def _template(obj: Any, where: str) -> dict[str, Any]:
    """The pod spec of a pod template (`template.spec`)."""
    spec = (obj or {}).get("spec") if isinstance(obj, dict) else None
    if not isinstance(spec, dict) or not isinstance(spec.get("containers"), list):
        raise ValueError(f"{where} has no pod template with containers")
    return _pod_spec(spec, f"{where}.spec")


def _meta(template: Any) -> tuple[dict[str, str], dict[str, str]]:
    meta = (template or {}).get("metadata") or {}
    return dict(meta.get("labels") or {}), dict(meta.get("annotations") or {})


def _pod_set(name: str, count: int, template: Any, where: str) -> PodSet:
    labels, annotations = _meta(template)
    return PodSet(name, count, _template(template, where), labels, annotations)


def _job_pods(job_spec: dict[str, Any], where: str) -> int:
    """Pods a Job runs at once as Kueue counts them: min(parallelism, completions), parallelism defaulting to 1."""
    parallelism = _int(job_spec.get("parallelism"), 1, f"{where}.parallelism")
    completions = job_spec.get("completions")
    return min(parallelism, _int(completions, parallelism, f"{where}.completions"))


def _pod(spec: dict[str, Any]) -> list[PodSet]:
    return [PodSet("main", 1, _pod_spec(spec, "spec"))]


def _job(spec: dict[str, Any]) -> list[PodSet]:
    return [_pod_set("main", _job_pods(spec, "spec"), spec.get("template"), "spec.template")]


def _cron_job(spec: dict[str, Any]) -> list[PodSet]:
    job = ((spec.get("jobTemplate") or {}).get("spec")) or {}
    return [_pod_set("main", _job_pods(job, "spec.jobTemplate.spec"), job.get("template"), "spec.jobTemplate.spec")]


def _replicas(spec: dict[str, Any]) -> list[PodSet]:
    count = _int(spec.get("replicas"), 1, "spec.replicas")
    return [_pod_set("main", count, spec.get("template"), "spec.template")]


def _job_set(spec: dict[str, Any]) -> list[PodSet]:
    jobs = spec.get("replicatedJobs")
    if not isinstance(jobs, list) or not jobs:
        raise ValueError("spec.replicatedJobs is missing")
    out = []
    for i, rj in enumerate(jobs):
        where = f"spec.replicatedJobs[{i}]"
        if not isinstance(rj, dict) or not rj.get("name"):
            raise ValueError(f"{where} has no name")
        job = ((rj.get("template") or {}).get("spec")) or {}
        replicas = _int(rj.get("replicas"), 1, f"{where}.replicas")
        pods = replicas * _job_pods(job, f"{where}.template.spec")
        out.append(_pod_set(str(rj["name"]), pods, job.get("template"), f"{where}.template.spec"))
    return out


def _replica_specs(key: str) -> Callable[[dict[str, Any]], list[PodSet]]:
    """Kubeflow's `<key>: {Launcher|Master|Worker: {replicas, template}}` (MPIJob, PyTorchJob)."""

    def read(spec: dict[str, Any]) -> list[PodSet]:
        specs = spec.get(key)
        if not isinstance(specs, dict) or not specs:
            raise ValueError(f"spec.{key} is missing")
        return [
            _pod_set(
                role.lower(),
                _int((rs or {}).get("replicas"), 1, f"spec.{key}.{role}.replicas"),
                (rs or {}).get("template"),
                f"spec.{key}.{role}.template",
            )
            for role, rs in specs.items()
        ]

    return read


def _train_job(spec: dict[str, Any]) -> list[PodSet]:
    """A TrainJob's pods come from its runtime; what the job itself says is the node count and their resources."""
    trainer = spec.get("trainer") or {}
    container: dict[str, Any] = {"name": "node", "image": trainer.get("image", "")}
    if trainer.get("resourcesPerNode"):
        container["resources"] = trainer["resourcesPerNode"]
    pod = _pod_spec({"containers": [container]}, "spec.trainer")
    return [PodSet("node", _int(trainer.get("numNodes"), 1, "spec.trainer.numNodes"), pod)]


# (apiVersion group, kind) -> how to read its pod sets. The group is matched, not the version, so an older
# version a user still writes is read too; `api` then judges whether that version is served.
READERS: dict[tuple[str, str], Callable[[dict[str, Any]], list[PodSet]]] = {
    ("", "Pod"): _pod,
    ("batch", "Job"): _job,
    ("batch", "CronJob"): _cron_job,
    ("apps", "Deployment"): _replicas,
    ("apps", "StatefulSet"): _replicas,
    ("jobset.x-k8s.io", "JobSet"): _job_set,
    ("kubeflow.org", "MPIJob"): _replica_specs("mpiReplicaSpecs"),
    ("kubeflow.org", "PyTorchJob"): _replica_specs("pytorchReplicaSpecs"),
    ("trainer.kubeflow.org", "TrainJob"): _train_job,
}


def schema_issues(doc: dict[str, Any], pod_sets: list[PodSet], version: str) -> list[str]:
    """What the Kubernetes OpenAPI at `version` refuses: the whole object when it is a built-in kind, and each pod
    template as a Pod (a custom resource's too), as `kubectl apply --validate=strict` would."""
    from gpufleet.review.reality.validate import builtin_issues

    out = [f"{i.path}: {i.message}" for i in builtin_issues(doc, version) or []]
    if out or doc.get("kind") == "Pod":
        return out
    for ps in pod_sets:
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "template"}, "spec": ps.spec}
        out += [f"pod set {ps.name}: {i.path}: {i.message}" for i in builtin_issues(pod, version) or []]
    return out


def workload(doc: Any, source: str, namespace: str | None = None, version: str | None = None) -> Workload:
    """One manifest as a Workload. `namespace`: where an object without its own namespace goes (else default);
    `version`: the Kubernetes minor whose OpenAPI the object must meet (the reality checks' default if None)."""
    if not isinstance(doc, dict):
        raise ManifestError(f"{source}: not a mapping (a Kubernetes object is a YAML mapping)")
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    meta = doc.get("metadata")
    if not isinstance(api_version, str) or not isinstance(kind, str) or not api_version or not kind:
        raise ManifestError(f"{source}: apiVersion and kind are required")
    if not isinstance(meta, dict):
        raise ManifestError(f"{source}: metadata.name is required")
    # generateName: the API server appends a random suffix; the journey names the object by its prefix.
    name = meta.get("name") or meta.get("generateName")
    if not isinstance(name, str) or not name:
        raise ManifestError(f"{source}: metadata.name (or generateName) is required")
    group = api_version.rpartition("/")[0]
    reader = READERS.get((group, kind))
    if reader is None:
        known = ", ".join(sorted({k for _, k in READERS}))
        raise ManifestError(f"{source}: {kind} ({api_version}) is not a workload gpufleet reads; it reads {known}")
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        raise ManifestError(f"{source}: {kind} {name}: spec is missing")
    try:
        pod_sets = reader(spec)
    except (ValueError, AttributeError, TypeError) as e:
        raise ManifestError(f"{source}: {kind} {name}: {e}") from None
    if version is None:
        from gpufleet.review.reality.first_up import DEFAULT_VERSION

        version = DEFAULT_VERSION
    if issues := schema_issues(doc, pod_sets, version):
        raise ManifestError(f"{source}: {kind} {name}: " + "; ".join(issues[:5]))
    for field in ("labels", "annotations"):
        if not isinstance(meta.get(field) or {}, dict):
            raise ManifestError(f"{source}: {kind} {name}: metadata.{field} must be a mapping")
    return Workload(
        api_version=api_version,
        kind=kind,
        name=name,
        namespace=str(meta.get("namespace") or namespace or DEFAULT_NAMESPACE),
        labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
        annotations={str(k): str(v) for k, v in (meta.get("annotations") or {}).items()},
        pod_sets=tuple(pod_sets),
        manifest=doc,
        source=source,
    )


def read(paths: Iterable[Path], namespace: str | None = None, version: str | None = None) -> list[Workload]:
    """Every workload in `paths` (multi-document YAML, a `kind: List`'s items; empty documents skipped), in file and
    document order."""
    out = []
    for path in paths:
        if not path.is_file():
            raise ManifestError(f"{path}: not a regular file")
        try:
            docs = list(yaml.safe_load_all(path.read_text()))
        except (OSError, UnicodeDecodeError) as e:
            raise ManifestError(f"{path}: cannot be read: {e}") from None
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            at = f" (line {mark.line + 1})" if mark is not None else ""
            raise ManifestError(f"{path}: not YAML{at}: {getattr(e, 'problem', None) or e}") from None
        for i, doc in enumerate(docs, start=1):
            if doc is None:
                continue
            for source, item in _items(doc, f"{path}, document {i}"):
                out.append(workload(item, source, namespace, version))
    return out


def _items(doc: Any, source: str) -> list[tuple[str, Any]]:
    """The objects of one document: itself, or the `items` of a `kind: List` (what `kubectl get -o yaml` writes)
    or of a typed list (`JobList`, `PodList`, any `*List`): kubectl applies each item
    (https://kubernetes.io/docs/reference/using-api/api-concepts/#collections; k8s.io/apimachinery
    pkg/apis/meta/v1/unstructured/helpers.go decodes a document with `items` as a list)."""
    kind = doc.get("kind") if isinstance(doc, dict) else None
    if not (isinstance(kind, str) and kind.endswith("List")):
        return [(source, doc)]
    items = doc.get("items")
    if not isinstance(items, list):
        raise ManifestError(f"{source}: a {kind} needs `items`, a list of Kubernetes objects")
    # an item naming neither takes the list's apiVersion and kind less `List` (decodeToList, same file)
    item_type = {"apiVersion": doc.get("apiVersion"), "kind": kind.removesuffix("List")}
    return [
        (f"{source}, item {j}", {**item_type, **item} if _untyped(item) and kind != "List" else item)
        for j, item in enumerate(items, start=1)
    ]


def _untyped(item: Any) -> bool:
    return isinstance(item, dict) and "kind" not in item and "apiVersion" not in item
