"""The clusters a journey walks through: objects grouped by the provider that applies them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gpufleet.charts.cache import ChartCache
from gpufleet.charts.render import RenderedObject
from gpufleet.engine.synth import synth
from gpufleet.review.reality.checks import render
from gpufleet.review.reality.journeys.estate import MANAGER, clusters

ROOT = Path(__file__).resolve().parents[4]


def test_a_hybrid_estate_has_its_sites_and_the_manager_each_with_its_own_objects() -> None:
    plan = synth(ROOT, "hybrid")
    views = clusters(plan, render(plan, ChartCache()))
    assert set(views) == {"onprem", "cloud", MANAGER}
    assert views[MANAGER].site is None and views["onprem"].site == "onprem"
    # Kueue's CRDs come from its chart, rendered on every cluster that runs Kueue.
    for view in views.values():
        assert view.get("CustomResourceDefinition", "clusterqueues.kueue.x-k8s.io") is not None
    # MultiKueue objects live on the manager only; the GPU servers' labels on the on-prem cluster only.
    assert views[MANAGER].of("MultiKueueCluster") and not views["onprem"].of("MultiKueueCluster")
    assert views["onprem"].of("Node") and not views["cloud"].of("Node")
    # A chart's namespaced objects land in the release's namespace, as Helm applies them.
    kueue_deploy = [d for d in views["cloud"].of("Deployment", "apps") if "kueue" in d["metadata"]["name"]]
    assert kueue_deploy and all(d["metadata"]["namespace"] == "kueue-system" for d in kueue_deploy)
    assert "managerConfig" in views["cloud"].releases["kueue"]


def test_a_rendered_objects_scope_comes_from_its_crd(example_plans: dict, chart_cache: ChartCache) -> None:
    """Helm puts a namespaced object without a namespace into the release's namespace, never a cluster-scoped one;
    a custom kind's scope is its CRD's `spec.scope`, not a list kept by hand."""
    plan = example_plans["aws-train"]
    releases = render(plan, chart_cache)
    key, kueue = next((k, r) for k, r in releases.items() if r.chart.endswith("kueue"))

    def crd(kind: str, scope: str) -> RenderedObject:
        names = {"kind": kind, "plural": kind.lower() + "s"}
        return RenderedObject("crds/x.yaml", {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                              "metadata": {"name": f"{kind.lower()}s.example.com"},
                              "spec": {"group": "example.com", "scope": scope, "names": names}})  # fmt: skip

    def obj(kind: str) -> RenderedObject:
        return RenderedObject(
            "templates/x.yaml", {"apiVersion": "example.com/v1", "kind": kind, "metadata": {"name": "x"}}
        )

    extra = dataclasses.replace(kueue, crds=[*kueue.crds, crd("Widget", "Cluster"), crd("Gadget", "Namespaced")],
                                objects=[*kueue.objects, obj("Widget"), obj("Gadget")])  # fmt: skip
    use1 = clusters(plan, {**releases, key: extra})["use1"]
    (widget,), (gadget,) = use1.of("Widget"), use1.of("Gadget")
    assert "namespace" not in widget["metadata"] and gadget["metadata"]["namespace"] == kueue.namespace
    assert "namespace" not in use1.of("ClusterQueue")[0]["metadata"]
