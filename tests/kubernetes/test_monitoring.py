"""Monitoring is one setting (kubernetes.monitoring): no chart value renders a monitoring.coreos.com object on a
cluster without a Prometheus Operator, and with one every ServiceMonitor carries the labels its Prometheus selects.

Checked against the charts at the pinned tags: kubernetes-sigs/kueue v0.19.2 charts/kueue (values.yaml,
templates/prometheus/monitor.yaml, templates/_helpers.tpl) and NVIDIA/gpu-operator v26.7.0
deployments/gpu-operator/values.yaml (dcgmExporter.serviceMonitor)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import yaml

from components.kubernetes import monitoring
from gpufleet.engine.plan import HELM_RELEASE, Plan
from model import versions
from model.load import SpecError, parse_estate
from tests.charts import chart_dir
from tests.conftest import example_config, example_estate

SERVICE_MONITOR = "kubernetes:monitoring.coreos.com/v1:ServiceMonitor"
KPS = {"release": "kps"}


def _kueue_releases(plan: Plan) -> list[Any]:
    return [r for r in plan.find(HELM_RELEASE) if r.inputs["chart"].endswith("/kueue")]


def _operator_releases(plan: Plan) -> list[Any]:
    return [r for r in plan.find(HELM_RELEASE) if r.inputs["chart"] == "gpu-operator"]


def test_no_chart_renders_a_service_monitor_without_a_declared_operator(example_plans: dict[str, Plan]) -> None:
    """Kueue's chart renders a ServiceMonitor whenever enablePrometheus is set, and the GPU Operator chart
    enables DCGM exporter's by default; on a cluster without the CRD the Kueue release fails (and every resource
    after it). None of the examples declares an operator, so none may render one."""
    kueue_monitor = (chart_dir(versions.KUEUE) / "templates" / "prometheus" / "monitor.yaml").read_text()
    assert (
        "{{- if .Values.enablePrometheus }}\napiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor"
        in kueue_monitor
    )
    gpu_values = yaml.safe_load((chart_dir(versions.GPU_OPERATOR) / "values.yaml").read_text())
    assert gpu_values["dcgmExporter"]["serviceMonitor"]["enabled"] is True  # so gpufleet must set it
    for stack, plan in example_plans.items():
        for site in example_estate(stack)["sites"]:
            assert site.get("kubernetes", {}).get("monitoring", {}).get("prometheus_operator", "none") == "none"
        for r in _kueue_releases(plan):
            assert r.inputs["values"]["enablePrometheus"] is False, r.name
        for r in _operator_releases(plan):
            assert r.inputs["values"]["dcgmExporter"]["serviceMonitor"] == {"enabled": False}, r.name
        assert not plan.find(SERVICE_MONITOR), stack


@pytest.fixture(scope="module")
def monitored(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    from gpufleet.engine.synth import synth
    from tests.conftest import write_project

    config = example_config("aws-train")
    config["gpufleet:estate"]["sites"][0]["kubernetes"]["monitoring"] = {
        "prometheus_operator": "existing",
        "service_monitor_labels": KPS,
    }
    return synth(write_project(tmp_path_factory.mktemp("monitored"), config), "test")


def test_with_an_operator_every_service_monitor_carries_the_selected_labels(monitored: Plan) -> None:
    (dcgm,) = [r.inputs["values"]["dcgmExporter"]["serviceMonitor"] for r in _operator_releases(monitored)]
    assert dcgm["enabled"] is True and dcgm["additionalLabels"] == KPS
    (relabel,) = dcgm["relabelings"]  # the node of each GPU, for gpufleet's pool rules
    assert relabel["sourceLabels"] == ["__meta_kubernetes_pod_node_name"] and relabel["targetLabel"] == "node"
    gpu_values = yaml.safe_load((chart_dir(versions.GPU_OPERATOR) / "values.yaml").read_text())
    assert "additionalLabels" in gpu_values["dcgmExporter"]["serviceMonitor"]  # the chart's key
    assert dcgm["interval"] == gpu_values["dcgmExporter"]["serviceMonitor"]["interval"]  # its default, pinned
    (kueue,) = _kueue_releases(monitored)
    assert kueue.inputs["values"]["enablePrometheus"] is False  # its monitor could not carry `release`
    config = yaml.safe_load(kueue.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert config["metrics"]["enableClusterQueueResources"] is True
    (monitor,) = monitored.find(SERVICE_MONITOR)
    assert monitor.inputs["metadata"]["labels"]["release"] == "kps"
    assert monitor.inputs["metadata"]["namespace"] == kueue.inputs["namespace"]
    assert kueue.key in monitor.dependencies  # the Service it selects comes with the release


def test_kueue_service_monitor_selects_the_charts_metrics_service_like_the_charts_own() -> None:
    folder = chart_dir(versions.KUEUE)
    helpers = (folder / "templates" / "_helpers.tpl").read_text()
    chart_monitor = (folder / "templates" / "prometheus" / "monitor.yaml").read_text()
    service = (folder / "templates" / "manager" / "auth_proxy_service.yaml").read_text()
    assert (
        'include "kueue.metricsService.labels"' in service and 'include "kueue.metricsService.labels"' in chart_monitor
    )
    for label in ("app.kubernetes.io/name: {{ include \"kueue.name\" . }}", "app.kubernetes.io/instance: {{ .Release.Name }}",
                  "control-plane: controller-manager", "app.kubernetes.io/component: metrics-service"):  # fmt: skip
        assert label in helpers
    spec = monitoring.kueue_service_monitor_spec()
    assert spec["selector"]["matchLabels"]["app.kubernetes.io/instance"] == monitoring.KUEUE_RELEASE
    (endpoint,) = spec["endpoints"]
    for key in ("path", "port", "scheme", "bearerTokenFile"):
        assert f"{key}: {endpoint[key]}" in chart_monitor
    values = yaml.safe_load((folder / "values.yaml").read_text())
    assert endpoint["tlsConfig"] == values["metrics"]["serviceMonitor"]["tlsConfig"]


def _problem(mutate: Callable[[dict[str, Any]], None]) -> str:
    estate = example_estate("aws-train")
    mutate(estate["sites"][0]["kubernetes"])
    with pytest.raises(SpecError) as info:
        parse_estate(estate, "Pulumi.aws-train.yaml")
    return str(info.value)


def test_the_old_prometheus_switch_points_to_its_replacement() -> None:
    def old(k: dict[str, Any]) -> None:
        k.pop("monitoring")
        k["prometheus"] = True

    message = _problem(old)
    assert "sites[0].kubernetes.prometheus: no longer a key" in message
    assert "monitoring: {prometheus_operator: existing" in message


def test_service_monitor_labels_without_an_operator_are_refused() -> None:
    def labels_only(k: dict[str, Any]) -> None:
        k["monitoring"] = {"service_monitor_labels": KPS}

    assert "service_monitor_labels need prometheus_operator: existing" in _problem(labels_only)


def test_install_sets_the_labels_itself_and_its_settings_need_it() -> None:
    def install_with_labels(k: dict[str, Any]) -> None:
        k["monitoring"] = {"prometheus_operator": "install", "service_monitor_labels": KPS}

    def retention_without_install(k: dict[str, Any]) -> None:
        k["monitoring"] = {"prometheus_operator": "existing", "service_monitor_labels": KPS, "retention_days": 7}

    assert "(with install gpufleet sets them)" in _problem(install_with_labels)
    assert "retention_days need prometheus_operator: install" in _problem(retention_without_install)
    estate = example_estate("aws-train")
    estate["sites"][0]["kubernetes"]["monitoring"] = {"prometheus_operator": "install", "storage_class": "gp3"}
    monitoring = parse_estate(estate, "Pulumi.aws-train.yaml").sites[0].kubernetes.monitoring
    assert monitoring.monitor_labels == {"release": "kube-prometheus-stack"} and monitoring.service_monitors
