"""gpufleet's recording rules and alerts: one PrometheusRule spec per site with an installed Prometheus.

- Recording rules answer "how many GPUs does each tenant hold, and how many does it use": allocated from running
  pods' effective GPU requests, init containers included (kube-state-metrics), used as the sum of each GPU's
  utilisation fraction (DCGM exporter), idle as the difference; also per tenant and pool (the node's pool label),
  which showback prices. Kueue's admitted GPUs per tenant and pool sit beside them.
- Alerts cover XID errors, ECC and row-remap failures, thermal throttling, NVLink errors, a GPU node whose
  DCGM exporter is down or silent, and Kueue gangs never all ready, or queues that stop admitting.
- DCGM-based rules only where DCGM exporter runs (the GPU Operator's).
- Every metric comes from model.observability.metrics; thresholds are gpufleet's choices, named here.
"""

from __future__ import annotations

from typing import Any

from model.observability import metrics as m

GPU_HOT_CELSIUS = 85  # sustained core temperature worth a look; GPUs slow down near 90 C
GANG_WINDOW = "30m"  # how far back the queue alerts look
EXPORTER_WAIT = "10m"  # an exporter restarting, or a new node's first scrapes, is not an outage
EXPORTER_SERIES = "DCGM_FI_DEV_GPU_TEMP"  # a field of every GPU (and MIG parent) in the exporter's default file
RECORDED = "gpufleet"
# NVIDIA's Xid catalog (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html; its later rows as
# the leptonai/gpud project's copy of the catalog gives them), its "Resolution Bucket (Immediate Action)": the XIDs whose action is a GPU reset (RESET_GPU; WORKFLOW_XID_48, whose solo action is
# RESET_GPU; WORKFLOW_NVLINK_ERR, reset the GPU or reboot the node), a bare-metal restart (RESTART_BM: 79, fallen off
# the bus) or a VM restart (RESTART_VM). They page. Every other XID is a warning: RESTART_APP (13, 31, 94), IGNORE
# (43, 63, 92) or a workflow that follows another XID (45), or the NVLink5 decode (144-150) the number alone lacks.
XID_NEEDS_RESET = (46, 48, 62, 64, 74, 79, 95, 109, 110, 119, 120, 136, 140, 143, 151, 155, 156, 158)
# The count holds an XID for the exporter's window (metrics.DCGM_XID_WINDOW) after it: a hardware XID pages at once,
# as a `for` at least that long would let a single one pass; an application's XID warns only while it keeps recurring.
XID_RECURRING = "10m"
# The allocation group is evaluated once a minute, so each recorded sample stands for one minute of GPUs.
ALLOCATION_INTERVAL_MINUTES = 1
USE_RANGE = f"{ALLOCATION_INTERVAL_MINUTES}m"  # what a used sample averages: its own minute
# Per tenant (`namespace`) and pool (`pool`): what `gpufleet cost --actual` sums over its window.
ALLOCATED_BY_POOL = "namespace_pool:gpufleet_gpus_allocated:sum"
USED_BY_POOL = "namespace_pool:gpufleet_gpus_used:sum"


def _by_tenant(expr: str) -> str:
    """`expr` over DCGM series, with the GPU's workload namespace moved to `namespace`."""
    return f'label_replace({expr}, "namespace", "$1", "{m.DCGM_WORKLOAD_NAMESPACE}", "(.+)")'


def _by_pool(expr: str) -> str:
    """`expr` (series with a `node` label) summed per namespace and the node's pool, as label `pool`."""
    joined = f"{expr} * on ({m.DCGM_NODE}) group_left ({m.POOL_NODE_LABEL}) max by ({m.DCGM_NODE}, {m.POOL_NODE_LABEL}) ({m.KSM_NODE_LABELS})"
    return f'sum by (namespace, pool) (label_replace({joined}, "pool", "$1", "{m.POOL_NODE_LABEL}", "(.+)"))'


POD = "namespace, pod, uid, node, resource"  # one pod's request of one resource, on its node


def effective_requests() -> str:
    """Per pod and GPU resource, its effective request, as the scheduler holds it for the pod's life: the larger
    of its app and sidecar containers' sum and its largest regular init container's request
    (https://kubernetes.io/docs/concepts/workloads/pods/init-containers/#resource-sharing-within-containers,
    https://kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/#resource-sharing-within-containers).

    Approximation: Kubernetes adds to a regular init container the sidecars started before it, but
    kube-state-metrics gives no container order, so the sidecars are left out of that term; exact unless a sidecar
    and a later regular init container both request GPUs. Pod overhead (RuntimeClass) is left out: it carries no
    GPUs. A sidecar is an init container whose kube_pod_init_container_info says restart_policy="Always"."""
    gpu = f'{{resource=~"{m.KSM_GPU_RESOURCES}"}}'
    sidecar = f'{m.KSM_POD_INIT_INFO}{{restart_policy="Always"}}'
    init = f"{m.KSM_POD_INIT_REQUESTS}{gpu}"
    lasting = f"sum by ({POD}) ({m.KSM_POD_REQUESTS}{gpu} or ({init} and on (namespace, pod, container) {sidecar}))"
    regular = f"max by ({POD}) ({init} unless on (namespace, pod, container) {sidecar})"
    # a label tells the two apart, so `or` keeps both and `max` takes the larger
    return (
        f'max by ({POD}) (label_replace({lasting}, "part", "containers", "", "") '
        f'or label_replace({regular}, "part", "init", "", ""))'
    )


