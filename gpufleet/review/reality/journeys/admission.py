"""Stage `admission`: the API server admits the workload and its pods in their namespace.

In the order the API server runs them on CREATE:
- the namespace exists;
- LimitRange defaults fill each container's missing requests and limits, then min/max are checked
  (https://kubernetes.io/docs/concepts/policy/limit-range/); the rewritten pod sets go on to Kueue;
- the namespace's Pod Security level admits the pod spec (pod_security.py);
- ResourceQuota: the workload's total at once fits every `hard` (compute requests and limits, extended
  resources, object counts, claims per storage class: https://kubernetes.io/docs/concepts/policy/resource-quotas/);
- every ValidatingAdmissionPolicy binding with Deny (policies.py), on the workload object and on its pods.

On the MultiKueue manager only the object is created; its pods are admitted on the worker the dispatch picks,
which `queueing` judges with `pods` here. Pods Kueue creates after admitting a job are judged by the policies
once Kueue has set their flavor (`queueing` calls `policy_refusal`).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from gpufleet.review.reality.journeys import kueue
from gpufleet.review.reality.journeys import pod_security as pss
from gpufleet.review.reality.journeys.core import Cite, ClusterView, PodSet, Stage, Walk, ref
from gpufleet.review.reality.journeys.estate import MANAGER
from gpufleet.review.reality.journeys.policies import VAP_URL, evaluate
from gpufleet.review.reality.journeys.resources import (
    Amounts,
    add,
    container_amounts,
    namespace_labels,
    pod_amounts,
    quantity,
    show,
)

LIMIT_RANGE_URL = "https://kubernetes.io/docs/concepts/policy/limit-range/"
QUOTA_URL = "https://kubernetes.io/docs/concepts/policy/resource-quotas/"
BUILTIN_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})
PLURALS = {"Pod": "pods", "Job": "jobs", "CronJob": "cronjobs", "Deployment": "deployments",
           "StatefulSet": "statefulsets", "JobSet": "jobsets", "MPIJob": "mpijobs", "PyTorchJob": "pytorchjobs",
           "TrainJob": "trainjobs"}  # fmt: skip
COMPUTE = ("cpu", "memory")


def _stage(ok: bool, detail: str, blocker: str = "", unblock: str = "", *cites: Cite) -> Stage:
    return Stage("admission", ok, detail, blocker, unblock, cites)


def namespace_of(cluster: ClusterView, name: str) -> dict[str, Any] | None:
    ns = cluster.get("Namespace", name)
    if ns is None and name in BUILTIN_NAMESPACES:
        return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    return ns


# -- LimitRange ---------------------------------------------------------------------------------------------------


def _defaulted(container: dict[str, Any], limit_ranges: list[dict[str, Any]]) -> None:
    """Fill a container's requests and limits: a request defaults to its limit (API defaulting), then the
    LimitRange `defaultRequest` / `default` fill what is still unset."""
    res = container.setdefault("resources", {})
    limits, requests = res.setdefault("limits", {}), res.setdefault("requests", {})
    for r, v in limits.items():
        requests.setdefault(r, v)
    for lr in limit_ranges:
        for item in (lr.get("spec") or {}).get("limits") or []:
            if item.get("type", "Container") != "Container":
                continue
            for r, v in (item.get("default") or {}).items():
                limits.setdefault(r, v)
                requests.setdefault(r, (item.get("defaultRequest") or {}).get(r, v))
            for r, v in (item.get("defaultRequest") or {}).items():
                requests.setdefault(r, v)


def _limit_range_refusals(ps: PodSet, limit_ranges: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(LimitRange ref, what) for each min/max a container or the pod breaks, and each request above the
    container's limit once the LimitRange's `default` filled it (the API server refuses such a pod:
    https://kubernetes.io/docs/concepts/policy/limit-range/, "LimitRange and admission checks for Pods")."""
    out = []
    for c in ps.containers():
        requests, limits = container_amounts(c, "requests"), container_amounts(c, "limits")
        for r, v in requests.items():
            if r in limits and v > limits[r]:
                out.append((ref(limit_ranges[0]) if limit_ranges else "Pod",
                            f"container {c.get('name')} requests {show(r, v)} {r}, above its limit "
                            f"{show(r, limits[r])} (set resources.limits.{r})"))  # fmt: skip
    for lr in limit_ranges:
        for item in (lr.get("spec") or {}).get("limits") or []:
            kind = item.get("type", "Container")
            if kind == "Container":
                units = [(f"container {c.get('name')}", container_amounts(c, "requests"),
                          container_amounts(c, "limits")) for c in ps.containers()]  # fmt: skip
            elif kind == "Pod":
                units = [("the pod", pod_amounts(ps.spec, "requests"), pod_amounts(ps.spec, "limits"))]
            else:
                continue
            for who, requests, limits in units:
                for r, v in (item.get("max") or {}).items():
                    if limits.get(r, Decimal(0)) > quantity(v):
                        out.append((ref(lr), f"{who} limits {r} to {show(r, limits[r])}, above max {v}"))
                for r, v in (item.get("min") or {}).items():
                    if requests.get(r, Decimal(0)) < quantity(v):
                        out.append((ref(lr), f"{who} requests {r} below min {v}"))
    return out


