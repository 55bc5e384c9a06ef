"""kube-prometheus-stack on a site with `kubernetes.monitoring.prometheus_operator: install`, with gpufleet's
recording rules, alerts and dashboard.

- Prometheus selects ServiceMonitors and PrometheusRules by `release: <release>` (conventions.METRICS_SELECTOR).
  The chart's own carry it, and so do gpufleet's: DCGM exporter's, Kueue's and its PrometheusRule.
- Helm applies the chart's CRDs (its `crds` subchart) before any template, so the PrometheusRule here and every
  ServiceMonitor elsewhere wait for this release.
- Prometheus keeps samples for `retention_days` on a volume of `storage_gib`, of the site kind's class
  (model.kinds).
- Node exporter runs on every node: it tolerates the site's GPU and pool taints, the control plane's and
  gpufleet's quarantine taint (placement.tolerations). Nothing else here tolerates a GPU taint.
- The dashboard is a ConfigMap that the Grafana sidecar loads by its label.
- Alerts go to the site's `alerts` receiver; without one, nowhere (preview warns).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.kubernetes import helm, placement
from components.kubernetes.kueue import kube_object
from components.kubernetes.monitoring import SERVICE_MONITOR_API
from components.kubernetes.namespaces import SystemNamespaces, SystemNamespacesArgs
from model import conventions, kinds, versions
from model.observability import dashboards, rules
from model.observability.metrics import DCGM_NODE, KSM_LABELS_ALLOWLIST
from model.spec import Site
from model.spec.alerts import AlertReceiver, SecretKey
from model.tags import Tags

RECEIVER = "gpufleet"
# The Prometheus Operator mounts each of `alertmanagerSpec.secrets` at /etc/alertmanager/secrets/<name>
# (prometheus-operator Documentation/api.md, AlertmanagerSpec `secrets`).
ALERTMANAGER_SECRETS = "/etc/alertmanager/secrets"
RETENTION_SHARE = 0.85  # Prometheus stops keeping samples before its volume is full (retentionSize)
# Alertmanager sends one PagerDuty incident per alert group: the group key is its dedup_key (prometheus/alertmanager
# v0.34.0 notify/pagerduty/pagerduty.go, `DedupKey: key.Hash()`). The chart groups by `namespace` alone, which every
# DCGM alert shares (the exporter's), so a second node's fault would join the first's open incident. gpufleet's
# alerts carry the GPU node as `node` (metrics.DCGM_NODE) and a queue as `cluster_queue`.
GROUP_BY = ["alertname", "namespace", DCGM_NODE, "cluster_queue"]
CONTROL_PLANE = {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}


def metrics_stack_values(site: Site) -> dict[str, Any]:
    """Helm values for kube-prometheus-stack (keys of its values.yaml and its subcharts' at the pinned tag)."""
    mon = site.kubernetes.monitoring
    selector = {"matchLabels": dict(conventions.METRICS_SELECTOR)}
    claim: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": f"{mon.storage_gib}Gi"}},
    }
    if volume_class := kinds.of(site).metrics_volume_class:
        claim["storageClassName"] = volume_class
    return {
        "crds": {"enabled": True},
        "prometheus": {
            "prometheusSpec": {
                "retention": f"{mon.retention_days}d",
                "retentionSize": f"{int(mon.storage_gib * RETENTION_SHARE)}GB",
                "storageSpec": {"volumeClaimTemplate": {"spec": claim}},
                # explicit, not the chart's "nil uses Helm values" default, so the selector is the one written here
                "serviceMonitorSelectorNilUsesHelmValues": False,
                "serviceMonitorSelector": selector,
                "ruleSelectorNilUsesHelmValues": False,
                "ruleSelector": selector,
            }
        },
        **({"alertmanager": alertmanager_values(mon.alerts)} if mon.alerts else {}),
        "kube-state-metrics": {"metricLabelsAllowlist": list(KSM_LABELS_ALLOWLIST)},
        # the chart tolerates every NoSchedule taint (prometheus-node-exporter values.yaml); gpufleet's list
        # replaces that, so it names every taint node exporter must run under, the quarantine taint included
        "prometheus-node-exporter": {"tolerations": [CONTROL_PLANE, *placement.tolerations(site.node_pools)]},
    }