def _utilisation(selector: str = "") -> str:
    """Each GPU's busy fraction over the minute up to the evaluation."""
    return f"avg_over_time(DCGM_FI_DEV_GPU_UTIL{selector}[{USE_RANGE}]) / 100"


def recording_rules(dcgm_exporter: bool) -> list[dict[str, str]]:
    """The allocation group's rules; those reading DCGM exporter (use, utilisation, idle) only with it."""
    # Each recorded sample is the GPU's mean utilisation over the minute it stands for, so a window's sum counts
    # each scraped sample once: a longer range (e.g. 5m) counts a minute in five samples, so its edges include use
    # from before the window, and after a job ends its labelled series still averages its last minutes for four
    # more samples (a range's average is over the samples it holds). The DCGM ServiceMonitor scrapes every
    # metrics.DCGM_SCRAPE_SECONDS (15 s), so each minute holds about four samples.
    tenant_util = _by_tenant(_utilisation(f'{{{m.DCGM_WORKLOAD_NAMESPACE}!=""}}'))
    pool_util = (
        f"{_utilisation()} * on ({m.DCGM_NODE}) group_left ({m.POOL_NODE_LABEL}) "
        f"max by ({m.DCGM_NODE}, {m.POOL_NODE_LABEL}) ({m.KSM_NODE_LABELS})"
    )
    running = (
        f"{effective_requests()} * on (namespace, pod) "
        f'group_left () max by (namespace, pod) ({m.KSM_POD_PHASE}{{phase="Running"}})'
    )
    allocated = [
        {"record": "namespace:gpufleet_gpus_allocated:sum", "expr": f"sum by (namespace) ({running})"},
        {"record": ALLOCATED_BY_POOL, "expr": _by_pool(running)},
        {
            "record": "cluster_queue_flavor:gpufleet_gpus_admitted:sum",
            "expr": f'sum by (cluster_queue, flavor) ({m.KUEUE_RESOURCE_USAGE}{{resource=~"{m.KUEUE_GPU_RESOURCES}"}})',
        },
    ]
    if not dcgm_exporter:
        return allocated
    return [
        *allocated,
        {"record": "namespace:gpufleet_gpus_used:sum", "expr": f"sum by (namespace) ({tenant_util})"},
        {"record": "namespace:gpufleet_gpu_utilisation:avg", "expr": f"avg by (namespace) ({tenant_util})"},
        {
            "record": "namespace:gpufleet_gpus_idle:sum",
            "expr": "clamp_min(namespace:gpufleet_gpus_allocated:sum - on (namespace) "
            "(namespace:gpufleet_gpus_used:sum or namespace:gpufleet_gpus_allocated:sum * 0), 0)",
        },
        {
            "record": "pool:gpufleet_gpu_utilisation:avg",
            "expr": f'label_replace(avg by ({m.POOL_NODE_LABEL}) ({pool_util}), "pool", "$1", '
            f'"{m.POOL_NODE_LABEL}", "(.+)")',
        },
        # kube-state-metrics' requests carry the pod's `node`; DCGM series carry theirs (metrics.DCGM_NODE)
        {"record": USED_BY_POOL, "expr": _by_pool(tenant_util)},
    ]


def _alert(name: str, expr: str, severity: str, summary: str, wait: str = "0m") -> dict[str, Any]:
    return {
        "alert": name,
        "expr": expr,
        "for": wait,
        "labels": {"severity": severity, "source": RECORDED},
        "annotations": {"summary": summary},
    }


GPU = "GPU {{ $labels.gpu }} on {{ $labels.node }}"