# -- ResourceQuota ------------------------------------------------------------------------------------------------


def usage(walk: Walk, pod_sets: list[PodSet]) -> Amounts:
    """What the workload counts against a namespace's quota once all its pods run (quota resource names)."""
    w = walk.workload
    out: Amounts = {"pods": Decimal(sum(p.count for p in pod_sets))}
    for ps in pod_sets:
        add(out, {f"requests.{r}": v for r, v in pod_amounts(ps.spec, "requests").items()}, ps.count)
        add(out, {f"limits.{r}": v for r, v in pod_amounts(ps.spec, "limits").items()}, ps.count)
        claims = [v["ephemeral"]["volumeClaimTemplate"] for v in ps.spec.get("volumes") or [] if "ephemeral" in v]
        if w.kind == "StatefulSet":
            claims += w.manifest["spec"].get("volumeClaimTemplates") or []
        for claim in claims:
            cspec = claim.get("spec") or {}
            size = quantity(((cspec.get("resources") or {}).get("requests") or {}).get("storage", 0))
            sc = cspec.get("storageClassName")
            add(out, {"persistentvolumeclaims": Decimal(1), "requests.storage": size}, ps.count)
            if sc:
                prefix = f"{sc}.storageclass.storage.k8s.io/"
                add(out, {f"{prefix}persistentvolumeclaims": Decimal(1), f"{prefix}requests.storage": size}, ps.count)
    for r in COMPUTE:  # the bare names mean requests
        if f"requests.{r}" in out:
            out[r] = out[f"requests.{r}"]
    group = w.group
    out[f"count/{PLURALS.get(w.kind, w.kind.lower() + 's')}{'.' + group if group else ''}"] = Decimal(1)
    out["count/pods"] = out["pods"]
    replicated = w.manifest["spec"].get("replicatedJobs") or []
    jobs = {"CronJob": 1, "JobSet": sum(rj.get("replicas", 1) for rj in replicated)}.get(w.kind)
    if jobs:  # the Jobs it creates (a JobSet: one per replica of each replicated Job)
        out["count/jobs.batch"] = Decimal(jobs)
    return out


def _quota_refusals(walk: Walk, quotas: list[dict[str, Any]], pod_sets: list[PodSet]) -> list[tuple[str, str]]:
    total = usage(walk, pod_sets)
    out = []
    for q in quotas:
        qspec = q.get("spec") or {}
        if qspec.get("scopes") or qspec.get("scopeSelector"):
            continue  # scoped quotas count only some pods; not judged offline
        for name, hard in (qspec.get("hard") or {}).items():
            used = total.get(name, Decimal(0))
            if used > quantity(hard):
                out.append((ref(q), f"the workload needs {name} {show(name, used)} at once, above hard {hard}"))
        for r in COMPUTE:  # a quota on a compute resource makes every container state it
            for kind in ("requests", "limits"):
                if f"{kind}.{r}" in (qspec.get("hard") or {}) or (
                    kind == "requests" and r in (qspec.get("hard") or {})
                ):
                    for ps in pod_sets:
                        for c in ps.containers():
                            if r not in container_amounts(c, kind):
                                out.append((ref(q), f"container {c.get('name')} must set {kind}.{r}"))
    return out


# -- the stage ----------------------------------------------------------------------------------------------------


# The object whose controller creates a workload's pods and names itself their controlling owner
# (https://kubernetes.io/docs/concepts/overview/working-with-objects/owners-dependents/): a Deployment's pods
# belong to its ReplicaSet, a JobSet's and a CronJob's to the Jobs they create; a bare Pod has no owner.
POD_OWNERS = {"Deployment": ("apps/v1", "ReplicaSet"), "JobSet": ("batch/v1", "Job"), "CronJob": ("batch/v1", "Job")}


