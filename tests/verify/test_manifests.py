"""Every object a verify run would create for each example stack is a valid Kubernetes object (the Kubernetes
OpenAPI of the examples' cluster version, through kubernetes-validate, strict: no unknown fields), and carries
what the estate says the pods need."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest

from components.kubernetes.admission import TOLERATION_VALIDATIONS, VOLUME_VALIDATIONS, untrusted_validations
from gpufleet.verify import cluster_checks, manifests, suite, tenancy_probes
from gpufleet.verify.kube import ClusterApi, Context
from model.cni import skips_standalone_pods
from model.load import read_stack
from model.spec import AwsSite
from tests.conftest import EXAMPLES, ROOT
from tests.kubernetes.tenancy.test_admission_cel import refused

RUN = manifests.Run("abc123")


def kubernetes_version(stack: str) -> str:
    spec = read_stack(ROOT, stack).estate()
    aws = [s.cluster.version for s in spec.sites if isinstance(s, AwsSite)]
    return f"{aws[0] if aws else '1.34'}.0"


def objects(stack: str) -> list[dict[str, Any]]:
    """The objects of every check of the stack, built the way the executors build them."""
    spec = read_stack(ROOT, stack).estate()
    s = suite.derive(spec, stack, suite.Options(degraded=True))
    out: list[dict[str, Any]] = [manifests.namespace(RUN)]
    for check in s.checks:
        site = spec.site(check.site)
        ctx = Context(s, site, ClusterApi(None, None), RUN)
        pool = spec.pool(check.pool) if check.pool else None
        if check.kind is suite.Kind.nccl_multi and pool is not None:
            ns = check.namespace or "research"
            out += [manifests.ssh_secret(RUN, "nccl-1", "PRIVATE", "ssh-ed25519 AAAA test", ns),
                    manifests.headless_service(RUN, "nccl-1", ns),
                    manifests.nccl_multi_node_job(RUN, "nccl-1", check.id, spec, site, pool, 2, ns)]  # fmt: skip
        elif check.kind is suite.Kind.nccl_single and pool is not None:
            ns = check.namespace or "research"
            out.append(manifests.nccl_single_node_job(RUN, "nvlink-1", check.id, spec, site, pool, ns))
        elif check.kind is suite.Kind.dcgm_diag and pool is not None:
            out.append(manifests.dcgm_diag_job(RUN, "dcgm-1", check.id, spec, site, pool, "node-a", 2))
        elif check.kind is suite.Kind.fio and pool is not None:
            out += [manifests.claim(RUN, "data-1", check.tier or ""),
                    manifests.fio_job(RUN, "fio-1", check.id, pool, "node-a", "data-1"),
                    manifests.fio_job(RUN, "fio-2", check.id, pool, "node-a", check.tier or "", "research")]  # fmt: skip
        elif check.kind is suite.Kind.drain:
            out.append(cluster_checks.gang_job(ctx, "gang-1", check))
        elif check.tenant:
            out.append(tenancy_probes.probe_job(RUN, "probe-1", check.id, check.tenant, "true", queue=check.queue))
            if check.kind is suite.Kind.gpu_quota:
                tenant = spec.tenant(check.tenant)
                resource, asked = tenancy_probes.over_quota_request(ctx, tenant)
                resources = {"cpu": "100m", "memory": "64Mi", resource: str(asked)}
                out.append(tenancy_probes.quota_probe_pod(ctx, check, tenant, "quota-1", resources))
    return out


@pytest.mark.parametrize("stack", EXAMPLES)
def test_every_verify_object_is_valid_against_the_kubernetes_openapi(stack: str) -> None:
    found = objects(stack)
    kinds = {o["kind"] for o in found}
    assert {"Namespace", "Job"} <= kinds
    for obj in found:
        kubernetes_validate.validate(obj, kubernetes_version(stack), strict=True)


def test_validation_would_catch_a_misspelled_field() -> None:
    bad = manifests.namespace(RUN)
    bad["metadata"]["lables"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, "1.34.0", strict=True)


def _job(stack: str, kind: suite.Kind) -> dict[str, Any]:
    prefix = {suite.Kind.nccl_multi: "nccl", suite.Kind.dcgm_diag: "dcgm"}[kind]
    return next(o for o in objects(stack) if o["kind"] == "Job" and o["metadata"]["name"].startswith(prefix))


def test_efa_job_requests_every_efa_interface_of_the_instance_and_all_gpus() -> None:
    job = _job("aws-train", suite.Kind.nccl_multi)
    pod = job["spec"]["template"]["spec"]
    limits = pod["containers"][0]["resources"]["limits"]
    assert limits == {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}  # p5.48xlarge: 8 GPUs, 32 EFA (catalog)
    assert job["spec"]["completionMode"] == "Indexed" and job["spec"]["completions"] == 2
    assert pod["subdomain"] == "nccl-1" and pod["nodeSelector"] == {"gpufleet.io/pool": "h100"}
    assert "tolerations" not in pod  # as a user writes it: Kueue's flavor adds the pool's tolerations
    assert job["metadata"]["namespace"] == "research" and pod["serviceAccountName"] == "default"
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "research"
    assert "IPC_LOCK" in pod["containers"][0]["securityContext"]["capabilities"]["add"]
    assert "@sha256:" in pod["containers"][0]["image"]  # the EFA nccl-tests image is pinned by digest
    script = pod["containers"][0]["command"][2]
    assert "-np 16 --npernode 8" in script and "-e 17179869184" in script  # 2 x 8 GPUs, up to 16 GiB


def test_infiniband_job_requests_the_fabric_rdma_resource_and_its_hcas() -> None:
    pod = _job("onprem", suite.Kind.nccl_multi)["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert c["resources"]["limits"] == {"nvidia.com/gpu": "8", "rdma/shared_ib": "1"}
    assert {"name": "NCCL_IB_HCA", "value": "=mlx5_0,mlx5_1,mlx5_2,mlx5_3"} in c["env"]


def test_dcgm_job_pins_one_node_and_asks_for_its_level() -> None:
    pod = _job("onprem", suite.Kind.dcgm_diag)["spec"]["template"]["spec"]
    assert pod["nodeSelector"]["kubernetes.io/hostname"] == "node-a"
    assert "dcgmi diag -r 2 -j" in pod["containers"][0]["command"][2]
    # a quarantined node can be probed again before its return
    assert {"key": "gpufleet.io/quarantine", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]


def test_tenant_namespace_pods_meet_pod_security_restricted() -> None:
    """Every tenant-namespace pod but the fabric gang's (baseline plus IPC_LOCK in an RDMA namespace: walked
    through the estate's own admission in test_as_tenant.py)."""
    for obj in objects("aws-train"):
        if obj["metadata"].get("namespace", RUN.namespace) == RUN.namespace or obj["kind"] not in ("Job", "Pod"):
            continue
        if obj["metadata"]["name"].startswith("nccl-"):
            continue
        spec = obj["spec"]["template"]["spec"] if obj["kind"] == "Job" else obj["spec"]
        sc = spec["containers"][0]["securityContext"]
        assert sc["runAsNonRoot"] and sc["capabilities"] == {"drop": ["ALL"]}
        assert sc["seccompProfile"] == {"type": "RuntimeDefault"} and sc["allowPrivilegeEscalation"] is False


