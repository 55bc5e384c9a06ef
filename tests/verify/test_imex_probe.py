"""verify's multi-node NCCL probe on a rack-scale pool (a GB200 UltraServer): the tenant's gang reaches the other
nodes' GPUs over multi-node NVLink only through an IMEX channel, so the probe makes a ComputeDomain in the tenant's
namespace first, each pod claims its channel (NVIDIA/k8s-dra-driver-gpu README at versions.NVIDIA_DRA_DRIVER; EKS
user guide ml-eks-nvidia-ultraserver), and cleanup deletes it with the rest."""

from __future__ import annotations

import dataclasses
from typing import Any

from gpufleet.verify import manifests
from gpufleet.verify import suite as suites
from gpufleet.verify.kube import COMPUTE_DOMAIN, Context
from gpufleet.verify.manifests import Run
from gpufleet.verify.results import Status
from gpufleet.verify.runner import run_site
from model import conventions, dra, nodes
from model.load import parse_estate
from tests.aws.ultraserver import gb200_config
from tests.baremetal.helpers import SAMPLE, nvl72, onprem_spec, server_of
from tests.verify.fake_kube import FakeCluster, apis
from tests.verify.test_runner import Clock


def _spec() -> Any:
    return parse_estate(gb200_config()["gpufleet:estate"], "aws-train")


def _gb200_check(spec: Any) -> suites.Check:
    suite = suites.derive(spec, "aws-train", suites.Options(categories=[suites.Category.fabric]))
    return next(c for c in suite.checks if c.kind is suites.Kind.nccl_multi and c.pool == "gb200")


def test_the_rack_scale_probes_pods_claim_the_runs_compute_domain_channel() -> None:
    spec = _spec()
    check = _gb200_check(spec)
    site, pool = spec.site(check.site), spec.pool("gb200")
    assert check.namespace is not None
    job = manifests.nccl_multi_node_job(Run("r"), "nccl-1", check.id, spec, site, pool, 2, check.namespace)
    pod = job["spec"]["template"]["spec"]
    domain = manifests.compute_domain(Run("r"), "nccl-1", check.namespace)
    assert domain["kind"] == "ComputeDomain" and domain["apiVersion"] == dra.COMPUTE_DOMAIN_API
    assert domain["metadata"]["labels"][manifests.RUN_LABEL] == "r"
    template = domain["spec"]["channel"]["resourceClaimTemplate"]["name"]
    assert pod["resourceClaims"] == [{"name": "imex", "resourceClaimTemplateName": template}]
    assert pod["containers"][0]["resources"]["claims"] == [{"name": "imex"}]
    # an HGX pool's probe claims nothing
    h100 = manifests.nccl_multi_node_job(Run("r"), "n", "c", spec, site, spec.pool("h100"), 2, "research")
    assert "resourceClaims" not in h100["spec"]["template"]["spec"]


def test_the_compute_domain_is_made_before_the_gang_and_deleted_after() -> None:
    spec = _spec()
    check = _gb200_check(spec)
    cluster = FakeCluster(pool_nodes={"gb200": ["u1", "u2"]})
    clock = Clock()
    derived = suites.derive(spec, "aws-train", suites.Options(categories=[suites.Category.fabric]))
    suite = dataclasses.replace(derived, checks=[check])
    ctx = Context(suite, spec.site(check.site), apis(cluster), Run("r1"), clock=clock, sleep=clock.sleep,
                  poll_seconds=10)  # fmt: skip
    run_site(ctx)
    calls = [name for name, _ in cluster.calls]
    created = calls.index("create_namespaced_custom_object")
    assert created < calls.index("create_namespaced_job")
    (_, args) = next(c for c in cluster.calls if c[0] == "create_namespaced_custom_object")
    group, version, plural = COMPUTE_DOMAIN
    assert args == (group, version, check.namespace, plural, "nccl-1")
    assert (group, version, plural) == ("resource.nvidia.com", "v1beta1", "computedomains")
    assert "delete_namespaced_custom_object" in calls and cluster.custom_objects == {}


