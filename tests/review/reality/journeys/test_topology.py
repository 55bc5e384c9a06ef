"""Topology-aware scheduling on bare metal: every flavor of a site with a fabric Topology is topology-aware, so a
job asks for no topology and Kueue implies one (kubernetes-sigs/kueue at versions.KUEUE,
pkg/scheduler/flavorassigner/tas_flavorassigner.go isTASImplied; pkg/cache/scheduler/tas_flavor_snapshot.go
levelKeyWithImpliedFallback: unconstrained at the lowest level)."""

from __future__ import annotations

from collections.abc import Callable

from model.rdma import fabric_requests
from tests.review.reality.journeys.conftest import Estate
from tests.review.reality.journeys.test_walk import job


def test_an_rdma_gang_without_a_topology_annotation_runs_on_the_fabric_pool(estate: Callable[[str], Estate]) -> None:
    onprem = estate("onprem")
    limits = fabric_requests(onprem.spec, onprem.spec.site_of_pool("train"), onprem.spec.pool("train"))
    doc = job("research", "research", 2, limits)
    doc["spec"]["template"]["spec"]["nodeSelector"] = {"gpufleet.io/pool": "train"}
    (j,) = onprem.walk(doc)
    assert j.verdict == "runs", j.to_dict()
    assert j.placement is not None and j.placement.flavor == "train" and j.placement.nodes == 2


def test_a_job_off_the_fabric_runs_on_the_hosts_topology_flavor(estate: Callable[[str], Estate]) -> None:
    onprem = estate("onprem")
    doc = job("research", "research", 1, {"nvidia.com/mig-1g.10gb": 1})
    (j,) = onprem.walk(doc)
    assert j.verdict == "runs", j.to_dict()
    flavor = onprem.clusters["dc1"].get("ResourceFlavor", "dev")
    assert flavor is not None and flavor["spec"]["topologyName"] == "gpufleet-hosts"


def test_canonical_journeys_ask_for_no_topology(estate: Callable[[str], Estate]) -> None:
    from gpufleet.review.reality.journeys.canonical import canonical

    for c in canonical(estate("onprem").spec):
        template = c.manifest["spec"].get("template") or {}
        assert not any(k.startswith("kueue.x-k8s.io/podset-") for k in (template.get("metadata") or {}).get(
            "annotations", {})), c.title  # fmt: skip
