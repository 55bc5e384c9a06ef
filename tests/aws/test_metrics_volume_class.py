"""The metrics stack on an EKS cluster gpufleet creates: such a cluster has no default StorageClass and no EBS CSI
driver, so gpufleet installs the driver's EKS add-on (its controller on EKS Pod Identity) and a gp3 class, and
Prometheus's claim names that class; an adopted cluster, or a class the stack names, gets neither."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpufleet.engine.plan import Plan
from gpufleet.engine.synth import synth
from model import versions
from model.conventions import EBS_GP3_CLASS
from model.load import ESTATE_KEY
from tests.conftest import example_config, write_project

ADDON = "aws:eks/addon:Addon"
STORAGE_CLASS = "kubernetes:storage.k8s.io/v1:StorageClass"


def _plan(tmp: Path, **monitoring: Any) -> Plan:
    config = example_config("aws-train")
    site = config[ESTATE_KEY]["sites"][0]
    site.setdefault("kubernetes", {})["monitoring"] = {"prometheus_operator": "install", **monitoring}
    return synth(write_project(tmp, config), "test")


def _claim_class(plan: Plan) -> str | None:
    (kps,) = [r for r in plan.helm_releases() if r.inputs["chart"] == versions.KUBE_PROMETHEUS_STACK.name]
    claim = kps.inputs["values"]["prometheus"]["prometheusSpec"]["storageSpec"]["volumeClaimTemplate"]["spec"]
    return claim.get("storageClassName")


def test_a_created_cluster_gets_the_ebs_csi_addon_and_prometheus_claims_its_gp3_class(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    (addon,) = [r for r in plan.find(ADDON) if r.inputs.get("addonName") == "aws-ebs-csi-driver"]
    (association,) = addon.inputs["podIdentityAssociations"]
    assert association["serviceAccount"] == "ebs-csi-controller-sa"
    (sc,) = [r for r in plan.find(STORAGE_CLASS) if r.inputs["metadata"]["name"] == EBS_GP3_CLASS]
    assert sc.inputs["provisioner"] == "ebs.csi.aws.com"
    assert sc.inputs["parameters"] == {"type": "gp3", "encrypted": "true"}
    assert sc.inputs["volumeBindingMode"] == "WaitForFirstConsumer"
    assert addon.key in sc.dependencies
    assert _claim_class(plan) == EBS_GP3_CLASS
    # the release waits for the class: a claim naming a class that does not exist yet stays Pending
    (kps,) = [r for r in plan.helm_releases() if r.inputs["chart"] == versions.KUBE_PROMETHEUS_STACK.name]
    assert sc.key in kps.dependencies


def test_a_class_the_stack_names_is_claimed_and_no_driver_is_added(tmp_path: Path) -> None:
    plan = _plan(tmp_path, storage_class="io2-fast")
    assert not [r for r in plan.find(ADDON) if r.inputs.get("addonName") == "aws-ebs-csi-driver"]
    assert not [r for r in plan.find(STORAGE_CLASS) if r.inputs["metadata"]["name"] == EBS_GP3_CLASS]
    assert _claim_class(plan) == "io2-fast"
