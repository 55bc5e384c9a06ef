"""gpufleet's Grafana dashboard as data: GPU utilisation per pool and tenant, allocated against used, Kueue's
pending and admitted workloads.

The panels read gpufleet's recording rules (model.observability.rules) and Kueue's own metrics, from the Prometheus
data source kube-prometheus-stack provisions (`grafana.sidecar.datasources.uid` in its values.yaml at
versions.KUBE_PROMETHEUS_STACK's tag). Grafana's dashboard JSON model:
https://grafana.com/docs/grafana/latest/dashboards/build-dashboards/view-dashboard-json-model/
"""

from __future__ import annotations

from typing import Any

from model.observability import metrics as m

DATASOURCE = {"type": "prometheus", "uid": "prometheus"}
UID = "gpufleet-gpus"
SCHEMA_VERSION = 39
WIDTH = 24  # Grafana's grid is 24 columns wide


def _panel(title: str, unit: str, targets: list[tuple[str, str]], kind: str = "timeseries") -> dict[str, Any]:
    return {
        "type": kind,
        "title": title,
        "datasource": DATASOURCE,
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "options": {},
        "targets": [
            {"refId": chr(ord("A") + i), "datasource": DATASOURCE, "expr": expr, "legendFormat": legend}
            for i, (expr, legend) in enumerate(targets)
        ],
    }


def panels() -> list[dict[str, Any]]:
    kueue = f'resource=~"{m.KUEUE_GPU_RESOURCES}"'
    rows = [
        _panel("GPU utilisation per pool", "percentunit",
               [("pool:gpufleet_gpu_utilisation:avg", "{{pool}}")]),
        _panel("GPU utilisation per tenant", "percentunit",
               [("namespace:gpufleet_gpu_utilisation:avg", "{{namespace}}")]),
        _panel("GPUs allocated, used and idle per tenant", "none", [
            ("namespace:gpufleet_gpus_allocated:sum", "{{namespace}} allocated"),
            ("namespace:gpufleet_gpus_used:sum", "{{namespace}} used"),
            ("namespace:gpufleet_gpus_idle:sum", "{{namespace}} idle"),
        ]),
        _panel("GPUs admitted by Kueue per tenant and pool", "none",
               [(f"sum by (cluster_queue, flavor) ({m.KUEUE_RESOURCE_USAGE}{{{kueue}}})",
                 "{{cluster_queue}} on {{flavor}}")]),
        _panel("Kueue workloads pending", "none",
               [(f"sum by (cluster_queue, status) ({m.KUEUE_PENDING})", "{{cluster_queue}} {{status}}")]),
        _panel("Kueue workloads admitted and active", "none",
               [(f"sum by (cluster_queue) ({m.KUEUE_ADMITTED_ACTIVE})", "{{cluster_queue}}")]),
    ]  # fmt: skip
    for i, panel in enumerate(rows):
        panel["id"] = i + 1
        panel["gridPos"] = {"h": 8, "w": WIDTH // 2, "x": (i % 2) * (WIDTH // 2), "y": (i // 2) * 8}
    return rows


def dashboard() -> dict[str, Any]:
    """The dashboard JSON model (what the Grafana sidecar loads from a ConfigMap)."""
    return {
        "uid": UID,
        "title": "gpufleet: GPUs and queues",
        "tags": ["gpufleet", "gpu", "kueue"],
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "editable": False,
        "timezone": "utc",
        "refresh": "1m",
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": []},
        "annotations": {"list": []},
        "panels": panels(),
    }


def expressions() -> list[str]:
    return [t["expr"] for p in panels() for t in p["targets"]]
