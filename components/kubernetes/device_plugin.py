"""Standalone NVIDIA device plugin (site.kubernetes.gpu_stack == "device-plugin").

For sites whose nodes already carry the driver and container toolkit and that do not want the operator. Key
names checked against NVIDIA/k8s-device-plugin `deployments/helm/nvidia-device-plugin/values.yaml` at tag
the pinned chart version (versions.NVIDIA_DEVICE_PLUGIN): `config.{map,default}`, `migStrategy`, `failOnInitError`,
`nodeSelector`, `affinity`, `tolerations`, `gfd.enabled`, `nfd.*` (subchart alias, enabled with gfd).

The same named configs as the operator (sharing.py) select time-slicing per pool by node label. This chart
does not partition GPUs: on MIG pools the layout must already be applied on the hosts (mig-parted during
bootstrap); the plugin advertises what it finds under `migStrategy`. GPU Feature Discovery is deployed when
some pool shares GPUs (it publishes `nvidia.com/gpu.sharing-strategy` and the MIG labels policies and users
select on), is rack-scale or spans NVLink domains (`nvidia.com/gpu.clique`, `gfd_needed`); it needs NFD, which the chart's subchart provides unless the Network Operator already does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.kubernetes import helm, placement, sharing
from components.kubernetes.namespaces import DEVICE_PLUGIN_NAMESPACE
from model import dra, versions
from model.spec import Site


def gfd_needed(site: Site) -> bool:
    """GFD runs when a pool shares GPUs, is rack-scale or spans NVLink domains: GFD labels each node
    `nvidia.com/gpu.clique` (its NVLink domain). The EKS user guide (ml-eks-nvidia-ultraserver) lists NFD and GFD as
    required on UltraServers, whose sample job's podAffinity selects on it; and Kueue drops a node missing a level's
    label from the flavor's capacity (kubernetes-sigs/kueue at versions.KUEUE, pkg/util/tas/node.go
    NodeMatchesFlavor)."""
    return bool(dra.rack_scale_pools(site)) or any(
        p.sharing.mode != "whole" or getattr(p, "nvlink_domain_nodes", 1) > 1 for p in site.node_pools
    )


def device_plugin_values(site: Site, *, nfd_elsewhere: bool) -> dict[str, Any]:
    """Helm values for the standalone plugin; `nfd_elsewhere` when another chart (Network Operator) runs NFD."""
    tolerations = placement.tolerations(site.node_pools)
    gfd = gfd_needed(site)
    return {
        "config": {"map": sharing.device_plugin_configs(site), "default": sharing.DEFAULT_DEVICE_PLUGIN_CONFIG},
        "migStrategy": site.kubernetes.mig_strategy,
        "failOnInitError": True,
        "nodeSelector": {},
        "affinity": placement.gpu_nodes_affinity(),
        "tolerations": tolerations,
        "devicePlugin": {"enabled": True},
        "gfd": {"enabled": gfd},
        "nfd": {"enabled": gfd and not nfd_elsewhere, "worker": {"tolerations": tolerations}},
    }


@dataclass(frozen=True)
class DevicePluginArgs:
    site: Site
    namespace: pulumi.Resource  # the kube-system patch (namespaces.SystemNamespaces)
    nfd_elsewhere: bool  # NFD comes from the Network Operator on this site


class NvidiaDevicePlugin(pulumi.ComponentResource):
    """The standalone NVIDIA device plugin Helm release (plus GFD and NFD when pools share GPUs)."""

    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: DevicePluginArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:kubernetes:NvidiaDevicePlugin", name, None, opts)
        self.release = helm.release(
            f"{name}-release",
            versions.NVIDIA_DEVICE_PLUGIN,
            name="nvidia-device-plugin",
            namespace=DEVICE_PLUGIN_NAMESPACE,
            create_namespace=False,
            values=device_plugin_values(args.site, nfd_elsewhere=args.nfd_elsewhere),
            max_history=10,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[args.namespace]),
        )
        self.register_outputs({"status": self.release.status})