def _pod(walk: Walk, ps: PodSet) -> dict[str, Any]:
    w = walk.workload
    meta: dict[str, Any] = {"name": f"{w.name}-{ps.name}", "namespace": w.namespace, "labels": ps.labels}
    if w.kind != "Pod":
        api_version, kind = POD_OWNERS.get(w.kind, (w.api_version, w.kind))
        owner = {"apiVersion": api_version, "kind": kind, "name": w.name, "uid": "", "controller": True}
        meta["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": ps.spec}


def gated_by_kueue(walk: Walk, cluster: ClusterView, ns_labels: dict[str, str]) -> bool | None:
    """How Kueue's pods reach the API server: True gated at creation (pod-based integrations), False created
    after Kueue admits the job, None when Kueue does not manage the workload."""
    cfg = kueue.config(cluster)
    if cfg is None or not kueue.managed(walk.workload, cfg, ns_labels)[0]:
        return None
    return kueue.framework(walk.workload) in kueue.POD_BASED


def object_refusal(walk: Walk, cluster: ClusterView) -> Stage | None:
    """The first ValidatingAdmissionPolicy refusal of the workload object itself (a policy on jobs, say)."""
    w = walk.workload
    if w.kind == "Pod":  # a bare pod is judged as a pod, with what Kueue adds (policy_refusal)
        return None
    ns = namespace_of(cluster, w.namespace)
    obj = {**w.manifest, "metadata": {**(w.manifest.get("metadata") or {}), "namespace": w.namespace}}
    resource = PLURALS.get(w.kind, w.kind.lower() + "s")
    refusals, notes = evaluate(cluster, obj, resource, ns, namespace_labels(ns, w.namespace))
    walk.notes.extend(notes)
    if not refusals:
        return None
    r = refusals[0]
    return _stage(False, f"{w.kind} {w.name}: {r.message}", r.policy, f"change the {w.kind} so that {r.policy} admits it",
                  Cite("ValidatingAdmissionPolicy", VAP_URL))  # fmt: skip


def policy_refusal(walk: Walk, cluster: ClusterView, pod_sets: list[PodSet], gate: bool = False) -> Stage | None:
    """The first ValidatingAdmissionPolicy refusal of the pods (with Kueue's scheduling gate when `gate`)."""
    ns = namespace_of(cluster, walk.workload.namespace)
    labels = namespace_labels(ns, walk.workload.namespace)
    for ps in pod_sets:
        pod = _pod(walk, ps)
        if gate:
            pod = {**pod, "spec": {**ps.spec, "schedulingGates": [{"name": kueue.POD_ADMISSION_GATE}]}}
        refusals, notes = evaluate(cluster, pod, "pods", ns, labels)
        walk.notes.extend(notes)
        if refusals:
            r = refusals[0]
            return _stage(False, f"pod set {ps.name}: {r.message}", r.policy,
                          f"change the pod spec so that {r.policy} admits it", Cite("ValidatingAdmissionPolicy", VAP_URL))  # fmt: skip
    return None


def _missing_service_account(cluster: ClusterView, namespace: str, pod_sets: list[PodSet]) -> Stage | None:
    """A pod naming a ServiceAccount the namespace lacks is refused: the ServiceAccount admission plugin "ensures
    the ServiceAccount referenced by the pod exists" (https://kubernetes.io/docs/reference/access-authn-authz/
    admission-controllers/#serviceaccount). `default` exists in every namespace (the namespace controller)."""
    for ps in pod_sets:
        name = str(ps.spec.get("serviceAccountName") or ps.spec.get("serviceAccount") or "default")
        if name != "default" and cluster.get("ServiceAccount", name, namespace) is None:
            return _stage(False, f"pod set {ps.name}: ServiceAccount {name} does not exist in namespace {namespace}",
                          f"ServiceAccount/{namespace}/{name}", "use the namespace's ServiceAccount `default`, or "
                          "create that one", Cite("ServiceAccount admission", SA_URL))  # fmt: skip
    return None


SA_URL = "https://kubernetes.io/docs/reference/access-authn-authz/admission-controllers/#serviceaccount"
PRIORITY_URL = "https://kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/"
# The PriorityClasses every cluster has ("Kubernetes already ships with two PriorityClasses", PRIORITY_URL).
BUILTIN_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})


def priority_classes(cluster: ClusterView) -> set[str]:
    """The PriorityClasses a pod may name on `cluster`: the ones the estate creates and Kubernetes' own."""
    return {str(o["metadata"]["name"]) for o in cluster.of("PriorityClass")} | BUILTIN_PRIORITY_CLASSES


def unknown_priority_class(cluster: ClusterView, pod_sets: list[PodSet]) -> tuple[PodSet, str] | None:
    """The first pod set naming a `priorityClassName` the cluster lacks, and that name."""
    known = priority_classes(cluster)
    for ps in pod_sets:
        name = str(ps.spec.get("priorityClassName") or "")
        if name and name not in known:
            return ps, name
    return None


