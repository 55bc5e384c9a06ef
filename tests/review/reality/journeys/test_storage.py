"""Storage: claims bind, their access modes allow the gang, CSI node plugins run there, CSI handles are unique."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from typing import Any

from gpufleet.review.reality.journeys import placement, storage
from gpufleet.review.reality.journeys.core import ClusterView
from tests.review.reality.journeys.conftest import Estate as WholeEstate
from tests.review.reality.journeys.walks import Estate, container, walk

GPU = {"nvidia.com/gpu": 8}


def _claims(*names: str) -> list[dict[str, Any]]:
    return [{"name": n.replace("-", ""), "persistentVolumeClaim": {"claimName": n}} for n in names]


def _with(estate: Estate, cluster: str, view: ClusterView) -> Estate:
    return Estate(estate.spec, {**estate.clusters, cluster: view})


def _lustre_view(estate: Estate, same_handle: bool) -> ClusterView:
    """aws-train's cluster with research's two Lustre volumes sharing one volumeHandle or not."""
    view = estate.clusters["use1"]
    objects = [copy.deepcopy(o) for o in view.objects]
    pvs = {
        (o["spec"].get("claimRef") or {}).get("name"): o
        for o in objects
        if o.get("kind") == "PersistentVolume" and (o["spec"].get("claimRef") or {}).get("namespace") == "research"
    }
    first, second = pvs["lustre"]["spec"]["csi"], pvs["lustre-s3"]["spec"]["csi"]
    second["volumeHandle"] = first["volumeHandle"] if same_handle else first["volumeHandle"] + "-s3"
    return dataclasses.replace(view, objects=tuple(objects))


def _mount(estate: Estate, volumes: list[dict[str, Any]], pods: int = 1, ns: str = "research") -> storage.Stage:
    w = walk(estate, "use1", ns, pods, {"containers": [container(GPU)], "volumes": volumes}, flavor="h100")
    assert placement.check(w).ok
    return storage.check(w)


def test_two_lustre_claims_with_one_volume_handle_are_blocked(estates: dict[str, Estate]) -> None:
    estate = _with(estates["aws-train"], "use1", _lustre_view(estates["aws-train"], same_handle=True))
    stage = _mount(estate, _claims("lustre-s3", "lustre"))
    assert not stage.ok
    assert "kubernetes/kubernetes#91556" in stage.detail and stage.unblock.startswith("give every PersistentVolume")
    assert any(c.where == "kubernetes/kubernetes#91556" for c in stage.cites)


def test_two_lustre_claims_with_their_own_handles_mount(estates: dict[str, Estate]) -> None:
    estate = _with(estates["aws-train"], "use1", _lustre_view(estates["aws-train"], same_handle=False))
    stage = _mount(estate, _claims("lustre-s3", "lustre"), pods=2)
    assert stage.ok, stage.detail
    assert "pre-bound, binds when the claim is created to PersistentVolume/research.lustre" in stage.detail


def test_the_example_estate_mounts_both_lustre_claims_in_one_pod(estates: dict[str, Estate]) -> None:
    # Issue 28, 4.2: datasets from `lustre-s3` and checkpoints to `lustre`, each volume with its own handle.
    stage = _mount(estates["aws-train"], _claims("lustre-s3", "lustre"), pods=2)
    assert stage.ok, stage.detail
    assert (
        "to PersistentVolume/research.lustre-s3" in stage.detail
        and "to PersistentVolume/research.lustre" in stage.detail
    )


def test_a_claim_that_does_not_exist_blocks(estates: dict[str, Estate]) -> None:
    stage = _mount(estates["aws-train"], _claims("datasets"))
    assert not stage.ok and stage.blocker == "PersistentVolumeClaim/research/datasets"


def test_a_read_write_once_claim_blocks_a_gang_across_nodes(estates: dict[str, Estate]) -> None:
    view = estates["aws-train"].clusters["use1"]
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "scratch", "namespace": "research"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "home",
            "resources": {"requests": {"storage": "1Ti"}},
        },
    }
    estate = _with(estates["aws-train"], "use1", dataclasses.replace(view, objects=(*view.objects, claim)))
    assert _mount(estate, _claims("scratch"), pods=1).ok
    stage = _mount(estate, _claims("scratch"), pods=2)
    assert not stage.ok and "ReadWriteOnce" in stage.detail and "2 nodes" in stage.detail


def test_a_csi_volume_blocks_where_its_node_plugin_does_not_run(estates: dict[str, Estate]) -> None:
    view = estates["aws-train"].clusters["use1"]
    objects = [copy.deepcopy(o) for o in view.objects]
    fsx_node = next(o for o in objects if o.get("kind") == "DaemonSet" and o["metadata"]["name"] == "fsx-csi-node")
    fsx_node["spec"]["template"]["spec"]["tolerations"] = []  # no longer tolerates the GPU taint
    estate = _with(estates["aws-train"], "use1", dataclasses.replace(view, objects=tuple(objects)))
    stage = _mount(estate, _claims("lustre"))
    assert not stage.ok and stage.blocker == "DaemonSet/kube-system/fsx-csi-node"


def test_an_inline_nfs_volume_mounts_and_is_reported_as_an_estate_defect(estates: dict[str, Estate]) -> None:
    # Issue 28, 4.7: the cluster mounts the whole export as written, past the tenant's subdirectory.
    estate = estates["onprem"]
    nfs = [{"name": "home", "nfs": {"server": "10.10.0.20", "path": "/export/home"}}]
    w = walk(estate, "dc1", "research", 1, {"containers": [container(GPU)], "volumes": nfs}, flavor="train")
    assert placement.check(w).ok
    stage = storage.check(w)
    assert stage.ok
    assert (
        "estate defect: inline nfs volume home" in stage.detail and "bypasses the tenant's subdirectory" in stage.detail
    )
    assert any("inline nfs" in n for n in w.notes)


def test_a_statefulsets_claim_templates_need_a_storage_class_of_the_cluster(estates: dict[str, Estate]) -> None:
    estate = estates["onprem"]

    def stage(storage_class: str) -> storage.Stage:
        template = {"metadata": {"name": "scratch"}, "spec": {"storageClassName": storage_class}}
        spec = {"containers": [container(GPU, volumeMounts=[{"name": "scratch", "mountPath": "/scratch"}])]}
        w = walk(
            estate,
            "dc1",
            "research",
            2,
            spec,
            "train",
            "StatefulSet",
            manifest_spec={"volumeClaimTemplates": [template]},
        )
        assert placement.check(w).ok
        return storage.check(w)

    assert stage("nvme").ok  # the node-local class binds each replica's claim where it is scheduled
    missing = stage("fast-ssd")
    assert not missing.ok and missing.blocker == "StorageClass/fast-ssd"


def test_a_job_reading_datasets_and_writing_checkpoints_on_lustre_runs(estate: Callable[[str], WholeEstate]) -> None:
    # Issue 28, 4.2: blocked at storage while both volumes shared the file system's id as their handle.
    (j,) = estate("aws-train").walk("lustre-two-claims.yaml")
    assert j.verdict == "runs", j.blocked_at
    storage_stage = next(s for s in j.stages if s.name == "storage")
    assert "datasets: pre-bound" in storage_stage.detail and "checkpoints: pre-bound" in storage_stage.detail
