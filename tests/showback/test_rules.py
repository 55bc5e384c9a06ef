"""gpufleet's allocation rules evaluated on series written here (tests/showback/promql.py), then summed by the very
query `cost --actual` sends: allocated follows each pod's effective GPU request, init containers included, and a
job's use counts the minutes it ran, with no tail after it ends."""

from __future__ import annotations

import datetime as dt

import pytest

from gpufleet.showback.showback import SAMPLE_HOURS, queries
from model.observability import metrics as m
from model.observability import rules
from tests.showback.promql import Evaluator, Series, record

T0 = dt.datetime(2026, 12, 1, 10, 0, tzinfo=dt.UTC).timestamp()
MINUTE = 60.0
KSM_SCRAPE = 30.0  # kube-prometheus-stack's default scrape interval
DCGM_SCRAPE = float(m.DCGM_SCRAPE_SECONDS)  # the DCGM exporter's ServiceMonitor interval
GPU = "nvidia_com_gpu"


def scraped(
    labels: dict[str, str], value: float, start: float, end: float, every: float, offset: float = 10.0
) -> Series:
    """A series scraped every `every` seconds from `start` + `offset` while before `end`, then marked stale at the
    next scrape."""
    s = Series(dict(labels))
    t = start + offset
    while t < end:
        s.samples.append((t, value))
        t += every
    s.stale_at = t
    return s


def node_labels(node: str, pool: str, start: float, end: float) -> Series:
    return scraped({"__name__": m.KSM_NODE_LABELS, "node": node, m.POOL_NODE_LABEL: pool}, 1, start, end, KSM_SCRAPE)


def pod(
    namespace: str, name: str, node: str, start: float, end: float, app: dict[str, float],
    init: dict[str, float] | None = None, sidecars: frozenset[str] = frozenset(),
) -> list[Series]:  # fmt: skip
    """kube-state-metrics' series of a pod Running on `node` in [start, end): GPU requests per app and init
    container, the init containers' info (restart_policy Always for `sidecars`), the phase."""
    who = {"namespace": namespace, "pod": name, "uid": f"uid-{name}"}
    out = [scraped({"__name__": m.KSM_POD_PHASE, **who, "phase": "Running"}, 1, start, end, KSM_SCRAPE)]
    for metric, containers in ((m.KSM_POD_REQUESTS, app), (m.KSM_POD_INIT_REQUESTS, init or {})):
        for container, gpus in containers.items():
            labels = {"__name__": metric, **who, "container": container, "node": node, "resource": GPU}
            out.append(scraped({**labels, "unit": "integer"}, gpus, start, end, KSM_SCRAPE))
    for container in init or {}:
        policy = "Always" if container in sidecars else ""
        labels = {"__name__": m.KSM_POD_INIT_INFO, **who, "container": container, "restart_policy": policy}
        out.append(scraped(labels, 1, start, end, KSM_SCRAPE))
    return out


def window_sums(series: list[Series], end: float, window: str) -> dict[str, dict[tuple[str, str], float]]:
    """What `cost --actual` reads at `end`: per kind, GPU-hours per (namespace, pool)."""
    db = record(series, rules.recording_rules(dcgm_exporter=True), T0, end, rules.ALLOCATION_INTERVAL_MINUTES * MINUTE)
    return {
        kind: {
            (labels["namespace"], labels["pool"]): value * SAMPLE_HOURS
            for labels, value in Evaluator(db).query(expr, end)
        }
        for kind, expr in queries(window).items()
    }


def test_allocated_is_each_pods_effective_request_with_its_init_containers() -> None:
    """Kubernetes' effective request of a pod is the larger of its app and sidecar containers' sum and its largest
    regular init container's request (kubernetes.io/docs/concepts/workloads/pods/init-containers/#resource-sharing-
    within-containers; .../sidecar-containers/#resource-sharing-within-containers). The scheduler keeps that many
    GPUs for the pod while it runs. Per pod, Running for the 10 minutes 10:00 to 10:10:
    staging    app 1, regular init 8                  → 8
    mixed      app 2, sidecar 1, regular init 2       → max(2 + 1, 2) = 3
    plain      app 4                                  → 4
    init-only  no GPU app, regular init 2             → 2
    research on h100: 17 GPUs × 10 one-minute samples (10:01 to 10:10: the first scrape is at 10:00) = 170/60 GPU-h.
    Before init containers were counted it was (1 + 2 + 4) × 10 / 60."""
    end = T0 + 10 * MINUTE
    series = [
        node_labels("n1", "h100", T0, T0 + 60 * MINUTE),
        *pod("research", "staging", "n1", T0, end, {"train": 1}, {"fetch": 8}),
        *pod("research", "mixed", "n1", T0, end, {"train": 2}, {"proxy": 1, "warm": 2}, frozenset({"proxy"})),
        *pod("research", "plain", "n1", T0, end, {"train": 4}),
        *pod("research", "init-only", "n1", T0, end, {"cpu": 0}, {"burn-in": 2}),
    ]
    sums = window_sums(series, T0 + 60 * MINUTE, "1h")
    assert sums["allocated"] == {("research", "h100"): pytest.approx(170 / 60)}
    now = Evaluator(record(series, rules.recording_rules(dcgm_exporter=True), T0, T0 + 5 * MINUTE, MINUTE))
    assert now.query("namespace:gpufleet_gpus_allocated:sum", T0 + 5 * MINUTE) == [
        ({"__name__": "namespace:gpufleet_gpus_allocated:sum", "namespace": "research"}, 17.0)
    ]


