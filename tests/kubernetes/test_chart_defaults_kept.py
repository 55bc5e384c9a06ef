"""Chart behaviour gpufleet must keep when it sets values, checked against the chart sources at the pinned tags."""

from __future__ import annotations

import yaml

from gpufleet.engine.plan import HELM_RELEASE as HELM
from gpufleet.engine.plan import Plan
from model import queues, versions
from tests.charts import chart_dir


def test_kueue_configuration_keeps_the_charts_reconciler_concurrency_and_client_limits(
    example_plans: dict[str, Plan],
) -> None:
    """gpufleet replaces managerConfig.controllerManagerConfigYaml whole; the chart default's
    controller.groupKindConcurrency (without it each reconciler runs one at a time) and clientConnection must
    survive (kubernetes-sigs/kueue v0.19.2 charts/kueue/values.yaml)."""
    values = yaml.safe_load((chart_dir(versions.KUEUE) / "values.yaml").read_text())
    default = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    releases = [r for plan in example_plans.values() for r in plan.find(HELM) if r.inputs["chart"].endswith("/kueue")]
    assert len(releases) == 6  # aws-train, aws-train-west, onprem, both hybrid sites and the hybrid estate's manager
    for r in releases:
        ours = yaml.safe_load(r.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
        assert ours["controller"] == default["controller"], r.name
        assert ours["clientConnection"] == default["clientConnection"], r.name
        assert ours["apiVersion"] == default["apiVersion"], r.name
    assert queues.controller_config()["controller"]["groupKindConcurrency"]["Workload.kueue.x-k8s.io"] == 10


def test_gpu_operator_upgrades_its_crds_through_the_charts_hook(example_plans: dict[str, Plan]) -> None:
    """Helm leaves crds/ alone on upgrade; the chart's pre-upgrade hook applies the new CRDs when
    operator.upgradeCRD is set, which "requires --disable-openapi-validation" (NVIDIA/gpu-operator v26.7.0
    deployments/gpu-operator/values.yaml and templates/upgrade_crd.yaml)."""
    folder = chart_dir(versions.GPU_OPERATOR)
    hook = (folder / "templates" / "upgrade_crd.yaml").read_text()
    assert hook.startswith("{{- if .Values.operator.upgradeCRD }}") and '"helm.sh/hook": pre-upgrade' in hook
    assert (
        "# upgrade CRD on chart upgrade, requires --disable-openapi-validation flag"
        in (folder / "values.yaml").read_text()
    )
    releases = [r for plan in example_plans.values() for r in plan.find(HELM) if r.inputs["chart"] == "gpu-operator"]
    assert len(releases) == 5  # aws-train, aws-train-west, onprem and both hybrid sites
    for r in releases:
        assert r.inputs["values"]["operator"]["upgradeCRD"] is True, r.name
        assert r.inputs["disableOpenapiValidation"] is True, r.name
