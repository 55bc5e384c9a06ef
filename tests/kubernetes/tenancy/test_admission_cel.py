"""The admission policies' CEL, evaluated against sample pods with cel-python (no API server needed)."""

from __future__ import annotations

import copy
from typing import Any

import celpy
import pytest
from celpy import celtypes, json_to_cel

from components.kubernetes.admission import (
    TOLERATION_VALIDATIONS,
    VOLUME_VALIDATIONS,
    policy_spec,
    rdma_pod_policy,
    toleration_validations,
    untrusted_validations,
)
from model.conventions import BURST_STOPPED_TAINT, DEDICATED_TENANT_LABEL, GPU_TAINT, QUARANTINE_KEY
from model.spec import Tenant

ENV = celpy.Environment()


def refused(
    validations: list[dict[str, str]],
    pod: dict[str, Any],
    variables: list[dict[str, str]] | None = None,
    namespace: dict[str, Any] | None = None,
    old: dict[str, Any] | None = None,
) -> list[str]:
    """Messages of the validations `pod` fails, evaluated the way the API server does (variables first): a CREATE,
    or with `old` an UPDATE of that object."""
    activation: dict[str, Any] = {
        "object": json_to_cel(pod),
        "oldObject": json_to_cel(old),
        "namespaceObject": json_to_cel(namespace or {}),
        "request": json_to_cel({"operation": "UPDATE" if old is not None else "CREATE"}),
    }
    values = celtypes.MapType({})
    for v in variables or []:
        result = ENV.program(ENV.compile(v["expression"])).evaluate({**activation, "variables": values})
        values = celtypes.MapType({**values, celtypes.StringType(v["name"]): result})
    activation["variables"] = values
    return [v["message"] for v in validations if not ENV.program(ENV.compile(v["expression"])).evaluate(activation)]


RDMA_POD: dict[str, Any] = {
    "metadata": {"name": "nccl"},
    "spec": {
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [
            {
                "name": "worker",
                "image": "nccl-tests:1",
                "securityContext": {"capabilities": {"add": ["IPC_LOCK"], "drop": ["ALL"]}},
                "resources": {"limits": {"nvidia.com/gpu": 8, "rdma/rdma_shared_device_a": 1}},
            }
        ],
    },
}


def rdma(pod: dict[str, Any]) -> list[str]:
    variables, validations = rdma_pod_policy()
    return refused(validations, pod, variables)


def changed(path: list[Any], value: Any) -> dict[str, Any]:
    pod = copy.deepcopy(RDMA_POD)
    node: Any = pod
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return pod


def test_rdma_pod_with_ipc_lock_is_admitted() -> None:
    assert rdma(RDMA_POD) == []


@pytest.mark.parametrize(
    ("pod", "words"),
    [
        (
            changed(["spec", "containers", 0, "securityContext", "capabilities", "add"], ["IPC_LOCK", "SYS_ADMIN"]),
            "capabilities",
        ),
        (changed(["spec", "containers", 0, "securityContext", "privileged"], True), "privileged"),
        (changed(["spec", "hostNetwork"], True), "host namespaces"),
        (changed(["spec", "volumes"], [{"name": "h", "hostPath": {"path": "/"}}]), "hostPath"),
        (changed(["spec", "containers", 0, "ports"], [{"containerPort": 80, "hostPort": 80}]), "host ports"),
        (changed(["spec", "securityContext", "seccompProfile"], {"type": "Unconfined"}), "seccomp"),
        (changed(["spec", "securityContext", "sysctls"], [{"name": "kernel.msgmax", "value": "1"}]), "sysctls"),
        (
            changed(["spec", "initContainers"], [{"name": "i", "image": "x", "securityContext": {"privileged": True}}]),
            "privileged",
        ),
    ],
)
def test_rdma_policy_refuses_what_baseline_refuses(pod: dict[str, Any], words: str) -> None:
    found = rdma(pod)
    assert len(found) == 1 and words in found[0], found


def untrusted(pod: dict[str, Any], owned_pods_only: bool = False) -> list[str]:
    return refused(untrusted_validations(Tenant(name="agents", trust="untrusted"), None, owned_pods_only), pod)


