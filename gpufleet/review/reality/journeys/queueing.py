"""Stage `queueing`: Kueue admits the workload, as Kueue judges it at the tag of versions.KUEUE.

- Managed or not, and the queue: kueue.py. Without a queue name a managed workload goes to the LocalQueue
  `default` of its namespace (pkg/controller/jobframework/defaults.go).
- LocalQueue -> ClusterQueue: it exists, is not stopped, and its namespaceSelector matches (null matches nothing).
- Every requested resource is covered, after Kueue drops excluded prefixes and applies transformations; DRA
  claims count through the device class mappings (claims.py).
- Flavors in order: nodeTaints against the pod's tolerations, nodeLabels against its nodeSelector and required
  node affinity, then the whole workload against nominal quota plus what the cohort may lend (the estate idle).
- A topology request needs a flavor whose Topology has the level.
- Admitted: the flavor's nodeLabels and tolerations go into `walk.pod_sets`.
- MultiKueue: the MultiKueueConfig's clusters in order; the first worker that admits it runs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from gpufleet.review.reality.journeys import admission, claims, kueue
from gpufleet.review.reality.journeys.core import QUEUE_LABEL, Cite, ClusterView, PodSet, Stage, Walk, Workload
from gpufleet.review.reality.journeys.resources import Amounts, matches, namespace_labels, pod_requests, quantity, show
from gpufleet.review.reality.scheduling import Node, fits
from model import nodes, provisioning

TAG = kueue.TAG
ASSIGNER = Cite(
    "flavors in order: covered resources, node labels, taints, quota",
    f"{TAG} pkg/scheduler/flavorassigner/flavorassigner.go",
)
EXCLUDE = Cite("resources.excludeResourcePrefixes", f"{TAG} apis/config/v1beta2/configuration_types.go")
QUEUES = Cite(
    "LocalQueue -> ClusterQueue, namespaceSelector, stopPolicy", f"{TAG} apis/kueue/v1beta2/clusterqueue_types.go"
)
INJECT = Cite("flavor nodeLabels and tolerations injected into the pods", f"{TAG} pkg/podset/podset.go")
PROVISIONING = Cite(
    "ProvisioningRequest check: quota reserved, then a ProvisioningRequest, admitted once Provisioned",
    f"{TAG} site/content/en/docs/concepts/admission_check/provisioning_request.md",
)
DISPATCH = Cite(
    "MultiKueue: clusters of the MultiKueueConfig in order", f"{TAG} site/content/en/docs/concepts/multikueue.md"
)
# Kueue's topology request annotations (apis/kueue/v1beta1/topology_types.go): required, preferred, unconstrained.
TOPOLOGY_ANNOTATIONS = (
    "kueue.x-k8s.io/podset-required-topology",
    "kueue.x-k8s.io/podset-preferred-topology",
    "kueue.x-k8s.io/podset-unconstrained-topology",
)
UNLIMITED = Decimal("Infinity")


@dataclass
class Admitted:
    """Kueue's admission on one cluster: the ClusterQueue and each pod set's flavor."""

    cluster_queue: dict[str, Any]
    flavors: dict[str, dict[str, Any]]  # pod set -> ResourceFlavor
    detail: str
    checks: list[dict[str, Any]] = field(default_factory=list)


def _unblock(reasons: list[str]) -> str:
    """What would let a pod set onto a flavor, from why each flavor refused it."""
    if any("supports only TopologyAwareScheduling" in r for r in reasons):
        return (f"ask for topology-aware placement: annotate the pod template with {TOPOLOGY_ANNOTATIONS[1]}: "
                "<a level of the flavor's Topology> (Kueue requires it on a topology flavor of a ClusterQueue that "
                "has other flavors)")  # fmt: skip
    unsupported = [r for r in reasons if "does not support TopologyAwareScheduling" in r]
    if unsupported and all(r in unsupported or "doesn't match node affinity" in r for r in reasons):
        return ("drop the topology annotation, or pick a pool whose flavor has a Topology (on EKS: an EFA pool of a "
                "type EKS labels with network layers, docs/journeys.md)")  # fmt: skip
    return "ask for less at once, or give the tenant more quota on a flavor it may use"


def _blocked(detail: str, blocker: str, unblock: str, *cites: Cite) -> Stage:
    return Stage("queueing", False, detail, blocker, unblock, cites)


def _limit(quota: dict[str, Any], key: str) -> Decimal | None:
    return quantity(quota[key]) if key in quota else None


def _quota(cq: dict[str, Any], flavor: str, resource: str) -> tuple[Decimal, Decimal | None, Decimal | None] | None:
    """(nominal, borrowingLimit, lendingLimit) of `resource` in `flavor` of a ClusterQueue or Cohort."""
    for group in (cq.get("spec") or {}).get("resourceGroups") or []:
        for f in group.get("flavors") or []:
            if f.get("name") != flavor:
                continue
            for r in f.get("resources") or []:
                if r.get("name") == resource:
                    return quantity(r.get("nominalQuota", 0)), _limit(r, "borrowingLimit"), _limit(r, "lendingLimit")
    return None


def _borrowable(cluster: ClusterView, cq: dict[str, Any], flavor: str, resource: str) -> Decimal:
    """What the cohort could lend `cq` of `resource` in `flavor`, the estate idle."""
    cohort = (cq.get("spec") or {}).get("cohortName")
    if not cohort:
        return Decimal(0)
    total = Decimal(0)
    for other, lends in _lenders(cluster, cohort, flavor, resource):
        if other is not cq:
            total += lends
    return total


Lenders = list[tuple[dict[str, Any], Decimal]]


def _lenders(cluster: ClusterView, cohort: Any, flavor: str, resource: str) -> Lenders:
    """The ClusterQueues of `cohort`, then the Cohort, that hold `resource` in `flavor`, each with what it lends
    the estate idle; kept in the view's derived values (for a cohort named by a string), as every walk asks again."""
    kept: dict[tuple[str, str, str], Lenders] = cluster.derived.setdefault("lenders", {})
    if isinstance(cohort, str) and (cohort, flavor, resource) in kept:
        return kept[(cohort, flavor, resource)]
    out = []
    for other in [*cluster.of("ClusterQueue"), *[c for c in cluster.of("Cohort") if c["metadata"]["name"] == cohort]]:
        if other.get("kind") == "ClusterQueue" and (other.get("spec") or {}).get("cohortName") != cohort:
            continue
        q = _quota(other, flavor, resource)
        if q is not None:
            out.append((other, q[0] if q[2] is None else min(q[2], q[0])))
    if isinstance(cohort, str):
        kept[(cohort, flavor, resource)] = out
    return out


