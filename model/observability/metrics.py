"""The metric names gpufleet's rules and dashboards read, each from the exporter that serves it at its pin.

- DCGM exporter (the GPU Operator's): the fields of the metrics file gpufleet gives it. The operator's default is
  the image's etc/dcp-metrics-included.csv (NVIDIA/gpu-operator at versions.GPU_OPERATOR, internal/state/dcgm_exporter.go
  `dcgmExporterDefaultCollectors`), which leaves ECC, throttling and NVLink error counters commented out.
  gpufleet's file keeps that default and turns those on, and the exporter's XID count.
- The exporter maps each GPU to the pod using it (DCGM_EXPORTER_KUBERNETES in assets/state-dcgm-exporter/
  0800_daemonset.yaml at the same tag) as labels `pod`, `namespace`, `container`. Prometheus renames them to
  `exported_pod` and `exported_namespace`, since the scrape's own target labels have those names and the
  ServiceMonitor keeps honorLabels off.
- kube-state-metrics v2.20.0 (chart 8.4.0's appVersion) and Kueue's controller (versions.KUEUE).
"""

from __future__ import annotations

from model import conventions

# NVIDIA/dcgm-exporter etc/dcp-metrics-included.csv at tag 4.5.3-4.8.2 (the newest tag published; the operator's
# image is 4.6.0-4.8.3): the enabled lines, then the commented ones gpufleet enables. (field, Prometheus type, help)
DCGM_DEFAULT_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %)."),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB)."),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "Total number of NVLink bandwidth counters for all lanes."),
    ("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU License status"),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors"),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors"),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed"),
    ("DCGM_FI_DRIVER_VERSION", "label", "Driver Version"),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active."),
    ("DCGM_FI_PROF_DRAM_ACTIVE", "gauge", "Ratio of cycles the device memory interface is active."),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", "The rate of data transmitted over the PCIe bus in bytes per second."),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", "The rate of data received over the PCIe bus in bytes per second."),
)
DCGM_HEALTH_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("DCGM_FI_DEV_THERMAL_VIOLATION", "counter", "Throttling duration due to thermal constraints (in ns)."),
    ("DCGM_FI_DEV_POWER_VIOLATION", "counter", "Throttling duration due to power constraints (in ns)."),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors."),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors."),
    ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink flow-control CRC errors."),
    ("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink data CRC errors."),
    ("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink retries."),
    ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink recovery errors."),
    # An exporter field, commented out in etc/default-counters.csv (not in dcp-metrics-included.csv) at the tag above.
    # It counts each XID DCGM saw in the last window, one series per `xid`, or is one series of 0 without `xid`
    # (internal/pkg/collector/expcollector.go). Its count goes back down, so it is typed a gauge here, as the
    # exporter's own output types it (NVIDIA/dcgm-exporter pull request #239).
    ("DCGM_EXP_XID_ERRORS_COUNT", "gauge", "reported XIDs during last window"),
)
DCGM_FIELDS = (*DCGM_DEFAULT_FIELDS, *DCGM_HEALTH_FIELDS)
# DCGM_FI_DEV_XID_ERRORS holds the last XID until a driver reset or exporter restart (NVIDIA/dcgm-exporter issues
# #500, #190; NVIDIA/DCGM #277): alerts read the count instead. Its window is the exporter's default
# `--xid-count-window-size`, 300000 ms (pkg/cmd/app.go); the GPU Operator sets no other.
DCGM_XID_COUNT = "DCGM_EXP_XID_ERRORS_COUNT"
DCGM_XID_WINDOW = "5m"
DCGM_CONFIGMAP = "gpufleet-dcgm-metrics"
# The `job` of the exporter's targets: its ServiceMonitor takes it from the Service's `app` label (NVIDIA/gpu-operator
# at versions.GPU_OPERATOR, assets/state-dcgm-exporter/0500_service_monitor.yaml `jobLabel: app`, 0400_service.yaml).
DCGM_JOB = "nvidia-dcgm-exporter"  # the GPU Operator's `dcgmExporter.config.name`
# Where a GPU's workload namespace lands (see the docstring); `node` is set by the ServiceMonitor's relabeling.
DCGM_WORKLOAD_NAMESPACE = "exported_namespace"
DCGM_NODE = "node"
# The DCGM ServiceMonitor's scrape interval (the GPU Operator chart's default `dcgmExporter.serviceMonitor.interval`,
# set explicitly): the used rule's one-minute average holds about four samples.
DCGM_SCRAPE_SECONDS = 15

# kubernetes/kube-state-metrics v2.20.0 docs/metrics/cluster/node-metrics.md and workload/pod-metrics.md. Resource
# and label names are sanitised to [a-zA-Z0-9_] (internal/store/utils.go, SanitizeLabelName).
KSM_POD_REQUESTS = "kube_pod_container_resource_requests"
# Same labels as the app containers' (`resource`, `container`, `node`, `uid`), from spec.initContainers.
KSM_POD_INIT_REQUESTS = "kube_pod_init_container_resource_requests"
# One series per init container with a status; `restart_policy` is `Always` for a sidecar, empty otherwise
# (internal/store/pod.go, createPodInitContainerInfoFamilyGenerator).
KSM_POD_INIT_INFO = "kube_pod_init_container_info"
KSM_POD_PHASE = "kube_pod_status_phase"
KSM_NODE_LABELS = "kube_node_labels"
KSM_NODE_CAPACITY = "kube_node_status_capacity"  # labels node, resource, unit"
KSM_GPU_RESOURCES = r"nvidia_com_gpu|nvidia_com_mig_.+"  # nvidia.com/gpu and the mixed strategy's nvidia.com/mig-*


def ksm_label(key: str) -> str:
    """kube_node_labels' label for the node label `key` (`label_` + the sanitised key)."""
    return "label_" + "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in key)


POOL_NODE_LABEL = ksm_label(conventions.POOL_LABEL)
# kube-state-metrics exports no node label unless allowed (`--metric-labels-allowlist`; the chart's
# `metricLabelsAllowlist`).
KSM_LABELS_ALLOWLIST = [f"nodes=[{conventions.POOL_LABEL}]"]

# kubernetes-sigs/kueue pkg/metrics/metrics.go at versions.KUEUE (subsystem `kueue`). ClusterQueues are named after
# tenants and ResourceFlavors after pools (model.queues), so `cluster_queue` is a tenant and `flavor` a pool.
KUEUE_PENDING = "kueue_pending_workloads"  # labels cluster_queue, status (active | inadmissible)
KUEUE_ADMITTED_ACTIVE = "kueue_admitted_active_workloads"
KUEUE_ADMITTED_TOTAL = "kueue_admitted_workloads_total"
KUEUE_EVICTED_TOTAL = "kueue_evicted_workloads_total"  # label reason, e.g. PodsReadyTimeout
KUEUE_RESOURCE_USAGE = "kueue_cluster_queue_resource_usage"  # with metrics.enableClusterQueueResources
KUEUE_GPU_RESOURCES = r"nvidia.com/gpu|nvidia.com/mig-.+"


def dcgm_metrics_csv() -> str:
    """The DCGM exporter's metrics file (`dcgm-metrics.csv`): one `field, type, help` line per field."""
    lines = ["# gpufleet: DCGM exporter's default fields, with ECC, throttling, NVLink error and XID counts"]
    lines += [f"{field}, {kind}, {help_text}" for field, kind, help_text in DCGM_FIELDS]
    return "\n".join(lines) + "\n"
