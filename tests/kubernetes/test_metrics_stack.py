"""`kubernetes.monitoring.prometheus_operator: install` (the onprem example with it): kube-prometheus-stack rendered from the
chart cache with gpufleet's values, its CRDs before every ServiceMonitor and PrometheusRule, Prometheus selecting
gpufleet's objects, and gpufleet's rules and dashboard checked with a real PromQL parser.

Upstream artifacts: prometheus-community/helm-charts tag kube-prometheus-stack-88.5.3 (values.yaml, its subcharts'
values.yaml), NVIDIA/gpu-operator v26.7.0 deployments/gpu-operator (templates/dcgm_exporter_config.yaml)."""

from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass
from typing import Any

import promql_parser
import pytest
import yaml

from gpufleet.charts.cache import ENV_VAR, ChartCache
from gpufleet.charts.render import RenderedObject, RenderedRelease, render_plan
from gpufleet.engine.plan import Plan, PlanResource
from gpufleet.engine.synth import synth
from gpufleet.review.reality.first_up import simulate
from model import conventions, versions
from model.load import ESTATE_KEY, parse_estate
from model.nodes import pool_taints
from model.observability import dashboards, metrics, rules
from model.spec import EstateSpec
from tests.charts import require_built
from tests.conftest import example_config, write_project
from tests.review.reality.test_charts import _unknown_keys

PROMETHEUS_RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
SERVICE_MONITOR = "kubernetes:monitoring.coreos.com/v1:ServiceMonitor"
DASHBOARD = "kubernetes:core/v1:ConfigMap"


# What the onprem example's site would write to have gpufleet install the metrics stack.
MONITORING = {"prometheus_operator": "install", "retention_days": 30, "storage_gib": 200}


def with_metrics_stack() -> dict[str, Any]:
    """The onprem example with `monitoring: {prometheus_operator: install, ...}` on its site."""
    config = example_config("onprem")
    config[ESTATE_KEY]["sites"][0].setdefault("kubernetes", {})["monitoring"] = dict(MONITORING)
    return config


@dataclass
class Installed:
    spec: EstateSpec
    plan: Plan
    releases: dict[str, RenderedRelease]
    kps: PlanResource


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    require_built(versions.KUBE_PROMETHEUS_STACK)
    config = with_metrics_stack()
    plan = synth(write_project(tmp_path_factory.mktemp("metrics"), config), "test")
    releases = render_plan(plan, ChartCache(os.environ[ENV_VAR]))
    (kps,) = [r for r in plan.helm_releases() if r.inputs["chart"] == versions.KUBE_PROMETHEUS_STACK.name]
    return Installed(parse_estate(config[ESTATE_KEY], "test"), plan, releases, kps)


def _rendered(i: Installed, key: str, kind: str) -> list[RenderedObject]:
    return [o for o in i.releases[key].objects if o.kind == kind]


def _chart_values() -> dict[str, Any]:
    folder = ChartCache(os.environ[ENV_VAR]).locate(versions.KUBE_PROMETHEUS_STACK).path
    values: dict[str, Any] = yaml.safe_load((folder / "values.yaml").read_text())
    for sub in ("kube-state-metrics", "prometheus-node-exporter", "grafana"):
        sub_values = yaml.safe_load((folder / "charts" / sub / "values.yaml").read_text())
        values[sub] = {**sub_values, **(values.get(sub) or {})}
    return values


def test_install_previews_with_no_first_up_problem(installed: Installed) -> None:
    result = simulate(installed.plan, installed.spec, installed.releases)
    assert result.problems == []
    crds = {c.manifest["spec"]["names"]["kind"] for c in installed.releases[installed.kps.key].crds}
    assert {"ServiceMonitor", "PrometheusRule", "Prometheus"} <= crds
    (kps_release,) = installed.plan.find("kubernetes:helm.sh/v3:Release", installed.kps.name)
    assert kps_release.inputs["version"] == versions.KUBE_PROMETHEUS_STACK.version
    assert kps_release.inputs["repositoryOpts"]["repo"] == versions.KUBE_PROMETHEUS_STACK.repository