def alertmanager_values(alerts: AlertReceiver) -> dict[str, Any]:
    """`alertmanager.config` (merged by Helm into the chart's, so its global, inhibit rules and timings stay) with
    one receiver that every alert goes to but the chart's Watchdog, and the Secrets it reads its keys from (the
    `*_file` settings of prometheus/alertmanager v0.34.0, the chart's image)."""

    def file(ref: SecretKey) -> str:
        return f"{ALERTMANAGER_SECRETS}/{ref.secret}/{ref.key}"

    receiver: dict[str, Any] = {"name": RECEIVER}
    if alerts.webhook_url is not None:
        receiver["webhook_configs"] = [{"url": alerts.webhook_url, "send_resolved": True}]
    if alerts.webhook_url_secret is not None:
        receiver["webhook_configs"] = [{"url_file": file(alerts.webhook_url_secret), "send_resolved": True}]
    if (slack := alerts.slack) is not None:
        channel = {} if slack.channel is None else {"channel": slack.channel}
        receiver["slack_configs"] = [{"api_url_file": file(slack), **channel, "send_resolved": True}]
    if alerts.pagerduty is not None:
        receiver["pagerduty_configs"] = [{"routing_key_file": file(alerts.pagerduty), "send_resolved": True}]
    values: dict[str, Any] = {
        "config": {
            "route": {
                "receiver": RECEIVER,
                "group_by": GROUP_BY,  # a list: Helm replaces the chart's, its other route settings stay
                # the chart's: Watchdog always fires, to show the pipeline works; it stays on 'null'
                "routes": [{"receiver": "null", "matchers": ['alertname = "Watchdog"']}],
            },
            "receivers": [{"name": "null"}, receiver],
        }
    }
    if secrets := alerts.secrets():
        values["alertmanagerSpec"] = {"secrets": secrets}
    return values


def no_receiver_warning(site: Site) -> str:
    return (
        f"site {site.name}: kubernetes.monitoring.alerts is unset, so kube-prometheus-stack routes every alert to "
        "its 'null' receiver and gpufleet's GPU alerts reach nobody; name a webhook, Slack or PagerDuty receiver"
    )


@dataclass(frozen=True)
class MetricsStackArgs:
    site: Site
    tags: Tags
    volume_class: pulumi.Resource | None = None  # a claim names no class that does not exist yet: it would pend


class MetricsStack(pulumi.ComponentResource):
    """The monitoring namespace (Pod Security privileged, for node exporter), the kube-prometheus-stack release,
    gpufleet's PrometheusRule and its dashboard ConfigMap."""

    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: MetricsStackArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:kubernetes:MetricsStack", name, None, opts)
        self._name = name
        self._labels = args.tags.labels()
        namespaces = SystemNamespaces(
            f"{name}-namespaces",
            SystemNamespacesArgs(args.tags, (conventions.MONITORING_NAMESPACE,)),
            pulumi.ResourceOptions(parent=self),
        )
        namespace = namespaces.resources[conventions.MONITORING_NAMESPACE]
        self.release = helm.release(
            f"{name}-release",
            versions.KUBE_PROMETHEUS_STACK,
            name=conventions.METRICS_RELEASE,
            namespace=conventions.MONITORING_NAMESPACE,
            create_namespace=False,
            values=metrics_stack_values(args.site),
            max_history=10,
            timeout=900,
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[namespace, *([args.volume_class] if args.volume_class else [])]
            ),
        )
        if args.site.kubernetes.monitoring.alerts is None:
            pulumi.log.warn(no_receiver_warning(args.site), resource=self)
        self.rule = self._rule(namespace, args.site)
        self.dashboard = self._dashboard(namespace)
        self.register_outputs({"status": self.release.status})

    def _rule(self, namespace: pulumi.Resource, site: Site) -> pulumi.CustomResource:
        """gpufleet's PrometheusRule, after its namespace and the release whose CRDs define it. Its DCGM rules only
        with the GPU Operator, whose DCGM exporter they read: the device plugin runs none."""
        dcgm_exporter = site.kubernetes.gpu_stack == "gpu-operator"
        return kube_object(
            f"{self._name}-rules",
            SERVICE_MONITOR_API,
            "PrometheusRule",
            {
                "name": "gpufleet",
                "namespace": conventions.MONITORING_NAMESPACE,
                "labels": {**self._labels, **conventions.METRICS_SELECTOR},
            },
            {"spec": {"groups": rules.rule_groups(dcgm_exporter)}},
            pulumi.ResourceOptions(parent=self, depends_on=[namespace, self.release]),
        )

    def _dashboard(self, namespace: pulumi.Resource) -> k8s.core.v1.ConfigMap:
        return k8s.core.v1.ConfigMap(
            f"{self._name}-dashboard",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name="gpufleet-dashboard",
                namespace=conventions.MONITORING_NAMESPACE,
                labels={**self._labels, **conventions.GRAFANA_DASHBOARD_LABEL},
            ),
            data={"gpufleet-gpus.json": json.dumps(dashboards.dashboard(), indent=1, sort_keys=True)},
            opts=pulumi.ResourceOptions(parent=self, depends_on=[namespace]),
        )
