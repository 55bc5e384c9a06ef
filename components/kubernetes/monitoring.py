"""Prometheus Operator integration of a site's cluster, from the one setting `kubernetes.monitoring`.

- A site declares an operator that already runs (`prometheus_operator: existing`), so its ServiceMonitor CRD
  (monitoring.coreos.com/v1) exists before `up`, and the labels its Prometheus selects ServiceMonitors by.
- Or gpufleet installs one (`install`, metrics_stack.py) and sets those labels itself.
- Every chart value that renders a ServiceMonitor follows that setting: the GPU Operator's DCGM exporter
  (`dcgm_service_monitor`) and Kueue's metrics (`kueue_service_monitor_spec`). So do Kueue's ClusterQueue
  resource metrics.
"""

from __future__ import annotations

from typing import Any

from model.observability.metrics import DCGM_CONFIGMAP, DCGM_NODE, DCGM_SCRAPE_SECONDS, dcgm_metrics_csv
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
    """GPU Operator `dcgmExporter.serviceMonitor` values: `enabled` and `additionalLabels`
    (deployments/gpu-operator/values.yaml at the pinned tag). The chart turns it on by default, so gpufleet sets it
    either way. The operator creates that ServiceMonitor itself.

    Each GPU's series also get the scraped pod's node as `node` (the chart's `relabelings` example): gpufleet's
    rules join GPUs to pools by it. The interval is the chart's default, set so the used rule can rely on it."""
    values: dict[str, Any] = {"enabled": monitoring.service_monitors}
    if monitoring.service_monitors:
        values["additionalLabels"] = monitoring.monitor_labels
        values["interval"] = f"{DCGM_SCRAPE_SECONDS}s"
        values["relabelings"] = [
            {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": DCGM_NODE, "action": "replace"}
        ]
    return values


def dcgm_metrics_config(monitoring: Monitoring) -> dict[str, Any] | None:
    """GPU Operator `dcgmExporter.config` (templates/dcgm_exporter_config.yaml at the pinned tag: a ConfigMap of
    `data` under key dcgm-metrics.csv): the exporter's fields, with the health counters gpufleet's alerts read.
    None where nothing scrapes the exporter: the chart's default then stands."""
    if not monitoring.service_monitors:
        return None
    return {"name": DCGM_CONFIGMAP, "create": True, "data": dcgm_metrics_csv()}


def kueue_service_monitor_spec() -> dict[str, Any]:
    """The chart's ServiceMonitor spec (templates/prometheus/monitor.yaml with its default tlsConfig): the
    controller's HTTPS metrics port, read with the Prometheus service account's token.

    gpufleet creates this ServiceMonitor, not the chart (`enablePrometheus` stays off). The chart's one
    (charts/kueue/templates/prometheus/monitor.yaml at the pinned tag) carries only the chart's own labels, and no
    chart value adds labels to it (`kueue.labels` in templates/_helpers.tpl). So a Prometheus that selects by
    `release`, kube-prometheus-stack's default, would never scrape it. For the same reason
    `metrics.prometheusNamespace` stays unset: only the chart's prometheus Role binding uses it, rendered only with
    enablePrometheus. The Prometheus must be allowed to discover endpoints in kueue-system, as
    kube-prometheus-stack's ClusterRole is.
    """
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