def test_quota_probe_pod_is_refused_by_nothing_but_the_quota() -> None:
    """The untrusted tenant's admission policy refuses a standalone pod on EKS and an unpinned one anywhere; the
    probe's dry-run pod must pass it, or the probe would read that refusal instead of the quota's."""
    spec = read_stack(ROOT, "aws-train").estate()
    s = suite.derive(spec, "aws-train", suite.Options())
    checks = [c for c in s.checks if c.kind is suite.Kind.gpu_quota]
    assert {c.tenant for c in checks} >= {"agents", "research"}
    for check in checks:
        assert check.tenant
        site, tenant = spec.site(check.site), spec.tenant(check.tenant)
        ctx = Context(s, site, ClusterApi(None, None), RUN)
        pod = tenancy_probes.quota_probe_pod(ctx, check, tenant, "quota-1", {"nvidia.com/gpu": "9"})
        rules = [*VOLUME_VALIDATIONS, *TOLERATION_VALIDATIONS]
        if tenant.trust == "untrusted":
            rules += untrusted_validations(tenant, site.kubernetes.sandbox_runtime_class, skips_standalone_pods(site))
        namespace = {"metadata": {"name": tenant.name, "labels": {"tenant": tenant.name}}}
        assert refused(rules, pod, namespace=namespace) == [], check.id


def test_an_eks_nccl_probe_asks_for_the_efa_flavors_topology_and_an_l40s_one_for_none() -> None:
    # aws-train's h100 flavor is topology-aware beside flavors that are not: Kueue refuses a pod set without a
    # topology request there (kueue v0.19.2 pkg/scheduler/flavorassigner/tas_flavorassigner.go).
    spec = read_stack(ROOT, "aws-train").estate()
    site = spec.sites[0]
    multi = manifests.nccl_multi_node_job(RUN, "nccl-1", "c", spec, site, spec.pool("h100"), 2, "research")
    single = manifests.nccl_single_node_job(RUN, "nccl-2", "c", spec, site, spec.pool("h100"), "research")
    want = {"kueue.x-k8s.io/podset-preferred-topology": "topology.k8s.aws/network-node-layer-3"}
    for job in (multi, single):
        assert job["spec"]["template"]["metadata"]["annotations"] == want
    l40s = manifests.nccl_single_node_job(RUN, "nccl-3", "c", spec, site, spec.pool("l40s"), "product")
    assert "annotations" not in l40s["spec"]["template"]["metadata"]