def test_a_jobs_use_counts_the_minutes_it_ran_and_no_tail_after_it_ends() -> None:
    """One GPU at 60% for a 10-minute job, 10:00 to 10:10, in an hour's window. DCGM exporter is scraped every 15 s
    and labels the GPU with the job's namespace while the job runs. Used = 0.6 × 10 GPU-minutes = 0.1 GPU-h;
    allocated 10/60; idle 4/60. With a 5-minute average per one-minute sample, the samples after the job ended
    averaged its last minutes again: used was 0.6 × 14 minutes = 0.14 GPU-h and idle 1.6/60, 60% too small."""
    end = T0 + 10 * MINUTE
    gpu = {"__name__": "DCGM_FI_DEV_GPU_UTIL", m.DCGM_NODE: "n1", "gpu": "0"}
    series = [
        node_labels("n1", "h100", T0, T0 + 60 * MINUTE),
        *pod("research", "job", "n1", T0, end, {"train": 1}),
        scraped({**gpu, m.DCGM_WORKLOAD_NAMESPACE: "research", "exported_pod": "job"}, 60, T0, end, DCGM_SCRAPE, 5),
        scraped(gpu, 0, end, T0 + 60 * MINUTE, DCGM_SCRAPE, 5),  # the GPU, free again: no workload labels
    ]
    sums = window_sums(series, T0 + 60 * MINUTE, "1h")
    assert sums["allocated"] == {("research", "h100"): pytest.approx(10 / 60)}
    assert sums["used"] == {("research", "h100"): pytest.approx(0.1)}


def test_a_steady_job_across_the_windows_edges_counts_each_minute_once() -> None:
    """A job on one GPU from 09:00 to 12:00, at 100% until 10:00 and 50% after, asked for 10:00 to 11:00: 60
    one-minute samples of 0.5 = 0.5 GPU-h, with nothing of the busier minutes before 10:00 in it. (With a 5-minute
    average, the samples of 10:01 to 10:04 averaged 90%, 80%, 70% and 60%: one GPU-minute more, 0.5167 GPU-h.)"""
    start, end = T0 - 60 * MINUTE, T0 + 120 * MINUTE
    gpu = Series({"__name__": "DCGM_FI_DEV_GPU_UTIL", m.DCGM_NODE: "n1", m.DCGM_WORKLOAD_NAMESPACE: "research"})
    gpu.samples = [(start + 5 + 15 * i, 100.0 if start + 5 + 15 * i < T0 else 50.0) for i in range(720)]
    series = [node_labels("n1", "h100", start, end), *pod("research", "job", "n1", start, end, {"train": 1}), gpu]
    db = record(series, rules.recording_rules(dcgm_exporter=True), start, T0 + 60 * MINUTE, MINUTE)
    (used,) = Evaluator(db).query(queries("1h")["used"], T0 + 60 * MINUTE)
    assert used[1] * SAMPLE_HOURS == pytest.approx(0.5)


def test_a_used_samples_minute_holds_several_dcgm_scrapes() -> None:
    """The used rule averages one evaluation interval; the DCGM ServiceMonitor gpufleet configures scrapes often
    enough that a missed scrape still leaves samples in each minute."""
    from components.kubernetes.monitoring import dcgm_service_monitor
    from model.spec import Monitoring

    assert f"{rules.ALLOCATION_INTERVAL_MINUTES}m" == rules.USE_RANGE
    assert rules.ALLOCATION_INTERVAL_MINUTES * 60 >= 3 * m.DCGM_SCRAPE_SECONDS
    values = dcgm_service_monitor(Monitoring(prometheus_operator="install"))
    assert values["interval"] == f"{m.DCGM_SCRAPE_SECONDS}s"
