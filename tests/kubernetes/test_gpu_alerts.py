"""gpufleet's GPU alerts evaluated on series written here (tests/showback/promql.py): each fires while its fault
stands and stops after it.

Upstream artifacts: NVIDIA/dcgm-exporter at tag 4.5.3-4.8.2 (etc/default-counters.csv, internal/pkg/collector/
expcollector.go, pkg/cmd/app.go)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest

from gpufleet.engine.plan import Plan
from model.load import ESTATE_KEY
from model.observability import metrics as m
from model.observability import rules
from tests.kubernetes.test_device_plugin import _device_plugin_stack
from tests.kubernetes.test_metrics_stack import PROMETHEUS_RULE, _names, with_metrics_stack
from tests.showback.promql import Evaluator, Series

T0 = dt.datetime(2026, 12, 1, 10, 0, tzinfo=dt.UTC).timestamp()
MINUTE = 60.0
SCRAPE = float(m.DCGM_SCRAPE_SECONDS)
XID_COUNT = "DCGM_EXP_XID_ERRORS_COUNT"  # etc/default-counters.csv, commented out there
GPU = {m.DCGM_NODE: "n1", "gpu": "0", "UUID": "GPU-0"}


def _alert(name: str) -> dict[str, Any]:
    (rule,) = [r for g in rules.rule_groups(dcgm_exporter=True) for r in g["rules"] if r.get("alert") == name]
    return rule


def _series(name: str, labels: dict[str, str], start: float, end: float, value: float) -> Series:
    s = Series({"__name__": name, **labels})
    t = start
    while t < end:
        s.samples.append((t, value))
        t += SCRAPE
    s.stale_at = t if end < T0 + 120 * MINUTE else None
    return s


def test_an_xid_alert_fires_while_the_exporter_counts_the_xid_and_clears_after() -> None:
    """XID 79 at 10:00, then nothing. DCGM_FI_DEV_XID_ERRORS holds the last XID until a driver reset or an exporter
    restart (NVIDIA/dcgm-exporter #500, #190; NVIDIA/DCGM #277), so an alert on it would still fire at 11:00.
    DCGM_EXP_XID_ERRORS_COUNT counts each XID in the exporter's window (5 minutes by default), as a series per
    `xid`, and is a series of 0 without `xid` when there is none (expcollector.go)."""
    end = T0 + 120 * MINUTE
    window = {"window_size_in_ms": "300000"}
    series = [
        _series("DCGM_FI_DEV_XID_ERRORS", GPU, T0 - 30 * MINUTE, T0, 0),
        _series("DCGM_FI_DEV_XID_ERRORS", {**GPU, "err_code": "79"}, T0, end, 79),  # latched
        _series(XID_COUNT, {**GPU, **window}, T0 - 30 * MINUTE, T0, 0),
        _series(XID_COUNT, {**GPU, **window, "xid": "79"}, T0, T0 + 5 * MINUTE, 1),
        _series(XID_COUNT, {**GPU, **window}, T0 + 5 * MINUTE, end, 0),
    ]
    xid = _alert("GpuXidError")
    db = Evaluator(series)
    assert db.query(xid["expr"], T0 - MINUTE) == []
    assert db.query(xid["expr"], T0 + 60 * MINUTE) == []  # an hour after the XID: nothing stands
    (firing,) = db.query(xid["expr"], T0 + MINUTE)
    assert firing[0]["xid"] == "79" and firing[0][m.DCGM_NODE] == "n1"
    assert "$labels.xid" in xid["annotations"]["summary"] and xid["labels"]["severity"] == "critical"


# NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html), immediate action: a GPU
# reset or node restart, or the application's restart / nothing.
XID_RESET = ("48", "64", "74", "79", "95", "119", "120")
XID_APP = ("13", "31", "43", "45", "63", "92", "94")


@pytest.mark.parametrize("xid", [*XID_RESET, *XID_APP])
def test_an_xid_pages_only_when_nvidia_resets_the_gpu_or_node_for_it(xid: str) -> None:
    """An application's XIDs (13, 31, 43, 45) and those the catalog ignores or restarts the application for (63,
    92, 94) warn, and only while they recur for longer than the exporter's window; the rest page at once."""
    window = {"window_size_in_ms": "300000"}
    series = [
        _series(XID_COUNT, {**GPU, **window}, T0 - 30 * MINUTE, T0, 0),
        _series(XID_COUNT, {**GPU, **window, "xid": xid}, T0, T0 + 5 * MINUTE, 1),
    ]
    db = Evaluator(series)
    critical, warning = _alert("GpuXidError"), _alert("GpuXidRecurring")
    fired = {a["alert"] for a in (critical, warning) for labels, _ in db.query(a["expr"], T0 + MINUTE)}
    assert fired == ({"GpuXidError"} if xid in XID_RESET else {"GpuXidRecurring"})
    assert db.query(warning["expr"], T0 - MINUTE) == []  # the count's series of 0, without `xid`
    assert critical["labels"]["severity"] == "critical" and critical["for"] == "0m"
    # one XID stands for the exporter's 5-minute window, so the warning's `for` lets a single one pass
    assert warning["labels"]["severity"] == "warning" and _minutes(warning["for"]) > 5


