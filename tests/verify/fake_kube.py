"""A small fake of the kubernetes.client APIs `gpufleet verify` calls (CoreV1Api, BatchV1Api, CustomObjectsApi).

Kueue is faked as its Job webhook and controller behave: a Job naming a LocalQueue in a tenant namespace is
created suspended, and unsuspended once `admits` says its Workload is admitted. It answers with the client's own
model classes and raises the client's own ApiException, so the code under test
sees what it would see from a real API server; `test_fake_methods_exist_on_the_real_client` keeps the method
names and parameters honest. What the pods print comes from the real outputs in fixtures/.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from gpufleet.verify import manifests
from model import conventions

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def dcgm_document(status: str = "Pass", warning: str | None = None) -> str:
    """A DCGM 4 document holding the real `diagnostic` test of NVIDIA/DCGM#215 (optionally with GPU 3 changed)."""
    test = json.loads(fixture("dcgm-diag-4-diagnostic-test-dcgm-issue-215.json"))
    if status != "Pass" or warning:
        gpu3 = test["results"][3]
        gpu3["status"] = status
        if warning:
            gpu3["warnings"] = [{"error_category": 1, "error_id": 95, "error_severity": 2, "warning": warning}]
        test["test_summary"]["status"] = status
    doc = {"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [test]}]}}
    return "Successfully ran diagnostic for group.\n" + json.dumps(doc, indent=1)


def fio_log() -> str:
    doc = fixture("fio-3.39-librbd-randread-1280k-ceph-cbt.json")
    write = manifests.FIO_MARKER.format("write")
    read = manifests.FIO_MARKER.format("read")
    return f"{write}\n{doc}\n{read}\n{doc}\n"


def api_exception(status: int, reason: str, body: str = "") -> ApiException:
    e = ApiException(status=status, reason=reason)
    e.body = body
    return e


def default_logs(job: str, namespace: str) -> str:
    if job.startswith("nccl"):
        return fixture("nccl-all-reduce-2x-p5.48xlarge-aws.txt")
    if job.startswith("nvlink"):
        return fixture("nccl-all-reduce-2x-a3-mega.txt")
    if job.startswith("dcgm"):
        return dcgm_document()
    if job.startswith("fio"):
        return fio_log()
    return ""


@dataclass
class FakeCluster:
    """State shared by the two fake APIs."""

    pool_nodes: dict[str, list[str]] = field(default_factory=dict)
    node_labels: dict[str, dict[str, str]] = field(default_factory=dict)
    logs: Callable[[str, str], str] = default_logs
    job_outcome: Callable[[str], str] = lambda job: "Complete"  # Complete | Failed | running
    quota_refuses: bool = True
    kueue_suspends: bool = True
    admits: Callable[[str], bool] = lambda job: True  # whether Kueue admits the Workload of this Job
    pending_message: str = (
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, "
        "8 more needed"
    )
    bound_claims: set[tuple[str, str]] = field(default_factory=set)  # (namespace, claim)
    interrupt_on: str | None = None  # raise KeyboardInterrupt when this call happens
    calls: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)
    jobs: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    namespaces: set[str] = field(default_factory=set)
    deleted_namespaces: list[str] = field(default_factory=list)
    deleted_jobs: list[tuple[str, str]] = field(default_factory=list)
    deleted: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, namespace, name) besides Jobs
    custom_objects: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)  # (plural, ns, name)
    unschedulable: dict[str, bool] = field(default_factory=dict)
    taints: dict[str, list[dict[str, str]]] = field(default_factory=dict)  # node -> its spec.taints
    conditions: dict[str, dict[str, str]] = field(default_factory=dict)  # node -> condition type -> status
    node_versions: dict[str, int] = field(default_factory=dict)  # node -> metadata.resourceVersion
    # node -> a taint another controller adds right after gpufleet's next read of that node (a write race)
    racing_taints: dict[str, dict[str, str]] = field(default_factory=dict)
    tenant_nodes: dict[str, str] = field(default_factory=dict)  # namespace -> node Kueue would place its pods on
    # A MultiKueue manager: the worker (its MultiKueueCluster name, its fake) an admitted Workload goes to.
    dispatch_to: tuple[str, FakeCluster] | None = None
    pods_end: bool = False  # a finished Job's pods report Succeeded (else Running, as a probe's pods are read)

    def probe_logs(self, job: str, namespace: str) -> str:
        """A default-deny network: pods reach pods of their own namespace; only the run's namespace (no
        NetworkPolicy) reaches outside addresses or other namespaces."""
        if not job.startswith("probe"):
            return self.logs(job, namespace)
        command = self.jobs[(namespace, job)]["spec"]["template"]["spec"]["containers"][0]["command"][2]
        host = command.split("nc -w 5 ", 1)[1].split()[0]
        target_ns = next((ns for (ns, name) in self.jobs if name.startswith("target") and host == "10.0.0.10"), None)
        reached = namespace.startswith("gpufleet-verify") or namespace == target_ns
        return "GPUFLEET-REACHED" if reached else "GPUFLEET-BLOCKED"

    def held(self, namespace: str, name: str) -> bool:
        """Kueue holds the Job: it names a LocalQueue in a namespace Kueue manages."""
        labels = self.jobs.get((namespace, name), {}).get("metadata", {}).get("labels", {})
        return (
            self.kueue_suspends
            and "kueue.x-k8s.io/queue-name" in labels
            and not namespace.startswith("gpufleet-verify")
        )

    def record(self, name: str, *args: Any) -> None:
        self.calls.append((name, args))
        if self.interrupt_on == name:
            raise KeyboardInterrupt

    def untolerated(self, node: str, tolerations: list[dict[str, str]]) -> bool:
        """The kube-scheduler's taint filter: a NoSchedule taint no toleration of the pod matches."""
        tolerated = {(t.get("key"), t.get("value"), t.get("effect")) for t in tolerations}
        return any(
            t["effect"] == "NoSchedule" and (t["key"], t.get("value"), t["effect"]) not in tolerated
            for t in self.taints.get(node, [])
        )

    def node_of(self, job: str, index: int = 0) -> str:
        spec = self.jobs.get(next((k for k in self.jobs if k[1] == job), ("", "")), {})
        pod = spec.get("spec", {}).get("template", {}).get("spec", {})
        selector = pod.get("nodeSelector", {})
        if conventions.HOSTNAME_LABEL in selector:
            return str(selector[conventions.HOSTNAME_LABEL])
        candidates = [
            n
            for n in self.pool_nodes.get(selector.get(conventions.POOL_LABEL, ""), [])
            if not self.unschedulable.get(n) and not self.untolerated(n, pod.get("tolerations", []))
        ]
        if candidates:
            return candidates[index % len(candidates)]
        namespace = next((k[0] for k in self.jobs if k[1] == job), "")
        return self.tenant_nodes.get(namespace, "tenant-node")


