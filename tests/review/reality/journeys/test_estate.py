"""The clusters a journey walks through: objects grouped by the provider that applies them."""

from __future__ import annotations

from pathlib import Path

from gpufleet.charts.cache import ChartCache
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