def _minutes(duration: str) -> int:
    assert duration.endswith("m")
    return int(duration[:-1])


def test_the_metrics_file_turns_on_the_xid_count() -> None:
    served = [line.split(",")[0] for line in m.dcgm_metrics_csv().splitlines() if not line.startswith("#")]
    assert XID_COUNT in served


def test_a_gpu_node_whose_exporter_is_down_or_silent_is_alerted() -> None:
    """Three GPU nodes and a CPU node. n1's exporter serves its GPUs; n2's target is down; n3 has no target at all
    (its exporter pod never started), so it has no series, and nothing else would fire for its GPUs. The CPU node
    needs no exporter. The exporter's job label is the GPU Operator's (`jobLabel: app`)."""
    end = T0 + 120 * MINUTE
    start = T0 - 60 * MINUTE
    job = {"job": "nvidia-dcgm-exporter"}
    ksm = "kube_node_status_capacity"
    series = [
        *(
            _series(ksm, {"node": n, "resource": "nvidia_com_gpu", "unit": "integer"}, start, end, 8)
            for n in ("n1", "n2", "n3")
        ),
        _series(ksm, {"node": "c1", "resource": "cpu", "unit": "core"}, start, end, 64),
        _series("up", {**job, m.DCGM_NODE: "n1"}, start, end, 1),
        _series("up", {**job, m.DCGM_NODE: "n2"}, start, end, 0),
        _series("DCGM_FI_DEV_GPU_TEMP", {**GPU, **job}, start, end, 50),
    ]
    alerts = {r["alert"]: r for g in rules.rule_groups(dcgm_exporter=True) for r in g["rules"] if "alert" in r}
    down, absent = alerts["GpuMetricsExporterDown"], alerts["GpuMetricsAbsent"]
    db = Evaluator(series)
    assert [labels[m.DCGM_NODE] for labels, _ in db.query(down["expr"], T0)] == ["n2"]
    assert sorted(labels["node"] for labels, _ in db.query(absent["expr"], T0)) == ["n2", "n3"]
    for a in (down, absent):
        assert a["labels"]["severity"] == "critical" and a["for"] != "0m"
        assert "{{ $labels.node }}" in a["annotations"]["summary"]


@pytest.mark.parametrize("gpu_stack", ["gpu-operator", "device-plugin"])
def test_dcgm_rules_only_where_the_gpu_operator_runs_dcgm_exporter(
    gpu_stack: str, synth_config: Callable[..., Plan]
) -> None:
    """The device plugin runs no DCGM exporter (gpufleet.verify.suite skips its probe there): its rules would
    record nothing, and GpuMetricsAbsent would fire on every GPU node for ever."""
    config = with_metrics_stack()
    if gpu_stack == "device-plugin":
        _device_plugin_stack(config[ESTATE_KEY])
    (rule,) = synth_config(config).find(PROMETHEUS_RULE)
    groups = rule.inputs["spec"]["groups"]
    alerts = {r["alert"] for g in groups for r in g["rules"] if "alert" in r}
    records = {r["record"] for g in groups for r in g["rules"] if "record" in r}
    dcgm = {w for g in groups for r in g["rules"] for w in _names(r["expr"]) if w.startswith("DCGM_")}
    assert rules.ALLOCATED_BY_POOL in records and "KueueQueueStalled" in alerts  # not DCGM: on every site
    if gpu_stack == "gpu-operator":
        assert {"GpuMetricsAbsent", "GpuXidError"} <= alerts and rules.USED_BY_POOL in records and dcgm
    else:
        assert not dcgm and not {a for a in alerts if a.startswith("Gpu")}
        assert rules.USED_BY_POOL not in records and "namespace:gpufleet_gpus_idle:sum" not in records