def _meta(name: str, namespace: str | None = None, labels: dict[str, str] | None = None) -> client.V1ObjectMeta:
    return client.V1ObjectMeta(name=name, namespace=namespace, labels=labels or {})


class FakeCore:
    def __init__(self, cluster: FakeCluster) -> None:
        self.c = cluster

    def create_namespace(self, body: dict[str, Any], **kw: Any) -> client.V1Namespace:
        self.c.record("create_namespace", body["metadata"]["name"])
        self.c.namespaces.add(body["metadata"]["name"])
        return client.V1Namespace(metadata=_meta(body["metadata"]["name"]))

    def delete_namespace(self, name: str, **kw: Any) -> client.V1Status:
        self.c.record("delete_namespace", name)
        self.c.deleted_namespaces.append(name)
        return client.V1Status(status="Success")

    def delete_namespaced_secret(self, name: str, namespace: str, **kw: Any) -> client.V1Status:
        self.c.record("delete_namespaced_secret", name, namespace)
        self.c.deleted.append(("Secret", namespace, name))
        return client.V1Status(status="Success")

    def delete_namespaced_service(self, name: str, namespace: str, **kw: Any) -> client.V1Status:
        self.c.record("delete_namespaced_service", name, namespace)
        self.c.deleted.append(("Service", namespace, name))
        return client.V1Status(status="Success")

    def delete_namespaced_persistent_volume_claim(self, name: str, namespace: str, **kw: Any) -> client.V1Status:
        self.c.record("delete_namespaced_persistent_volume_claim", name, namespace)
        self.c.deleted.append(("PersistentVolumeClaim", namespace, name))
        return client.V1Status(status="Success")

    def list_node(self, **kw: Any) -> client.V1NodeList:
        self.c.record("list_node", kw.get("label_selector"))
        selector = kw.get("label_selector", "")
        pool = selector.split("=", 1)[1] if "=" in selector else None
        names = self.c.pool_nodes.get(pool, []) if pool else [n for ns in self.c.pool_nodes.values() for n in ns]
        items = []
        for n in names:
            p = next(k for k, v in self.c.pool_nodes.items() if n in v)
            items.append(
                client.V1Node(
                    metadata=_meta(n, labels={conventions.POOL_LABEL: p, **self.c.node_labels.get(n, {})}),
                    spec=self._spec(n),
                    status=client.V1NodeStatus(conditions=self._conditions(n)),
                )
            )
        return client.V1NodeList(items=items)

    def _spec(self, n: str) -> client.V1NodeSpec:
        taints = [
            client.V1Taint(key=t["key"], value=t.get("value"), effect=t["effect"]) for t in self.c.taints.get(n, [])
        ]
        return client.V1NodeSpec(unschedulable=self.c.unschedulable.get(n, False), taints=taints or None)

    def _conditions(self, n: str) -> list[client.V1NodeCondition]:
        extra = [client.V1NodeCondition(type=k, status=v) for k, v in self.c.conditions.get(n, {}).items()]
        return [client.V1NodeCondition(type="Ready", status="True"), *extra]

    def read_node(self, name: str, **kw: Any) -> client.V1Node:
        self.c.record("read_node", name)
        meta = _meta(name, labels=self.c.node_labels.get(name, {}))
        meta.resource_version = str(self.c.node_versions.get(name, 1))
        node = client.V1Node(metadata=meta, spec=self._spec(name))
        if name in self.c.racing_taints:
            self.c.taints.setdefault(name, []).append(self.c.racing_taints.pop(name))
            self.c.node_versions[name] = self.c.node_versions.get(name, 1) + 1
        return node

    def patch_node(self, name: str, body: dict[str, Any], **kw: Any) -> client.V1Node:
        self.c.record("patch_node", name, body)
        # A resourceVersion in a patch is a precondition: 409 Conflict when the object changed since it was read.
        wanted = body.get("metadata", {}).get("resourceVersion")
        if wanted is not None and wanted != str(self.c.node_versions.get(name, 1)):
            raise api_exception(409, "Conflict", "the object has been modified")
        self.c.node_versions[name] = self.c.node_versions.get(name, 1) + 1
        if "unschedulable" in body["spec"]:
            self.c.unschedulable[name] = bool(body["spec"]["unschedulable"])
        if "taints" in body["spec"]:
            self.c.taints[name] = [dict(t) for t in body["spec"]["taints"]]
        return client.V1Node(metadata=_meta(name))

    def create_namespaced_secret(self, namespace: str, body: dict[str, Any], **kw: Any) -> client.V1Secret:
        self.c.record("create_namespaced_secret", namespace, body["metadata"]["name"])
        return client.V1Secret(metadata=_meta(body["metadata"]["name"], namespace))

    def create_namespaced_service(self, namespace: str, body: dict[str, Any], **kw: Any) -> client.V1Service:
        self.c.record("create_namespaced_service", namespace, body["metadata"]["name"])
        return client.V1Service(metadata=_meta(body["metadata"]["name"], namespace))

    def create_namespaced_persistent_volume_claim(self, namespace: str, body: dict[str, Any], **kw: Any) -> Any:
        self.c.record("create_namespaced_persistent_volume_claim", namespace, body["metadata"]["name"])
        return client.V1PersistentVolumeClaim(metadata=_meta(body["metadata"]["name"], namespace))

    def read_namespaced_persistent_volume_claim(self, name: str, namespace: str, **kw: Any) -> Any:
        self.c.record("read_namespaced_persistent_volume_claim", name, namespace)
        if (namespace, name) not in self.c.bound_claims:
            raise api_exception(404, "Not Found")
        return client.V1PersistentVolumeClaim(
            metadata=_meta(name, namespace), status=client.V1PersistentVolumeClaimStatus(phase="Bound")
        )

    def create_namespaced_pod(self, namespace: str, body: dict[str, Any], **kw: Any) -> client.V1Pod:
        self.c.record("create_namespaced_pod", namespace, kw.get("dry_run"))
        requests = body["spec"]["containers"][0]["resources"]["requests"]
        if self.c.quota_refuses and any(k.startswith("nvidia.com/") for k in requests):
            raise api_exception(403, "Forbidden", 'pods "x" is forbidden: exceeded quota: tenant-quota')
        return client.V1Pod(metadata=_meta(body["metadata"]["name"], namespace))

    def create_namespaced_pod_eviction(self, name: str, namespace: str, body: dict[str, Any], **kw: Any) -> Any:
        self.c.record("create_namespaced_pod_eviction", name, namespace)
        return client.V1Status(status="Success")

    def list_namespaced_pod(self, namespace: str, **kw: Any) -> client.V1PodList:
        selector = kw.get("label_selector", "")
        self.c.record("list_namespaced_pod", namespace, selector)
        if selector == "app=nvidia-dcgm-exporter":
            items = [
                client.V1Pod(
                    metadata=_meta(f"exporter-{n}", namespace),
                    spec=client.V1PodSpec(containers=[], node_name=n),
                    status=client.V1PodStatus(phase="Running"),
                )
                for pool in self.c.pool_nodes.values()
                for n in pool
            ]
            return client.V1PodList(items=items)
        job = dict(p.split("=", 1) for p in selector.split(","))["job-name"]
        count = int(self.c.jobs.get((namespace, job), {}).get("spec", {}).get("parallelism", 1))
        items = [
            client.V1Pod(
                metadata=_meta(f"{job}-{i}", namespace),
                spec=client.V1PodSpec(containers=[], node_name=self.c.node_of(job, i)),
                status=client.V1PodStatus(phase=self._phase(job), pod_ip=f"10.0.0.{i + 10}"),
            )
            for i in range(count)
        ]
        return client.V1PodList(items=items)

    def _phase(self, job: str) -> str:
        return "Succeeded" if self.c.pods_end and self.c.job_outcome(job) == "Complete" else "Running"

    def read_namespaced_pod_log(self, name: str, namespace: str, **kw: Any) -> str:
        self.c.record("read_namespaced_pod_log", name, namespace)
        return self.c.probe_logs(name.rsplit("-", 1)[0], namespace)

    def connect_get_namespaced_pod_proxy_with_path(self, name: str, namespace: str, path: str, **kw: Any) -> str:
        self.c.record("connect_get_namespaced_pod_proxy_with_path", name, namespace, path)
        return fixture("dcgm-exporter-readme-metrics.txt")