def test_an_owned_nvl72_pools_probe_claims_a_channel_too() -> None:
    # The same ComputeDomain path on bare metal: the onprem example's train pool as GB200 NVL72 trays.
    spec = onprem_spec(nvl72)
    suite = suites.derive(spec, "onprem", suites.Options(categories=[suites.Category.fabric]))
    check = next(c for c in suite.checks if c.kind is suites.Kind.nccl_multi and c.pool == "train")
    assert check.namespace is not None
    site, pool = spec.site(check.site), spec.pool("train")
    job = manifests.nccl_multi_node_job(Run("r"), "nccl-1", check.id, spec, site, pool, 2, check.namespace)
    assert job["spec"]["template"]["spec"]["resourceClaims"][0]["name"] == "imex"


def _nvlink_check() -> tuple[Any, suites.Check]:
    spec = onprem_spec(nvl72)
    suite = suites.derive(spec, "onprem", suites.Options(categories=[suites.Category.fabric]))
    (check,) = [c for c in suite.checks if c.kind is suites.Kind.nvlink_domains]
    return spec, check


def _run_nvlink(spec: Any, check: suites.Check, labels: dict[str, dict[str, str]]) -> Any:
    cluster = FakeCluster(pool_nodes={"train": sorted(labels)}, node_labels=labels)
    clock = Clock()
    suite = dataclasses.replace(suites.derive(spec, "onprem", suites.Options()), checks=[check])
    ctx = Context(suite, spec.site(check.site), apis(cluster), Run("r1"), clock=clock, sleep=clock.sleep,
                  poll_seconds=10)  # fmt: skip
    (result,) = run_site(ctx)[0]
    return result


def test_verify_compares_the_inventory_nvlink_domains_with_the_cliques_gfd_labels() -> None:
    # GFD labels nvidia.com/gpu.clique = <ClusterUUID>.<CliqueID>, and none where the GPUs are not on one clique
    # (NVIDIA/k8s-device-plugin internal/lm/imex.go at v0.20.0); the bootstrap labels the inventory's domain.
    spec, check = _nvlink_check()
    assert check.pool == "train" and check.mandatory
    _, _, server = server_of(spec, SAMPLE)
    assert nodes.server_topology_labels(server)[conventions.NVLINK_DOMAIN_LABEL] == "rack-a1-nvl"
    domain, clique = conventions.NVLINK_DOMAIN_LABEL, conventions.GPU_CLIQUE_LABEL
    one = {n: {domain: "rack-a1-nvl", clique: "9c6f.1"} for n in ("a", "b")}
    assert _run_nvlink(spec, check, one).status is Status.passed
    split = {**one, "b": {domain: "rack-a1-nvl", clique: "9c6f.2"}}
    failed = _run_nvlink(spec, check, split)
    assert failed.status is Status.failed and "domain rack-a1-nvl spans cliques 9c6f.1, 9c6f.2" in failed.detail
    unlabelled = {**one, "b": {domain: "rack-a1-nvl"}}
    failed = _run_nvlink(spec, check, unlabelled)
    assert failed.status is Status.failed and "b (domain rack-a1-nvl): no nvidia.com/gpu.clique" in failed.detail
    merged = {**one, "b": {domain: "rack-a2-nvl", clique: "9c6f.1"}}
    failed = _run_nvlink(spec, check, merged)
    assert failed.status is Status.failed and "clique 9c6f.1 holds domains rack-a1-nvl, rack-a2-nvl" in failed.detail


def test_pools_without_inventory_nvlink_domains_get_no_such_check() -> None:
    suite = suites.derive(onprem_spec(), "onprem", suites.Options(categories=[suites.Category.fabric]))
    assert not [c for c in suite.checks if c.kind is suites.Kind.nvlink_domains]