def test_every_monitor_and_rule_waits_for_the_release_that_brings_its_crd(installed: Installed) -> None:
    spec = installed.spec
    waiting = [*installed.plan.find(SERVICE_MONITOR), *installed.plan.find(PROMETHEUS_RULE)]
    assert len(waiting) == 2  # Kueue's ServiceMonitor and gpufleet's rules
    for r in waiting:
        assert installed.kps.key in r.dependencies, r.name
    # The GPU Operator skips DCGM exporter's ServiceMonitor when the CRD is missing: it waits for the release too.
    (operator,) = [r for r in installed.plan.helm_releases() if r.inputs["chart"] == "gpu-operator"]
    assert installed.kps.key in operator.dependencies
    # Without the dependency the simulated first `up` finds the CRD too late.
    broken = copy.deepcopy(installed.plan)
    rule = broken.get(installed.plan.find(PROMETHEUS_RULE)[0].key)
    rule.dependencies = [d for d in rule.dependencies if d != installed.kps.key]
    problems = simulate(broken, spec, installed.releases).problems
    assert [(p.check, p.missing) for p in problems] == [("crd", "CRD prometheusrules.monitoring.coreos.com")]


def test_prometheus_selects_the_monitors_and_rules_gpufleet_labels(installed: Installed) -> None:
    selector = {"matchLabels": conventions.METRICS_SELECTOR}
    (prometheus,) = _rendered(installed, installed.kps.key, "Prometheus")
    assert prometheus.manifest["spec"]["serviceMonitorSelector"] == selector
    assert prometheus.manifest["spec"]["ruleSelector"] == selector
    for r in [*installed.plan.find(SERVICE_MONITOR), *installed.plan.find(PROMETHEUS_RULE)]:
        assert conventions.METRICS_SELECTOR.items() <= r.inputs["metadata"]["labels"].items(), r.name
    (operator,) = [r for r in installed.plan.helm_releases() if r.inputs["chart"] == "gpu-operator"]
    assert (
        operator.inputs["values"]["dcgmExporter"]["serviceMonitor"]["additionalLabels"] == conventions.METRICS_SELECTOR
    )
    for monitor in _rendered(installed, installed.kps.key, "ServiceMonitor"):  # the chart's own stay selected
        assert monitor.manifest["metadata"]["labels"]["release"] == conventions.METRICS_RELEASE, monitor.source


def test_retention_and_volume_come_from_the_stack_file(installed: Installed) -> None:
    (prometheus,) = _rendered(installed, installed.kps.key, "Prometheus")
    spec = prometheus.manifest["spec"]
    assert spec["retention"] == "30d"  # retention_days: 30 (MONITORING)
    assert spec["retentionSize"] == "170GB"  # 85% of storage_gib: 200
    claim = spec["storage"]["volumeClaimTemplate"]["spec"]
    assert claim["resources"]["requests"]["storage"] == "200Gi"
    assert "storageClassName" not in claim  # the cluster's default StorageClass


def test_only_node_exporter_tolerates_the_gpu_taints(installed: Installed) -> None:
    site = installed.spec.sites[0]
    needed = {(t.key, t.value) for p in site.node_pools for t in pool_taints(p)}
    gpu = (conventions.GPU_TAINT.key, conventions.GPU_TAINT.value)
    for obj in installed.releases[installed.kps.key].objects:
        if obj.kind not in ("DaemonSet", "Deployment", "Job"):
            continue
        tolerations = obj.manifest["spec"]["template"]["spec"].get("tolerations") or []
        assert all(t.get("key") for t in tolerations), obj.name  # no blanket toleration
        keys = {(t["key"], t.get("value")) for t in tolerations}
        if "node-exporter" in obj.name:
            assert needed <= keys, obj.name
            # gpufleet's list replaces the chart's NoSchedule/Exists, so the quarantine taint is named too
            assert conventions.QUARANTINE_TOLERATION in tolerations, obj.name
        else:
            assert gpu not in keys, obj.name


def test_every_value_gpufleet_sets_is_a_key_of_the_pinned_chart(installed: Installed) -> None:
    assert _unknown_keys(installed.kps.inputs["values"], _chart_values()) == []
    assert _unknown_keys({"prometheus": {"prometheusSpec": {"retentionn": "1d"}}}, _chart_values()) == [
        "prometheus.prometheusSpec.retentionn"
    ]