class FakeBatch:
    def __init__(self, cluster: FakeCluster) -> None:
        self.c = cluster

    def create_namespaced_job(self, namespace: str, body: dict[str, Any], **kw: Any) -> client.V1Job:
        name = body["metadata"]["name"]
        self.c.record("create_namespaced_job", namespace, name, kw.get("dry_run"))
        labels = dict(body["metadata"].get("labels") or {})
        suspend = False
        if kw.get("dry_run"):
            if self.c.kueue_suspends and not namespace.startswith("gpufleet-verify"):
                labels["kueue.x-k8s.io/queue-name"] = "default"  # what Kueue's Job webhook does
                suspend = True
            return client.V1Job(metadata=_meta(name, namespace, labels), spec=client.V1JobSpec(
                template=client.V1PodTemplateSpec(), suspend=suspend))  # fmt: skip
        self.c.jobs[(namespace, name)] = body
        suspend = self.c.held(namespace, name)  # Kueue's Job webhook suspends a queued Job as it is created
        return client.V1Job(metadata=_meta(name, namespace, labels), spec=client.V1JobSpec(
            template=client.V1PodTemplateSpec(), suspend=suspend))  # fmt: skip

    def read_namespaced_job_status(self, name: str, namespace: str, **kw: Any) -> client.V1Job:
        self.c.record("read_namespaced_job_status", name, namespace)
        suspended = self.c.held(namespace, name) and not self.c.admits(name)
        outcome = "running" if suspended else self.c.job_outcome(name)
        conditions = None
        if outcome in ("Complete", "Failed"):
            conditions = [client.V1JobCondition(type=outcome, status="True", reason="Fake", message="")]
        spec = client.V1JobSpec(template=client.V1PodTemplateSpec(), suspend=suspended)
        return client.V1Job(metadata=_meta(name, namespace), spec=spec,
                            status=client.V1JobStatus(conditions=conditions, active=0 if suspended else 1))  # fmt: skip

    def delete_namespaced_job(self, name: str, namespace: str, **kw: Any) -> client.V1Status:
        self.c.record("delete_namespaced_job", name, namespace)
        self.c.deleted_jobs.append((namespace, name))
        return client.V1Status(status="Success")