def gpu_alerts() -> list[dict[str, Any]]:
    nvlink = " or ".join(
        f"increase({f}[10m]) > 0"
        for f in (
            "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
            "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
            "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
            "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
        )
    )
    reset = "|".join(str(x) for x in XID_NEEDS_RESET)
    xid = f"{GPU} reported XID {{{{ $labels.xid }}}} {{{{ $value }}}} times in {m.DCGM_XID_WINDOW}"
    return [
        _alert("GpuXidError", f'{m.DCGM_XID_COUNT}{{xid=~"{reset}"}} > 0', "critical",
               f"{xid}: NVIDIA's Xid catalog resets the GPU or restarts the node for it"),
        _alert("GpuXidRecurring", f'{m.DCGM_XID_COUNT}{{xid!~"{reset}"}} > 0', "warning",
               f"{xid}, and has kept reporting it for {XID_RECURRING}: NVIDIA's Xid catalog restarts the "
               "application for it, or ignores it", XID_RECURRING),
        _alert("GpuEccDoubleBitError", "increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[10m]) > 0", "critical",
               f"{GPU} had uncorrectable (double-bit) ECC errors"),
        _alert("GpuRowRemapFailure", "DCGM_FI_DEV_ROW_REMAP_FAILURE > 0", "critical",
               f"{GPU} failed to remap a memory row: take the node out of service"),
        _alert("GpuUncorrectableRowRemapped", "increase(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS[1h]) > 0",
               "warning", f"{GPU} remapped a row after an uncorrectable error: it needs a GPU reset"),
        _alert("GpuThermalThrottling", "rate(DCGM_FI_DEV_THERMAL_VIOLATION[5m]) > 0", "warning",
               f"{GPU} is slowed down by its temperature", "10m"),
        _alert("GpuHot", f"DCGM_FI_DEV_GPU_TEMP > {GPU_HOT_CELSIUS}", "warning",
               f"{GPU} has been above {GPU_HOT_CELSIUS} C for 10 minutes", "10m"),
        _alert("GpuNvlinkErrors", nvlink, "warning", f"{GPU} counts NVLink errors"),
        *exporter_alerts(),
    ]  # fmt: skip


def exporter_alerts() -> list[dict[str, Any]]:
    """Every GPU alert reads DCGM exporter: a node whose exporter is down, or serves no GPU series, would stay
    silent. A GPU node is one whose capacity has GPUs (kube-state-metrics); its exporter target and series carry
    its `node` (the ServiceMonitor's relabeling)."""
    up = f'up{{job="{m.DCGM_JOB}"}}'
    gpu_nodes = f'max by ({m.DCGM_NODE}) ({m.KSM_NODE_CAPACITY}{{resource=~"{m.KSM_GPU_RESOURCES}"}}) > 0'
    silent = f"{gpu_nodes} unless on ({m.DCGM_NODE}) count by ({m.DCGM_NODE}) ({EXPORTER_SERIES})"
    node = "{{ $labels.node }}"
    return [
        _alert("GpuMetricsExporterDown", f"{up} == 0", "critical",
               f"DCGM exporter on {node} cannot be scraped: no GPU alert fires there", EXPORTER_WAIT),
        _alert("GpuMetricsAbsent", silent, "critical",
               f"GPU node {node} has no DCGM exporter series: no GPU alert fires there", EXPORTER_WAIT),
    ]  # fmt: skip


def queue_alerts() -> list[dict[str, Any]]:
    gang = f'sum by (cluster_queue) (increase({m.KUEUE_EVICTED_TOTAL}{{reason="PodsReadyTimeout"}}[{GANG_WINDOW}])) > 0'
    stalled = (
        f'sum by (cluster_queue) ({m.KUEUE_PENDING}{{status="active"}}) > 0 unless on (cluster_queue) '
        f"sum by (cluster_queue) (increase({m.KUEUE_ADMITTED_TOTAL}[{GANG_WINDOW}])) > 0"
    )
    return [
        _alert("KueueGangNotReady", gang, "warning",
               "Kueue evicted a workload of {{ $labels.cluster_queue }} whose pods were not all ready in time"),
        _alert("KueueQueueStalled", stalled, "warning",
               "{{ $labels.cluster_queue }} has pending workloads and admitted none for " + GANG_WINDOW, GANG_WINDOW),
    ]  # fmt: skip


def rule_groups(dcgm_exporter: bool) -> list[dict[str, Any]]:
    """The `spec.groups` of gpufleet's PrometheusRule (monitoring.coreos.com/v1) on a site that runs DCGM exporter
    or not (every GPU alert reads it)."""
    allocation = {
        "name": "gpufleet-gpu-allocation",
        "interval": f"{ALLOCATION_INTERVAL_MINUTES}m",
        "rules": recording_rules(dcgm_exporter),
    }
    health = [{"name": "gpufleet-gpu-health", "rules": gpu_alerts()}] if dcgm_exporter else []
    return [allocation, *health, {"name": "gpufleet-queues", "rules": queue_alerts()}]


def expressions() -> list[str]:
    """Every PromQL expression of the rules (those of a site with DCGM exporter, a superset)."""
    return [r["expr"] for g in rule_groups(dcgm_exporter=True) for r in g["rules"]]