def test_untrusted_pod_must_carry_its_dedicated_node_selector_once_ungated() -> None:
    gated = {"spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}], "containers": [{"name": "a"}]}}
    assert untrusted(gated) == []
    loose = {"spec": {"containers": [{"name": "a"}]}}
    assert len(untrusted(loose)) == 1
    pinned = {"spec": {"nodeSelector": {DEDICATED_TENANT_LABEL: "agents"}, "containers": [{"name": "a"}]}}
    assert untrusted(pinned) == []


def tolerations(pod: dict[str, Any], tenant: str) -> list[str]:
    return refused(TOLERATION_VALIDATIONS, pod, namespace={"metadata": {"name": tenant, "labels": {"tenant": tenant}}})


@pytest.mark.parametrize("tenant", ["agents", "research"])
def test_tenant_pods_may_not_tolerate_everything_or_another_tenant(tenant: str) -> None:
    other = "research" if tenant == "agents" else "agents"
    base = {"containers": [{"name": "a"}]}
    wildcard = {"spec": {**base, "tolerations": [{"operator": "Exists"}]}}
    foreign = {"spec": {**base, "tolerations": [{"key": "tenant", "value": other, "effect": "NoSchedule"}]}}
    own = {
        "spec": {
            **base,
            "tolerations": [
                {"key": "tenant", "operator": "Equal", "value": tenant, "effect": "NoSchedule"},
                {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
            ],
        }
    }
    assert len(tolerations(wildcard, tenant)) == 1
    assert len(tolerations(foreign, tenant)) == 1
    assert tolerations(own, tenant) == []


OUT_OF_SERVICE = [
    {"key": QUARANTINE_KEY, "operator": "Exists"},
    {"key": QUARANTINE_KEY, "operator": "Exists", "effect": "NoSchedule"},
    {"key": QUARANTINE_KEY, "operator": "Equal", "value": "verify", "effect": "NoSchedule"},
    {"key": BURST_STOPPED_TAINT.key, "operator": "Exists"},
    BURST_STOPPED_TAINT.toleration(),
]


@pytest.mark.parametrize("toleration", OUT_OF_SERVICE)
def test_tenant_pods_may_not_tolerate_the_taints_that_take_a_node_out_of_service(toleration: dict[str, str]) -> None:
    """A quarantined node (gpufleet verify) or a stopped burst group's node is out of service: a tenant pod
    tolerating its taint would be placed on a node that failed a probe, or give a stopped group a reason to grow."""
    gpu_only = {"spec": {"containers": [{"name": "a"}], "tolerations": [GPU_TAINT.toleration()]}}
    assert tolerations(gpu_only, "research") == []
    pod = {"spec": {"containers": [{"name": "a"}], "tolerations": [GPU_TAINT.toleration(), toleration]}}
    found = tolerations(pod, "research")
    assert len(found) == 1 and "out of service" in found[0], found


def test_a_tenant_pod_created_bound_to_a_node_is_refused_and_an_unbound_one_admitted() -> None:
    """spec.nodeName skips the scheduler, and the kubelet checks only NoExecute taints (kubernetes
    pkg/kubelet/lifecycle/predicate.go): the pod would run on a quarantined node without tolerating its taint."""
    pod = {"spec": {"containers": [{"name": "a"}], "tolerations": [GPU_TAINT.toleration()]}}
    assert tolerations(pod, "research") == []
    bound = copy.deepcopy(pod)
    bound["spec"]["nodeName"] = "ip-10-0-1-7.ec2.internal"
    found = tolerations(bound, "research")
    assert len(found) == 1 and "spec.nodeName" in found[0], found


def test_the_tolerations_policy_matches_pods_but_not_their_binding_subresource() -> None:
    """A rule on `pods` matches no subresource, so the scheduler's POST of pods/{name}/binding is not judged."""
    for shared in ({}, {"l40s": ["agents", "research"]}):
        spec = policy_spec(toleration_validations(shared))
        (rule,) = spec["matchConstraints"]["resourceRules"]
        assert rule["resources"] == ["pods"] and rule["operations"] == ["CREATE", "UPDATE"]


PINNED: dict[str, Any] = {"nodeSelector": {DEDICATED_TENANT_LABEL: "agents"}, "containers": [{"name": "a"}]}
# What the Job controller sets on the pods it creates (kubernetes pkg/controller/job, metav1.NewControllerRef).
JOB_OWNER = {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "1f0c", "controller": True,
             "blockOwnerDeletion": True}  # fmt: skip


def test_untrusted_standalone_pod_is_refused_where_the_cni_leaves_it_outside_network_policy() -> None:
    """EKS user guide, cni-network-policy, Considerations: "Standalone Pods that don't have a
    `metadata.ownerReferences` set can't have network policies applied to them." """
    bare = {"metadata": {"name": "shell"}, "spec": PINNED}
    found = untrusted(bare, owned_pods_only=True)
    assert len(found) == 1 and "created by a controller" in found[0], found
    not_a_controller = {
        "metadata": {"name": "p", "ownerReferences": [{**JOB_OWNER, "controller": False}]},
        "spec": PINNED,
    }
    assert len(untrusted(not_a_controller, owned_pods_only=True)) == 1
    job_pod = {"metadata": {"name": "train-0", "ownerReferences": [JOB_OWNER]}, "spec": PINNED}
    assert untrusted(job_pod, owned_pods_only=True) == []
    assert untrusted(bare) == []  # a CNI that polices standalone pods: no reason to refuse them


NFS = {"name": "data", "nfs": {"server": "10.30.0.20", "path": "/export/home"}}


@pytest.mark.parametrize(
    "volume",
    [
        NFS,
        {"name": "h", "hostPath": {"path": "/"}},
        {"name": "i", "iscsi": {"targetPortal": "10.0.0.1:3260", "iqn": "iqn.2001-04.com.example:x", "lun": 0}},
        {"name": "c", "cephfs": {"monitors": ["10.0.0.2:6789"], "path": "/"}},
        {"name": "r", "rbd": {"monitors": ["10.0.0.2:6789"], "image": "x"}},
        {"name": "g", "glusterfs": {"endpoints": "gfs", "path": "vol"}},
        {"name": "f", "flexVolume": {"driver": "example/nfs"}},
        {"name": "git", "gitRepo": {"repository": "https://example.com/x.git"}},
    ],
)
def test_tenant_pods_may_not_mount_network_or_host_volumes_inline(volume: dict[str, Any]) -> None:
    pod = {"spec": {"containers": [{"name": "a"}], "volumes": [{"name": "ok", "emptyDir": {}}, volume]}}
    found = refused(VOLUME_VALIDATIONS, pod)
    assert len(found) == 1 and "restricted" in found[0], found


def test_tenant_pods_keep_the_volume_types_of_pod_security_restricted() -> None:
    volumes = [
        {"name": "claim", "persistentVolumeClaim": {"claimName": "home"}},
        {"name": "cm", "configMap": {"name": "c"}},
        {"name": "s", "secret": {"secretName": "s"}},
        {"name": "shm", "emptyDir": {"medium": "Memory"}},
        {"name": "p", "projected": {"sources": []}},
        {"name": "d", "downwardAPI": {"items": []}},
        {"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}},
        {"name": "x", "csi": {"driver": "nfs.csi.k8s.io", "volumeAttributes": {"server": "s", "share": "/"}}},
    ]
    assert refused(VOLUME_VALIDATIONS, {"spec": {"containers": [{"name": "a"}], "volumes": volumes}}) == []
    assert refused(VOLUME_VALIDATIONS, {"spec": {"containers": [{"name": "a"}]}}) == []


def test_untrusted_pods_may_not_mount_inline_csi_volumes() -> None:
    inline = {"name": "x", "csi": {"driver": "nfs.csi.k8s.io", "volumeAttributes": {"server": "s", "share": "/"}}}
    claim = {"name": "claim", "persistentVolumeClaim": {"claimName": "scratch"}}
    found = untrusted({"spec": {**PINNED, "volumes": [claim, inline]}})
    assert len(found) == 1 and "inline CSI" in found[0], found
    assert untrusted({"spec": {**PINNED, "volumes": [claim]}}) == []


# -- day 2: a rule that matches UPDATE refuses only what the update introduces --------------------------------


def as_synthesized(
    validations: list[dict[str, str]], variables: list[dict[str, str]] | None = None
) -> tuple[list[dict[str, str]], list[dict[str, str]] | None]:
    """The validations and variables as pod_admission_policy writes them into the policy."""
    spec = policy_spec(validations, variables or ())
    return spec["validations"], spec.get("variables")


def updated(pod: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    """`pod` after a controller's metadata-only update (a label, a finalizer, ownerReferences)."""
    new = copy.deepcopy(pod)
    new.setdefault("metadata", {}).update(metadata)
    return new


def test_a_bare_pod_admitted_before_the_owner_rule_survives_a_label_change_but_a_new_one_is_refused() -> None:
    """An EKS estate gains the owner rule on `up`; a bare pod already running keeps taking controller updates."""
    rules, _ = as_synthesized(untrusted_validations(Tenant(name="agents", trust="untrusted"), None, True))
    bare = {"metadata": {"name": "shell"}, "spec": PINNED}
    relabelled = updated(bare, labels={"team": "x"}, finalizers=["example.com/audit"])
    assert refused(rules, relabelled, old=bare) == []
    found = refused(rules, bare)
    assert len(found) == 1 and "created by a controller" in found[0], found


def test_orphaning_an_owned_pod_is_still_refused() -> None:
    # The update is what makes the pod standalone: the old object kept the rule.
    rules, _ = as_synthesized(untrusted_validations(Tenant(name="agents", trust="untrusted"), None, True))
    owned = {"metadata": {"name": "train-0", "ownerReferences": [JOB_OWNER]}, "spec": PINNED}
    found = refused(rules, updated(owned, ownerReferences=[]), old=owned)
    assert len(found) == 1 and "created by a controller" in found[0], found


def test_kueue_ungating_a_pod_without_its_node_selector_is_refused_and_with_it_admitted() -> None:
    rules, _ = as_synthesized(untrusted_validations(Tenant(name="agents", trust="untrusted"), None))
    gated = {"spec": {"schedulingGates": [{"name": "kueue.x-k8s.io/admission"}], "containers": [{"name": "a"}]}}
    assert refused(rules, {"spec": PINNED}, old=gated) == []
    assert len(refused(rules, {"spec": {"containers": [{"name": "a"}]}}, old=gated)) == 1


def test_an_rdma_pod_from_before_the_policy_keeps_its_updates_but_a_privileged_debug_container_is_refused() -> None:
    """The old side spells the container variables out on oldObject: an ephemeral container (an UPDATE of
    pods/ephemeralcontainers) that breaks baseline is new, so it is refused."""
    variables, validations = rdma_pod_policy()
    rules, synthesized_variables = as_synthesized(validations, variables)
    legacy = changed(["spec", "containers", 0, "securityContext", "capabilities", "add"], ["IPC_LOCK", "SYS_ADMIN"])
    assert refused(rules, updated(legacy, labels={"done": "true"}), synthesized_variables, old=legacy) == []
    assert len(refused(rules, legacy, synthesized_variables)) == 1  # the same pod, created today
    debug = copy.deepcopy(RDMA_POD)
    debug["spec"]["ephemeralContainers"] = [
        {"name": "dbg", "image": "busybox", "securityContext": {"privileged": True}}
    ]
    found = refused(rules, debug, synthesized_variables, old=RDMA_POD)
    assert len(found) == 1 and "privileged" in found[0], found


def test_a_toleration_added_by_an_update_is_judged_and_an_old_one_is_not() -> None:
    rules, _ = as_synthesized(TOLERATION_VALIDATIONS)
    namespace = {"metadata": {"name": "research", "labels": {"tenant": "research"}}}
    wildcard = {"spec": {"containers": [{"name": "a"}], "tolerations": [{"operator": "Exists"}]}}
    assert refused(rules, updated(wildcard, finalizers=["x"]), namespace=namespace, old=wildcard) == []
    compliant = {"spec": {"containers": [{"name": "a"}]}}
    assert len(refused(rules, wildcard, namespace=namespace, old=compliant)) == 1
    assert len(refused(rules, wildcard, namespace=namespace)) == 1


def test_an_update_may_not_add_a_quarantine_toleration_to_a_running_pod() -> None:
    """Pod updates may add tolerations (kubernetes.io/docs/concepts/workloads/pods/#pod-update-and-replacement)."""
    rules, _ = as_synthesized(TOLERATION_VALIDATIONS)
    namespace = {"metadata": {"name": "research", "labels": {"tenant": "research"}}}
    running = {"spec": {"containers": [{"name": "a"}], "tolerations": [GPU_TAINT.toleration()]}}
    tolerant = copy.deepcopy(running)
    tolerant["spec"]["tolerations"].append({"key": QUARANTINE_KEY, "operator": "Exists"})
    assert len(refused(rules, tolerant, namespace=namespace, old=running)) == 1


def test_an_update_of_a_pod_the_scheduler_bound_is_admitted() -> None:
    """The scheduler binds through pods/binding, which the policy does not match; later updates of the bound pod
    (a label, a finalizer, an image) carry spec.nodeName and pass."""
    rules, _ = as_synthesized(TOLERATION_VALIDATIONS)
    namespace = {"metadata": {"name": "research", "labels": {"tenant": "research"}}}
    bound = {"spec": {"containers": [{"name": "a"}], "nodeName": "ip-10-0-1-7.ec2.internal"}}
    assert refused(rules, updated(bound, labels={"done": "true"}), namespace=namespace, old=bound) == []
    assert len(refused(rules, bound, namespace=namespace)) == 1
