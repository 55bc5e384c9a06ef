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
from gpufleet.verify.runner import run_site
from model import dra
from model.load import parse_estate
from tests.aws.ultraserver import gb200_config
from tests.baremetal.helpers import nvl72, onprem_spec
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
