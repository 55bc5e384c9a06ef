"""NVIDIA GPU Operator: one Helm release whose values are derived from the site and its pools.

Key names are checked against NVIDIA/gpu-operator `deployments/gpu-operator/values.yaml` and
`templates/{clusterpolicy,plugin_config,mig_config}.yaml` at the pinned tag (versions.GPU_OPERATOR).

- Where the node image ships the driver and toolkit (EKS), the operator installs neither.
- On bare metal the operator installs the driver by default, through NVIDIADriver resources (gpu_driver.py).
  It upgrades one node at a time, after draining it.
- With `driver_managed_by: host` the host image brings the driver, and the operator still installs the toolkit.
- The preflight refuses a host NVIDIA module where the operator owns the driver. It checks the host driver's
  version with nvidia-smi where the host owns it.
- Operands run on GPU nodes only, and the operator itself stays off them.
- Device-plugin health checks stay on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.kubernetes import gpu_driver, helm, monitoring, placement, sharing
from components.kubernetes.gpu_driver import gds_enabled
from model import kinds, versions
from model.conventions import GPU_OPERATOR_NAMESPACE
from model.spec import EstateSpec, Site

DEVICE_PLUGIN_CONFIGMAP = "gpufleet-device-plugin-configs"
MIG_PARTED_CONFIGMAP = "gpufleet-mig-parted-config"


def gpu_operator_values(spec: EstateSpec, site: Site) -> dict[str, Any]:
    """Helm values for the GPU Operator on `site` (never written by users)."""
    k = site.kubernetes
    tolerations = placement.tolerations(site.node_pools)
    return {
        "nfd": {"enabled": True},
        "node-feature-discovery": {"worker": {"tolerations": _nfd_worker_tolerations(tolerations)}},
        "psa": {"enabled": False},  # gpufleet labels the namespace PSA-privileged (namespaces.py)
        # Helm never upgrades a chart's crds/, so the chart's pre-upgrade hook Job applies the new ClusterPolicy /
        # NVIDIADriver CRDs (`operator.upgradeCRD`, templates/upgrade_crd.yaml).
        "operator": {"affinity": placement.off_gpu_nodes_affinity(), "upgradeCRD": True},
        # The operator deploys operands only to nodes labelled `nvidia.com/gpu.present=true`
        # (controllers/state_manager.go), which every pool sets (model.nodes); the chart has no node selector for
        # operands (`daemonsets` has none). So the values add only the taints placement.tolerations names.
        "daemonsets": {"tolerations": tolerations},
        "mig": {"strategy": k.mig_strategy},
        "driver": gpu_driver.driver_values(site),
        "toolkit": {"enabled": _toolkit_enabled(site)},
        "devicePlugin": {
            "enabled": True,
            "env": [],  # health checks on: never DP_DISABLE_HEALTHCHECKS
            "config": {
                "create": True,
                "name": DEVICE_PLUGIN_CONFIGMAP,
                "default": sharing.DEFAULT_DEVICE_PLUGIN_CONFIG,
                "data": sharing.device_plugin_configs(site),
            },
        },
        "dcgmExporter": _dcgm_exporter(site),
        "gfd": {"enabled": True},
        "migManager": {
            "enabled": True,
            "config": {
                "create": True,
                "name": MIG_PARTED_CONFIGMAP,
                "default": sharing.MIG_DISABLED,
                "data": {"config.yaml": sharing.mig_parted_config(spec, site)},
            },
        },
        # GPUDirect Storage only where it can pay off: the GDS-capable clients of Lustre / GPFS / WEKA read over
        # RDMA; NFS and object tiers gain nothing from nvidia-fs.
        "gds": {"enabled": gds_enabled(site)},
    }


def _dcgm_exporter(site: Site) -> dict[str, Any]:
    values: dict[str, Any] = {
        "enabled": True,
        "serviceMonitor": monitoring.dcgm_service_monitor(site.kubernetes.monitoring),
        "enablePodLabels": False,  # both need a cluster-wide pod reader (check P7)
        "enablePodUID": False,
    }
    if (config := monitoring.dcgm_metrics_config(site.kubernetes.monitoring)) is not None:
        values["config"] = config
    return values


def _toolkit_enabled(site: Site) -> bool:
    """The operator installs the container toolkit except where the node image ships it (EKS AL2023 NVIDIA AMIs
    ship the driver and the toolkit: EKS best practices, aiml)."""
    return not kinds.of(site).image_ships_toolkit


def _nfd_worker_tolerations(gpu_tolerations: list[dict[str, str]]) -> list[dict[str, str]]:
    control_plane = {
        "key": "node-role.kubernetes.io/control-plane",
        "operator": "Equal",
        "value": "",
        "effect": "NoSchedule",
    }
    return [control_plane, *gpu_tolerations]


@dataclass(frozen=True)
class GpuOperatorArgs:
    spec: EstateSpec
    site: Site
    namespace: pulumi.Resource  # the gpu-operator namespace (namespaces.SystemNamespaces)
    # Installed before the operator: the metrics stack, whose ServiceMonitor CRD the operator checks once per
    # reconcile and otherwise skips DCGM exporter's ServiceMonitor (controllers/object_controls.go at the pinned tag).
    after: Sequence[pulumi.Resource] = ()


class GpuOperator(pulumi.ComponentResource):
    """The NVIDIA GPU Operator Helm release (ClusterPolicy, operands, device-plugin and MIG ConfigMaps)."""

    release: k8s.helm.v3.Release
    fabric_drivers: dict[str, k8s.apiextensions.CustomResource]

    def __init__(self, name: str, args: GpuOperatorArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:kubernetes:GpuOperator", name, None, opts)
        self.release = helm.release(
            f"{name}-release",
            versions.GPU_OPERATOR,
            name="gpu-operator",
            namespace=GPU_OPERATOR_NAMESPACE,
            create_namespace=False,
            values=gpu_operator_values(args.spec, args.site),
            # Helm validates the new manifests against the old CRDs before the upgrade-CRD hook runs, hence
            # "requires --disable-openapi-validation" (the chart's values.yaml, `operator.upgradeCRD`).
            disable_openapi_validation=True,
            max_history=10,
            timeout=900,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[args.namespace, *args.after]),
        )
        # NVIDIADriver's CRD comes with the chart (crds/), so the fabric drivers wait for the release.
        self.fabric_drivers = {
            driver: k8s.apiextensions.CustomResource(
                f"{name}-driver-{driver}",
                api_version="nvidia.com/v1alpha1",
                kind="NVIDIADriver",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=driver),
                spec=spec,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[self.release]),
            )
            for driver, spec in gpu_driver.fabric_driver_specs(args.site).items()
        }
        self.register_outputs({"status": self.release.status})