def _tolerates(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    """Whether a toleration matches a taint (https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/)."""
    for t in tolerations:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        if t.get("operator") == "Exists" and (not t.get("key") or t.get("key") == taint.get("key")):
            return True
        if t.get("key") == taint.get("key") and t.get("value", "") == taint.get("value", ""):
            return True
    return False


def _tas_only(cq: dict[str, Any], cluster: ClusterView) -> bool:
    """Every flavor of the ClusterQueue has a Topology: Kueue then implies a topology request for every pod set."""
    names = [f.get("name") for g in (cq.get("spec") or {}).get("resourceGroups") or [] for f in g.get("flavors") or []]
    flavors = [cluster.get("ResourceFlavor", str(n)) for n in names]
    return bool(flavors) and all(f is not None and (f.get("spec") or {}).get("topologyName") for f in flavors)


def _tas_mismatch(ps: PodSet, rf: dict[str, Any], cluster: ClusterView, tas_only: bool) -> str:
    """Kueue's TAS match of a pod set and a flavor (pkg/scheduler/flavorassigner/tas_flavorassigner.go,
    checkPodSetAndFlavorMatchForTAS); empty when they match."""
    name = rf["metadata"]["name"]
    topology_name = (rf.get("spec") or {}).get("topologyName")
    explicit = any(a in ps.annotations for a in TOPOLOGY_ANNOTATIONS)
    if not explicit and not tas_only:
        return f'Flavor "{name}" supports only TopologyAwareScheduling' if topology_name else ""
    if not explicit:
        return ""  # a TAS-only ClusterQueue: every flavor matches
    if not topology_name:
        return f'Flavor "{name}" does not support TopologyAwareScheduling'
    topology = cluster.get("Topology", str(topology_name))
    if topology is None:
        return f'Flavor "{name}" information missing in TAS cache (no Topology {topology_name})'
    level = next((ps.annotations[a] for a in TOPOLOGY_ANNOTATIONS[:2] if a in ps.annotations), None)
    levels = [lv.get("nodeLabel") for lv in (topology.get("spec") or {}).get("levels") or []]
    if level is not None and level not in levels:
        return f'Flavor "{name}" does not contain the requested level {level}'
    return ""


def _flavor_mismatch(ps: PodSet, rf: dict[str, Any], cluster: ClusterView, tas_only: bool) -> str:
    """Why a flavor cannot take the pod set apart from quota; empty when it can (flavorassigner.go,
    checkFlavorForPodSets: TAS, then taints against the pod's and the flavor's tolerations, then node selector and
    required node affinity against the flavor's nodeLabels)."""
    name = rf["metadata"]["name"]
    spec = rf.get("spec") or {}
    if why := _tas_mismatch(ps, rf, cluster, tas_only):
        return why
    tolerations = [*(ps.spec.get("tolerations") or []), *(spec.get("tolerations") or [])]
    for taint in spec.get("nodeTaints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerates(tolerations, taint):
            return f"untolerated taint {taint.get('key')}={taint.get('value', '')} in flavor {name}"
    labels = {str(k): str(v) for k, v in (spec.get("nodeLabels") or {}).items()}
    if not fits(_flavor_selector(ps.spec, set(labels)), Node("flavor", name, labels)):
        return f"flavor {name} doesn't match node affinity"
    return ""


def _flavor_selector(pod: dict[str, Any], keys: set[str]) -> dict[str, Any]:
    """The pod's nodeSelector and required node affinity cut down to the flavor's label keys, as Kueue matches
    them against the flavor's nodeLabels (flavorassigner.go, flavorSelector): a term left with no expression
    matches any flavor (terms are ORed), so it drops the whole affinity. Taints are judged apart."""
    selector = {k: v for k, v in (pod.get("nodeSelector") or {}).items() if k in keys}
    required = ((pod.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms: list[dict[str, Any]] = []
    for term in required.get("nodeSelectorTerms") or []:
        kept = [e for e in term.get("matchExpressions") or [] if e.get("key") in keys]
        if not kept:
            terms = []
            break
        terms.append({"matchExpressions": kept})
    out: dict[str, Any] = {"nodeSelector": selector, "tolerations": [{"operator": "Exists"}]}
    if terms:
        out["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
        }
    return out


def _requests(ps: PodSet, cfg: kueue.Config) -> Amounts:
    return cfg.effective(pod_requests(ps.spec))


def _assign(
    cluster: ClusterView, cq: dict[str, Any], pod_sets: list[PodSet], cfg: kueue.Config, namespace: str
) -> Admitted | Stage:
    cq_name = cq["metadata"]["name"]
    groups = (cq.get("spec") or {}).get("resourceGroups") or []
    covered = {r for g in groups for r in g.get("coveredResources") or []}
    needs: dict[str, Amounts] = {}
    for ps in pod_sets:
        claimed = claims.requests(cluster, namespace, ps, cfg)
        if isinstance(claimed, tuple):
            return _blocked(*claimed, claims.CLAIMS)
        need = _requests(ps, cfg)
        needs[ps.name] = {**need, **{r: need.get(r, Decimal(0)) + v for r, v in claimed.items()}}
        for r in needs[ps.name]:
            if r not in covered:
                return _blocked(
                    f"resource {r} unavailable in ClusterQueue {cq_name} (pod set {ps.name}): Kueue's quota check "
                    "blocks a resource no resource group covers", f"ClusterQueue/{cq_name}",
                    f"cover {r} in ClusterQueue {cq_name}, or leave it to the scheduler with Kueue's "
                    f"resources.excludeResourcePrefixes (now: {', '.join(cfg.exclude_prefixes) or 'none'})",
                    ASSIGNER, EXCLUDE)  # fmt: skip
    tas_only = _tas_only(cq, cluster)
    used: dict[tuple[str, str], Decimal] = {}
    chosen: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    for ps in pod_sets:
        need = needs[ps.name]
        for g in groups:
            wanted = [r for r in g.get("coveredResources") or [] if r in need]
            if not wanted:
                continue
            reasons = []
            for f in g.get("flavors") or []:
                rf = cluster.get("ResourceFlavor", str(f.get("name")))
                if rf is None:
                    reasons.append(f"flavor {f.get('name')} not found")
                    continue
                if why := _flavor_mismatch(ps, rf, cluster, tas_only):
                    reasons.append(why)
                    continue
                short, borrows = [], []
                for r in wanted:
                    nominal, borrowing_limit, _ = _quota(cq, rf["metadata"]["name"], r) or (Decimal(0), None, None)
                    lend = _borrowable(cluster, cq, rf["metadata"]["name"], r)
                    cap = nominal + min(lend, UNLIMITED if borrowing_limit is None else borrowing_limit)
                    total = used.get((rf["metadata"]["name"], r), Decimal(0)) + need[r] * ps.count
                    if total > cap:
                        short.append(f"insufficient quota for {r} in flavor {rf['metadata']['name']}: the workload "
                                     f"needs {show(r, total)}, nominal {show(r, nominal)} + borrowable {show(r, cap - nominal)}")  # fmt: skip
                    elif total > nominal:
                        borrows.append(f"borrows {show(r, total - nominal)} {r} from the cohort")
                if short:
                    reasons.extend(short)
                    continue
                for r in wanted:
                    key = (rf["metadata"]["name"], r)
                    used[key] = used.get(key, Decimal(0)) + need[r] * ps.count
                chosen.setdefault(ps.name, rf)
                notes.extend(borrows)
                break
            else:
                return _blocked(f"no flavor of ClusterQueue {cq_name} admits pod set {ps.name} ({ps.count} pods): "
                                f"{'; '.join(reasons)}", f"ClusterQueue/{cq_name}", _unblock(reasons),
                                ASSIGNER)  # fmt: skip
    flavors = ", ".join(sorted({rf["metadata"]["name"] for rf in chosen.values()})) or "none"
    detail = f"ClusterQueue {cq_name} admits it on flavor {flavors}" + (f" ({'; '.join(notes)})" if notes else "")
    # A check runs for the workload when its onFlavors is empty or names a flavor the workload got
    # (pkg/util/admissioncheck/admissioncheck.go NewAdmissionChecks; pkg/workload/admissionchecks.go).
    names = {rf["metadata"]["name"] for rf in chosen.values()}
    rules = ((cq.get("spec") or {}).get("admissionChecksStrategy") or {}).get("admissionChecks") or []
    checks = [cluster.get("AdmissionCheck", str(c.get("name"))) or {"metadata": {"name": c.get("name")}}
              for c in rules if not c.get("onFlavors") or names & set(c["onFlavors"])]  # fmt: skip
    return Admitted(cq, chosen, detail, checks)


def _missing_priority(cluster: ClusterView, w: Workload, pod_sets: list[PodSet]) -> Stage | None:
    """Kueue builds the Workload with a priority (kueue.PRIORITY_CITE): from the WorkloadPriorityClass the label
    names, else, for a job, from its pods' PriorityClass. A class that does not exist makes the Get fail, so no
    Workload is created and the job stays suspended. (A pod-based workload's pods meet the Priority admission
    plugin first: admission.priority_refusal.)"""
    wpc = kueue.workload_priority_class(w)
    if wpc:
        known = sorted(str(o["metadata"]["name"]) for o in cluster.of("WorkloadPriorityClass"))
        if wpc not in known:
            return _blocked(f"no WorkloadPriorityClass {wpc} on {cluster.name} (label {kueue.PRIORITY_CLASS_LABEL}): "
                            "Kueue cannot create the Workload, so the job stays suspended",
                            f"WorkloadPriorityClass/{wpc}",
                            f"name one of {', '.join(known) or 'none'}, or drop the label", kueue.PRIORITY_CITE)  # fmt: skip
        return None
    if kueue.framework(w) in kueue.POD_BASED:
        return None
    if (found := admission.unknown_priority_class(cluster, pod_sets)) is None:
        return None
    ps, name = found
    return _blocked(f"pod set {ps.name} names PriorityClass {name}, which {cluster.name} lacks: Kueue cannot create the "
                    "Workload, so the job stays suspended", f"PriorityClass/{name}", admission.priority_unblock(cluster),
                    kueue.PRIORITY_CITE)  # fmt: skip


def judge(walk: Walk, cluster: ClusterView, pod_sets: list[PodSet]) -> Admitted | Stage:
    """Kueue on `cluster`: an admission, or a Stage (a refusal, or a pass when Kueue does not manage it)."""
    w = walk.workload
    cfg = kueue.config(cluster)
    if cfg is None:
        return Stage("queueing", True, f"no Kueue on cluster {cluster.name}: the scheduler alone places it")
    ns = admission.namespace_of(cluster, w.namespace)
    is_managed, why = kueue.managed(w, cfg, namespace_labels(ns, w.namespace))
    if not is_managed:
        return Stage("queueing", True, f"not queued: {why}; it bypasses quota", cites=(kueue.MANAGED_CITE,))
    if missing := _missing_priority(cluster, w, pod_sets):
        return missing
    queue = w.queue_name or "default"
    lq = cluster.get("LocalQueue", queue, w.namespace)
    if lq is None and not w.queue_name:
        return _blocked(f"Kueue manages {w.kind}s in namespace {w.namespace} without a queue name and suspends them, "
                        "but no LocalQueue `default` exists there to default to: it stays suspended",
                        f"LocalQueue/{w.namespace}/default", f"set the label {QUEUE_LABEL} to a LocalQueue of the namespace",
                        kueue.MANAGED_CITE)  # fmt: skip
    if lq is None:
        known = ", ".join(sorted(q["metadata"]["name"] for q in cluster.in_namespace("LocalQueue", w.namespace)))
        return _blocked(f"LocalQueue {w.namespace}/{queue} does not exist on {cluster.name}: the workload stays pending",
                        f"LocalQueue/{w.namespace}/{queue}", f"use a LocalQueue of the namespace: {known or 'none'}",
                        QUEUES)  # fmt: skip
    cq_name = str((lq.get("spec") or {}).get("clusterQueue"))
    cq = cluster.get("ClusterQueue", cq_name)
    if cq is None:
        return _blocked(f"ClusterQueue {cq_name} of LocalQueue {queue} does not exist", f"ClusterQueue/{cq_name}",
                        "create the ClusterQueue", QUEUES)  # fmt: skip
    stop = (cq.get("spec") or {}).get("stopPolicy", "None")
    if stop != "None":
        return _blocked(f"ClusterQueue {cq_name} on {cluster.name} is stopped (stopPolicy {stop}): it admits nothing",
                        f"ClusterQueue/{cq_name}", "open a burst window (gpufleet burst open) or clear stopPolicy",
                        QUEUES)  # fmt: skip
    selector = (cq.get("spec") or {}).get("namespaceSelector")
    if selector is None or not matches(selector, namespace_labels(ns, w.namespace)):
        return _blocked(f"workload namespace {w.namespace} doesn't match ClusterQueue {cq_name}'s namespaceSelector",
                        f"ClusterQueue/{cq_name}", "submit it through a LocalQueue whose ClusterQueue admits the namespace",
                        QUEUES)  # fmt: skip
    return _assign(cluster, cq, pod_sets, cfg, w.namespace)


def inject(pod_sets: list[PodSet], admitted: Admitted) -> None:
    """What Kueue writes into the pods it admits: the flavor's nodeLabels and tolerations."""
    for ps in pod_sets:
        rf = admitted.flavors.get(ps.name)
        if rf is None:
            continue
        spec = rf.get("spec") or {}
        if spec.get("nodeLabels"):
            ps.spec["nodeSelector"] = {**(ps.spec.get("nodeSelector") or {}), **spec["nodeLabels"]}
        if spec.get("tolerations"):
            ps.spec["tolerations"] = [*(ps.spec.get("tolerations") or []), *spec["tolerations"]]


def _pools(walk: Walk, cluster: ClusterView, rf: dict[str, Any]) -> list[str]:
    """The site's pools whose nodes carry every nodeLabel of the flavor."""
    site = next((s for s in walk.spec.sites if s.name == cluster.site), None)
    wanted = (rf.get("spec") or {}).get("nodeLabels") or {}
    if site is None or not wanted:
        return []
    return [
        p.name for p in site.node_pools if all(nodes.pool_labels(walk.spec, p).get(k) == v for k, v in wanted.items())
    ]


def _settle(walk: Walk, cluster: ClusterView, pod_sets: list[PodSet], admitted: Admitted) -> Stage | None:
    """Kueue's admission applied on the cluster that runs the pods; a refusal when the policies refuse them."""
    inject(pod_sets, admitted)
    labels = namespace_labels(admission.namespace_of(cluster, walk.workload.namespace), walk.workload.namespace)
    if admission.gated_by_kueue(walk, cluster, labels) is False:
        refusal = admission.priority_refusal(cluster, pod_sets) or admission.policy_refusal(walk, cluster, pod_sets)
        if refusal is not None:
            return _blocked(f"{admitted.detail}, but the API server refuses the pods Kueue then creates: {refusal.detail}",
                            refusal.blocker, refusal.unblock, *refusal.cites)  # fmt: skip
    walk.cluster, walk.pod_sets = cluster, pod_sets
    walk.flavors = {ps: rf["metadata"]["name"] for ps, rf in admitted.flavors.items()}
    walk.pools = {ps: _pools(walk, cluster, rf) for ps, rf in admitted.flavors.items()}
    return None


def _dispatch(walk: Walk, check: dict[str, Any], admitted: Admitted) -> Stage:
    """MultiKueue: the workload goes to the first worker, in the MultiKueueConfig's order, that admits it."""
    manager = walk.cluster
    params = (check.get("spec") or {}).get("parameters") or {}
    config = manager.get("MultiKueueConfig", str(params.get("name")))
    names = [str(n) for n in ((config or {}).get("spec") or {}).get("clusters") or []]
    tried = []
    for name in names:
        worker = walk.clusters.get(name)
        if worker is None:
            tried.append(f"{name}: not a cluster of the estate")
            continue
        pod_sets = [p.copy() for p in walk.workload.pod_sets]
        gate = admission.pods(walk, worker, pod_sets)
        if not gate.ok:
            tried.append(f"{name}: admission refuses it ({gate.detail})")
            continue
        result = judge(walk, worker, pod_sets)
        if isinstance(result, Stage) and not result.ok:
            tried.append(f"{name}: {result.detail}")
            continue
        if isinstance(result, Admitted) and (refusal := _settle(walk, worker, pod_sets, result)):
            tried.append(f"{name}: {refusal.detail}")
            continue
        if isinstance(result, Stage):
            walk.cluster, walk.pod_sets = worker, pod_sets
        why = "first in order: its admission and quota fit" if not tried else "after " + "; ".join(tried)
        return Stage("queueing", True, f"{admitted.detail} on the manager; MultiKueueConfig {params.get('name')} "
                     f"dispatches it to {name} ({why}): {result.detail}", cites=(DISPATCH, ASSIGNER, INJECT))  # fmt: skip
    return _blocked(f"{admitted.detail} on the manager, but no worker of MultiKueueConfig "
                    f"{params.get('name')} ({', '.join(names) or 'none'}) admits it: {'; '.join(tried)}",
                    f"MultiKueueConfig/{params.get('name')}", "fit the workload to a worker's quota and pools",
                    DISPATCH, ASSIGNER)  # fmt: skip


def check(walk: Walk) -> Stage:
    result = judge(walk, walk.cluster, walk.pod_sets)
    if isinstance(result, Stage):
        return result
    notes = []
    cites: tuple[Cite, ...] = (QUEUES, ASSIGNER, INJECT)
    for c in result.checks:
        controller = (c.get("spec") or {}).get("controllerName")
        if controller == kueue.MULTIKUEUE_CONTROLLER:
            return _dispatch(walk, c, result)
        if controller == provisioning.CONTROLLER:
            notes.append(_provisioning_note(walk.cluster, c))
            cites = (*cites, PROVISIONING)
            continue
        notes.append(f"admission check {c['metadata']['name']} ({controller or 'unknown controller'}) must pass too")
    if refusal := _settle(walk, walk.cluster, walk.pod_sets, result):
        return refusal
    extra = f"; {'; '.join(notes)}" if notes else ""
    return Stage("queueing", True, f"{result.detail} on {walk.cluster.name}{extra}", cites=cites)


def _provisioning_note(cluster: ClusterView, check: dict[str, Any]) -> str:
    """What the ProvisioningRequest check does before Kueue admits (admission_check/provisioning_request.md)."""
    params = (check.get("spec") or {}).get("parameters") or {}
    config = cluster.get("ProvisioningRequestConfig", str(params.get("name"))) or {}
    klass = (config.get("spec") or {}).get("provisioningClassName", "unknown class")
    return (f"admission check {check['metadata']['name']}: Kueue holds the quota, creates a ProvisioningRequest "
            f"({klass}) and admits once cluster-autoscaler reports it Provisioned")  # fmt: skip
