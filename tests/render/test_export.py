"""`gpufleet export`: one folder per cluster, one file per Kubernetes object and Helm release, nothing lost."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpufleet.charts.operator_crds import CONFIG_FILE, AppliedFile, applied_objects
from gpufleet.engine.plan import Plan
from gpufleet.engine.synth import synth
from gpufleet.render.export import cluster_of, export
from model import versions
from model.load import parse_estate
from tests.charts import CACHE, crd
from tests.conftest import ROOT, example_estate


@pytest.fixture(scope="module")
def hybrid() -> Plan:
    return synth(ROOT, "hybrid")


def test_hybrid_export_writes_every_object_and_release_once(hybrid: Plan, tmp_path: Path) -> None:
    """MultiKueue puts objects of the same kind and name on the manager's and the worker's cluster (the
    MultiKueueCluster / AdmissionCheck / ClusterQueue pairs): both copies must be written."""
    written = export(hybrid, tmp_path)
    applied = [o for r in hybrid.find(CONFIG_FILE) for o in applied_objects(r.inputs["file"])]
    expected = len(hybrid.kubernetes_objects()) + len(hybrid.helm_releases()) + len(applied)
    assert applied and len(written) == len(set(written)) == expected
    assert sorted(written) == sorted(tmp_path.rglob("*.yaml"))


def test_export_writes_the_crd_the_autoscaler_config_file_applies_from_its_url(hybrid: Plan, tmp_path: Path) -> None:
    """`up` applies the ProvisioningRequest CRD from the autoscaler repository at the pinned tag (a ConfigFile,
    components/aws/autoscaler.py): the export holds it in the burst site's folder, as the upstream file has it
    (kubernetes/autoscaler tag cluster-autoscaler-<app>, the copy in the test chart cache's operator-crds/)."""
    (config_file,) = hybrid.find(CONFIG_FILE)
    assert config_file.inputs["file"] == versions.PROVISIONING_REQUEST_CRD_URL
    export(hybrid, tmp_path)
    path = tmp_path / "cloud" / "customresourcedefinition-cluster-provisioningrequests.autoscaling.x-k8s.io.yaml"
    upstream = (
        CACHE
        / "operator-crds"
        / f"autoscaling.x-k8s.io_provisioningrequests-{AppliedFile(versions.PROVISIONING_REQUEST_CRD_URL).tag}.yaml"
    )
    if not upstream.exists():
        pytest.skip(f"{upstream.name} is not in the chart cache {CACHE}")
    assert yaml.safe_load(path.read_text()) == crd(upstream)


MANAGER = parse_estate(example_estate("hybrid"), "hybrid").burst.manager.name  # type: ignore[union-attr]


def test_each_object_lands_in_the_folder_of_the_cluster_that_applies_it(hybrid: Plan, tmp_path: Path) -> None:
    """Cluster = the one whose Kubernetes provider registers the object (a site, or the MultiKueue manager); the cloud worker's tenant namespaces,
    built by the MultiKueue wiring outside the cloud site's tree, belong to `cloud/`, not `estate/`."""
    export(hybrid, tmp_path)
    assert {p.name for p in tmp_path.iterdir()} == {"onprem", "cloud", MANAGER}
    for r in hybrid.kubernetes_objects():
        provider = hybrid.get(r.provider) if r.provider else None
        assert provider is not None and provider.name == f"{cluster_of(hybrid, r)}-k8s", r.key
        meta = r.inputs["metadata"]
        matches = [
            p
            for p in (tmp_path / cluster_of(hybrid, r)).glob("*.yaml")
            if (doc := yaml.safe_load(p.read_text()))["kind"] == r.inputs["kind"]
            and doc["metadata"].get("name") == meta.get("name")
            and doc["metadata"].get("namespace") == meta.get("namespace")
            and doc["apiVersion"] == r.inputs["apiVersion"]
        ]
        assert len(matches) == 1, r.key
    tenant_ns = [
        r
        for r in hybrid.kubernetes_objects()
        if r.inputs["kind"] == "Namespace"
        and "gpufleet:hybrid:MultiKueue$" in r.key
        and cluster_of(hybrid, r) == "cloud"
    ]
    assert tenant_ns, "the worker-side tenant namespaces are exported under cloud/"
