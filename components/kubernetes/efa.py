"""AWS EFA device plugin: advertises `vpc.amazonaws.com/efa` on the nodes of an EFA fabric.

EKS AL2023 / Bottlerocket accelerated AMIs carry the EFA host software but not the device plugin (EKS user
guide, device-management-efa). Chart `aws-efa-k8s-device-plugin` from https://aws.github.io/eks-charts
(aws/eks-charts `stable/aws-efa-k8s-device-plugin`, Chart.yaml at the pinned version); its values `nodeSelector` and
`tolerations` are merged into the DaemonSet (templates/daemonset.yaml), whose own affinity already limits it
to EFA-capable instance types. One release per fabric, selecting the fabric's nodes by
`model.conventions.FABRIC_LABEL` and tolerating exactly the GPU and tenant taints of the fabric's pools.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.kubernetes import helm, placement
from components.kubernetes.namespaces import EFA_PLUGIN_NAMESPACE
from model import versions
from model.conventions import FABRIC_LABEL
from model.spec import EfaFabric, Site


def efa_fabrics(site: Site) -> list[EfaFabric]:
    return [f for f in site.fabrics if isinstance(f, EfaFabric)]


def efa_plugin_values(site: Site, fabric: EfaFabric) -> dict[str, Any]:
    pools = [p for p in site.node_pools if p.fabric == fabric.name]
    return {
        "nodeSelector": {FABRIC_LABEL: fabric.name},
        "tolerations": placement.tolerations(pools),
    }


@dataclass(frozen=True)
class EfaDevicePluginArgs:
    site: Site
    fabric: EfaFabric
    namespace: pulumi.Resource  # the kube-system patch (namespaces.SystemNamespaces)


class EfaDevicePlugin(pulumi.ComponentResource):
    """The AWS EFA device plugin Helm release for one EFA fabric's nodes."""

    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: EfaDevicePluginArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:kubernetes:EfaDevicePlugin", name, None, opts)
        self.release = helm.release(
            f"{name}-release",
            versions.AWS_EFA_DEVICE_PLUGIN,
            name=f"efa-{args.fabric.name}",
            namespace=EFA_PLUGIN_NAMESPACE,
            create_namespace=False,
            values=efa_plugin_values(args.site, args.fabric),
            max_history=10,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[args.namespace]),
        )
        self.register_outputs({"status": self.release.status})