def test_dcgm_exporter_gets_the_metrics_file_the_rules_read(
    installed: Installed, example_plans: dict[str, Plan]
) -> None:
    (operator,) = [r for r in installed.plan.helm_releases() if r.inputs["chart"] == "gpu-operator"]
    (config,) = [o for o in _rendered(installed, operator.key, "ConfigMap") if o.name == metrics.DCGM_CONFIGMAP]
    served = {
        line.split(",")[0] for line in config.manifest["data"]["dcgm-metrics.csv"].splitlines() if line[:1] != "#"
    }
    (policy,) = _rendered(installed, operator.key, "ClusterPolicy")
    assert policy.manifest["spec"]["dcgmExporter"]["config"] == {"name": metrics.DCGM_CONFIGMAP}
    used = {w for e in [*rules.expressions(), *dashboards.expressions()] for w in _names(e) if w.startswith("DCGM_")}
    assert used and used <= served
    for stack in ("aws-train", "hybrid", "onprem"):  # nothing scrapes the exporter there: the chart's default stands
        for r in example_plans[stack].helm_releases():
            if r.inputs["chart"] == "gpu-operator":
                assert "config" not in r.inputs["values"]["dcgmExporter"]


def _names(expr: str) -> set[str]:
    import re

    return set(re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", expr))


@pytest.mark.parametrize("expr", [*rules.expressions(), *dashboards.expressions()])
def test_every_promql_expression_parses(expr: str) -> None:
    promql_parser.parse(expr)


def test_the_parser_refuses_a_broken_expression() -> None:
    with pytest.raises(ValueError):
        promql_parser.parse("sum by (namespace (DCGM_FI_DEV_GPU_UTIL)")


def test_the_rule_carries_every_group_and_each_alert_its_severity(installed: Installed) -> None:
    (rule,) = installed.plan.find(PROMETHEUS_RULE)
    groups = rule.inputs["spec"]["groups"]
    assert [g["name"] for g in groups] == ["gpufleet-gpu-allocation", "gpufleet-gpu-health", "gpufleet-queues"]
    alerts = {r["alert"]: r for g in groups for r in g["rules"] if "alert" in r}
    for name in ("GpuXidError", "GpuEccDoubleBitError", "GpuThermalThrottling", "GpuNvlinkErrors", "KueueGangNotReady"):
        assert alerts[name]["labels"]["severity"] in ("warning", "critical")
    assert 'reason="PodsReadyTimeout"' in alerts["KueueGangNotReady"]["expr"]


def test_the_dashboard_is_grafana_json_the_sidecar_loads(installed: Installed) -> None:
    values = _chart_values()
    sidecar = values["grafana"]["sidecar"]
    (cm,) = [r for r in installed.plan.find(DASHBOARD) if r.inputs["metadata"]["name"] == "gpufleet-dashboard"]
    labels = cm.inputs["metadata"]["labels"]
    assert labels[sidecar["dashboards"]["label"]] == sidecar["dashboards"]["labelValue"]
    assert cm.inputs["metadata"]["namespace"] == conventions.MONITORING_NAMESPACE
    (text,) = cm.inputs["data"].values()
    board = json.loads(text)
    assert board["uid"] and board["title"] and isinstance(board["schemaVersion"], int)
    ids = [p["id"] for p in board["panels"]]
    assert len(set(ids)) == len(ids) == 6
    for p in board["panels"]:
        assert p["type"] == "timeseries" and p["datasource"]["uid"] == sidecar["datasources"]["uid"]
        assert p["gridPos"]["x"] >= 0 and p["gridPos"]["x"] + p["gridPos"]["w"] <= 24
        assert p["targets"] and all(t["refId"] and t["expr"] for t in p["targets"])


def test_without_a_receiver_preview_warns_that_alerts_reach_nobody(installed: Installed) -> None:
    (warning,) = [w for w in installed.plan.warnings if "kubernetes.monitoring.alerts" in w]
    assert "'null' receiver" in warning and "dc1" in warning
    from tests.kubernetes.test_alert_routing import alertmanager_config

    config = alertmanager_config(installed)
    assert config["route"]["receiver"] == "null"  # the chart's default, untouched
