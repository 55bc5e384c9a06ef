"""Where gpufleet's alerts go: `kubernetes.monitoring.alerts` becomes kube-prometheus-stack's `alertmanager.config`
receiver, with its Slack and PagerDuty keys read from Secrets the Alertmanager mounts. Without it the chart's
default routes every alert to its 'null' receiver, and preview says so.

Upstream artifacts: prometheus-community/helm-charts tag kube-prometheus-stack-88.5.3 (values.yaml
`alertmanager.config`, `alertmanager.alertmanagerSpec.secrets`; templates/alertmanager/secret.yaml), prometheus/
alertmanager v0.34.0 (the chart's image; config/notifiers.go, notify/webhook/config.go, notify/pagerduty/config.go)."""

from __future__ import annotations

import base64
import os
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from gpufleet.charts.cache import ENV_VAR, ChartCache
from gpufleet.charts.render import render_plan
from gpufleet.engine.synth import synth
from model import versions
from model.load import ESTATE_KEY
from model.spec import Monitoring
from tests.charts import require_built
from tests.conftest import write_project
from tests.kubernetes.test_metrics_stack import Installed, _chart_values, with_metrics_stack
from tests.review.reality.test_charts import _unknown_keys

ALERTS = {
    "webhook_url": "http://alert-relay.ops.svc:8080/alerts",
    "slack": {"secret": "alertmanager-slack", "key": "webhook-url", "channel": "#gpu-alerts"},
    "pagerduty": {"secret": "alertmanager-pagerduty", "key": "routing-key"},
}


@pytest.fixture(scope="module")
def routed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    require_built(versions.KUBE_PROMETHEUS_STACK)
    config = with_metrics_stack()
    config[ESTATE_KEY]["sites"][0]["kubernetes"]["monitoring"]["alerts"] = ALERTS
    plan = synth(write_project(tmp_path_factory.mktemp("alerts"), config), "test")
    releases = render_plan(plan, ChartCache(os.environ[ENV_VAR]))
    (kps,) = [r for r in plan.helm_releases() if r.inputs["chart"] == versions.KUBE_PROMETHEUS_STACK.name]
    return Installed(None, plan, releases, kps)  # type: ignore[arg-type]


def alertmanager_config(i: Installed) -> dict[str, Any]:
    (secret,) = [
        o for o in i.releases[i.kps.key].objects if o.kind == "Secret" and o.source.endswith("alertmanager/secret.yaml")
    ]
    return dict(yaml.safe_load(base64.b64decode(secret.manifest["data"]["alertmanager.yaml"])))


def _group(route: dict[str, Any], labels: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """The labels of the alert group `labels` falls in (dispatch/route.go: the route's group_by labels present)."""
    return tuple(sorted((k, v) for k, v in labels.items() if k in route["group_by"]))


def test_each_gpu_node_and_alert_is_its_own_group_and_so_its_own_pagerduty_incident(routed: Installed) -> None:
    """PagerDuty's dedup_key is the alert group's key (notify/pagerduty/pagerduty.go): with the chart's
    group_by [namespace] an XID on n2 joins n1's open incident, since both carry the exporter's namespace."""
    route = alertmanager_config(routed)["route"]
    exporter = {"namespace": "gpu-operator", "job": "nvidia-dcgm-exporter", "gpu": "0"}
    n1 = {**exporter, "alertname": "GpuXidError", "node": "n1", "xid": "79"}
    n2 = {**n1, "node": "n2"}
    ecc = {**n1, "alertname": "GpuEccDoubleBitError"}
    assert len({_group(route, a) for a in (n1, n2, ecc)}) == 3
    queues = [{"alertname": "KueueQueueStalled", "cluster_queue": q} for q in ("team-a", "team-b")]
    assert len({_group(route, a) for a in queues}) == 2
    # the chart's other route settings stay: its timings and the Watchdog route
    assert (route["group_wait"], route["group_interval"], route["repeat_interval"]) == ("30s", "5m", "12h")
    assert "..." not in route["group_by"] and len(set(route["group_by"])) == len(route["group_by"])


def test_alerts_go_to_the_receiver_the_stack_file_names(routed: Installed) -> None:
    config = alertmanager_config(routed)
    assert config["route"]["receiver"] == "gpufleet"
    # the chart's Watchdog route (an always-firing alert) stays on 'null'
    assert config["route"]["routes"] == [{"receiver": "null", "matchers": ['alertname = "Watchdog"']}]
    assert config["inhibit_rules"] and config["route"]["group_wait"] == "30s"  # the chart's defaults kept
    (receiver,) = [r for r in config["receivers"] if r["name"] == "gpufleet"]
    assert receiver["webhook_configs"] == [{"url": ALERTS["webhook_url"], "send_resolved": True}]
    assert receiver["slack_configs"] == [
        {
            "api_url_file": "/etc/alertmanager/secrets/alertmanager-slack/webhook-url",
            "channel": "#gpu-alerts",
            "send_resolved": True,
        }
    ]
    assert receiver["pagerduty_configs"] == [
        {"routing_key_file": "/etc/alertmanager/secrets/alertmanager-pagerduty/routing-key", "send_resolved": True}
    ]
    (am,) = [o for o in routed.releases[routed.kps.key].objects if o.kind == "Alertmanager"]
    assert sorted(am.manifest["spec"]["secrets"]) == ["alertmanager-pagerduty", "alertmanager-slack"]
    assert _unknown_keys(routed.kps.inputs["values"], _chart_values()) == []
    assert not [w for w in routed.plan.warnings if "alert" in w]


@pytest.mark.parametrize(
    "alerts, refused",
    [
        ({}, "name at least one of webhook_url, webhook_url_secret, slack, pagerduty"),
        ({"webhook_url": "https://user:token@hooks.example.com/x"}, "no user or password"),
        ({"webhook_url": "ftp://hooks.example.com/x"}, "http"),
        ({"slack": {"api_url": "https://hooks.slack.com/services/T/B/X"}}, "Extra inputs"),
        ({"pagerduty": {"secret": "Bad_Name", "key": "k"}}, "pattern"),
        (
            {"webhook_url": "http://a", "webhook_url_secret": {"secret": "hook", "key": "url"}},
            "one of webhook_url and webhook_url_secret",
        ),
    ],
)
def test_a_receiver_holds_no_secret_value(alerts: dict[str, Any], refused: str) -> None:
    with pytest.raises(ValidationError, match=refused):
        Monitoring.model_validate({"prometheus_operator": "install", "alerts": alerts})


def test_alerts_need_the_installed_stack() -> None:
    with pytest.raises(ValidationError, match="alerts need prometheus_operator: install"):
        Monitoring.model_validate({"prometheus_operator": "existing", "alerts": {"webhook_url": "http://a"}})