class FakeCustom:
    """Kueue's Workloads: one per queued Job, owned by it; QuotaReserved False while Kueue does not admit it."""

    def __init__(self, cluster: FakeCluster) -> None:
        self.c = cluster

    def create_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, body: dict[str, Any], **kw: Any
    ) -> Any:
        self.c.record("create_namespaced_custom_object", group, version, namespace, plural, body["metadata"]["name"])
        self.c.custom_objects[(plural, namespace, body["metadata"]["name"])] = body
        return body

    def delete_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, name: str, **kw: Any
    ) -> Any:
        self.c.record("delete_namespaced_custom_object", group, version, namespace, plural, name)
        self.c.custom_objects.pop((plural, namespace, name), None)
        return {"status": "Success"}

    def list_namespaced_custom_object(self, group: str, version: str, namespace: str, plural: str, **kw: Any) -> Any:
        self.c.record("list_namespaced_custom_object", group, version, namespace, plural)
        items = []
        for (ns, job), _ in self.c.jobs.items():
            if ns != namespace or not self.c.held(ns, job):
                continue
            admitted = self.c.admits(job)
            condition = {"type": "QuotaReserved", "status": "True" if admitted else "False", "reason": "Pending",
                         "message": "" if admitted else self.c.pending_message}  # fmt: skip
            status: dict[str, Any] = {"conditions": [condition]}
            if admitted and self.c.dispatch_to is not None:  # MultiKueue copies the Job to the worker that admits
                worker, cluster = self.c.dispatch_to
                status["clusterName"] = worker
                cluster.jobs[(ns, job)] = self.c.jobs[(ns, job)]
                outcome = self.c.job_outcome(job)
                if outcome in ("Complete", "Failed"):
                    reason = "Succeeded" if outcome == "Complete" else "Failed"
                    status["conditions"].append({"type": "Finished", "status": "True", "reason": reason,
                                                 "message": f"Job {reason.lower()}"})  # fmt: skip
            items.append({
                "metadata": {"name": f"job-{job}-1a2b3", "namespace": ns,
                             "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job}]},
                "status": status,
            })  # fmt: skip
        return {"items": items}


def apis(cluster: FakeCluster) -> Any:
    """The fake ClusterApi of one cluster."""
    from gpufleet.verify.kube import ClusterApi

    return ClusterApi(FakeCore(cluster), FakeBatch(cluster), FakeCustom(cluster))