def priority_unblock(cluster: ClusterView) -> str:
    return f"name one of the cluster's PriorityClasses ({', '.join(sorted(priority_classes(cluster)))}) or leave "\
        "priorityClassName out"  # fmt: skip


def priority_refusal(cluster: ClusterView, pod_sets: list[PodSet]) -> Stage | None:
    """A pod naming a PriorityClass the cluster lacks is refused: the Priority admission plugin resolves
    `priorityClassName` and rejects the pod when no such class exists (PRIORITY_URL, "Pod priority")."""
    if (found := unknown_priority_class(cluster, pod_sets)) is None:
        return None
    ps, name = found
    return _stage(False, f"pod set {ps.name}: no PriorityClass {name} on cluster {cluster.name}: the Priority "
                  "admission plugin refuses the pods", f"PriorityClass/{name}", priority_unblock(cluster),
                  Cite("Priority admission", PRIORITY_URL))  # fmt: skip


def pods(walk: Walk, cluster: ClusterView, pod_sets: list[PodSet]) -> Stage:
    """Pod admission on `cluster` (LimitRange rewrites `pod_sets` in place), policies included unless Kueue
    creates the pods after its own admission."""
    w = walk.workload
    ns = namespace_of(cluster, w.namespace)
    if ns is None:
        return _stage(False, f"namespace {w.namespace} does not exist on cluster {cluster.name}", f"Namespace/{w.namespace}",
                      "submit it in a tenant's namespace (--tenant, or metadata.namespace)")  # fmt: skip
    labels = namespace_labels(ns, w.namespace)
    if refusal := object_refusal(walk, cluster):
        return refusal
    if missing := _missing_service_account(cluster, w.namespace, pod_sets):
        return missing
    gated = gated_by_kueue(walk, cluster, labels)
    if gated is not False and (unknown := priority_refusal(cluster, pod_sets)):
        return unknown  # pods reach the API server now; a Kueue-managed job's pods only once Kueue admits it
    limit_ranges = cluster.in_namespace("LimitRange", w.namespace)
    for ps in pod_sets:
        for c in ps.containers():
            _defaulted(c, limit_ranges)
    lr_cite = Cite("LimitRange defaults and min/max per container and pod", LIMIT_RANGE_URL)
    for ps in pod_sets:
        if bad := _limit_range_refusals(ps, limit_ranges):
            return _stage(False, f"pod set {ps.name}: {bad[0][1]}", bad[0][0], "request within the LimitRange", lr_cite)
    level = pss.level(ns)
    pss_cite = Cite(f"Pod Security Standards, {level}", pss.PSS_URL)
    for ps in pod_sets:
        if refused := pss.violations(ps.spec, level):
            return _stage(False, f"namespace {w.namespace} enforces Pod Security {level}; pod set {ps.name}: "
                          f"{'; '.join(refused)}", f"Namespace/{w.namespace}",
                          f"change the pod spec to meet the {level} level", pss_cite)  # fmt: skip
    quota_cite = Cite("ResourceQuota: the namespace's total must fit hard", QUOTA_URL)
    if bad := _quota_refusals(walk, cluster.in_namespace("ResourceQuota", w.namespace), pod_sets):
        return _stage(False, bad[0][1], bad[0][0], "ask for less at once, or raise the tenant's quota", quota_cite)
    vap_cite = Cite("ValidatingAdmissionPolicy, Deny bindings", VAP_URL)
    if gated is not False and (refusal := policy_refusal(walk, cluster, pod_sets, gate=bool(gated))):
        return refusal
    later = " (policies on its pods after Kueue sets their flavor)" if gated is False else ""
    return _stage(True, f"admitted in namespace {w.namespace} on {cluster.name} (Pod Security {level}){later}", "",
                  "", lr_cite, pss_cite, quota_cite, vap_cite)  # fmt: skip


def check(walk: Walk) -> Stage:
    cluster, w = walk.cluster, walk.workload
    if cluster.name != MANAGER:
        return pods(walk, cluster, walk.pod_sets)
    ns = namespace_of(cluster, w.namespace)
    if ns is None:
        return _stage(False, f"namespace {w.namespace} does not exist on the MultiKueue manager",
                      f"Namespace/{w.namespace}", "submit it in a tenant's namespace (--tenant)")  # fmt: skip
    if refusal := object_refusal(walk, cluster):
        return refusal
    return _stage(True, f"namespace {w.namespace} exists on the MultiKueue manager; its pods are admitted on the "
                  "worker the dispatch picks (queueing)")  # fmt: skip
