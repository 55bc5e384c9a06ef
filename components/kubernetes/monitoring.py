"""Prometheus Operator integration of a site's cluster, from the one setting `kubernetes.monitoring`.

gpufleet installs no Prometheus Operator: a site declares one that already runs (`prometheus_operator:
existing`), whose ServiceMonitor CRD (monitoring.coreos.com/v1) therefore exists before `up`, and the labels its
Prometheus selects ServiceMonitors by. Every chart value that renders a ServiceMonitor follows that setting:

- GPU Operator: `dcgmExporter.serviceMonitor.enabled` (on by default in the chart: gpufleet sets it either way)
  and `additionalLabels` (deployments/gpu-operator/values.yaml at the pinned tag); the operator creates that
  ServiceMonitor itself.
- Kueue: the chart's `enablePrometheus` stays off, because the ServiceMonitor it renders
  (charts/kueue/templates/prometheus/monitor.yaml at the pinned tag) carries only the chart's own labels, so a Prometheus
  that selects by `release` (kube-prometheus-stack's default) never scrapes it, and nothing in the chart's values
  adds labels to it (`kueue.labels` in templates/_helpers.tpl). gpufleet creates that ServiceMonitor instead, with
  the chart's endpoint and the declared labels, after the release that creates the Service it selects. For the
  same reason `metrics.prometheusNamespace` (used only by the chart's prometheus Role binding, rendered only with
  enablePrometheus) stays unset: the Prometheus must be allowed to discover endpoints in kueue-system, as
  kube-prometheus-stack's ClusterRole is. Kueue's ClusterQueue resource metrics follow the setting too.
"""

from __future__ import annotations

from typing import Any

from model.spec import Monitoring

SERVICE_MONITOR_API = "monitoring.coreos.com/v1"
KUEUE_RELEASE = "kueue"  # the Helm release name (kueue.Kueue); the chart's selector labels carry it
KUEUE_METRICS_SELECTOR = {
    # kueue.metricsService.labels (templates/_helpers.tpl at the pinned tag): kueue.selectorLabels + the component
    "app.kubernetes.io/name": "kueue",
    "app.kubernetes.io/instance": KUEUE_RELEASE,
    "control-plane": "controller-manager",
    "app.kubernetes.io/component": "metrics-service",
}


def dcgm_service_monitor(monitoring: Monitoring) -> dict[str, Any]:
    """GPU Operator `dcgmExporter.serviceMonitor` values."""
    values: dict[str, Any] = {"enabled": monitoring.service_monitors}
    if monitoring.service_monitors:
        values["additionalLabels"] = dict(monitoring.service_monitor_labels)
    return values


def kueue_service_monitor_spec() -> dict[str, Any]:
    """The chart's ServiceMonitor spec (templates/prometheus/monitor.yaml with its default tlsConfig): the
    controller's HTTPS metrics port, read with the Prometheus service account's token."""
    return {
        "selector": {"matchLabels": dict(KUEUE_METRICS_SELECTOR)},
        "endpoints": [
            {
                "path": "/metrics",
                "port": "https",
                "scheme": "https",
                "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
                "tlsConfig": {"insecureSkipVerify": True},
            }
        ],
    }
