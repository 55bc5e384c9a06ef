"""GpuStack: the GPU software stack of one site's cluster, chosen from the site and its fabrics.

- `kubernetes.gpu_stack: gpu-operator` -> GpuOperator (gpu_operator.py); `device-plugin` -> the standalone
  NvidiaDevicePlugin (device_plugin.py).
- Every EFA fabric (AWS) -> one EfaDevicePlugin (efa.py).
- Any InfiniBand / RoCE fabric (bare metal) -> NetworkOperator with its NicClusterPolicy (network_operator.py).
- Any rack-scale pool (an NVLink domain across nodes, model.dra) -> NVIDIA's DRA driver (dra_driver.py).
- The privileged system namespaces those need (namespaces.py), and nothing else.

Node Feature Discovery runs once per cluster: from the GPU Operator when it is installed, else from the
Network Operator when there is one, else from the device plugin's subchart (only when GFD needs it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi

from components.kubernetes.device_plugin import DevicePluginArgs, NvidiaDevicePlugin
from components.kubernetes.dra_driver import DraDriver, DraDriverArgs
from components.kubernetes.efa import EfaDevicePlugin, EfaDevicePluginArgs, efa_fabrics
from components.kubernetes.gpu_driver import rdma_fabrics
from components.kubernetes.gpu_operator import GpuOperator, GpuOperatorArgs
from components.kubernetes.namespaces import (
    DEVICE_PLUGIN_NAMESPACE,
    EFA_PLUGIN_NAMESPACE,
    SystemNamespaces,
    SystemNamespacesArgs,
)
from components.kubernetes.network_operator import NetworkOperator, NetworkOperatorArgs
from model import dra
from model.conventions import DRA_DRIVER_NAMESPACE, GPU_OPERATOR_NAMESPACE, NETWORK_OPERATOR_NAMESPACE
from model.spec import EfaFabric, EstateSpec, InfinibandFabric, RoceFabric, Site
from model.tags import Tags


@dataclass(frozen=True)
class GpuStackArgs:
    spec: EstateSpec
    site: Site
    tags: Tags
    after: Sequence[pulumi.Resource] = ()  # what the GPU Operator waits for (the metrics stack)


class GpuStack(pulumi.ComponentResource):
    """GPU Operator or device plugin, EFA device plugins, Network Operator, and their system namespaces."""

    def __init__(self, name: str, args: GpuStackArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:kubernetes:GpuStack", name, None, opts)
        self._name = name
        self._args = args
        site = args.site
        self.uses_operator = site.kubernetes.gpu_stack == "gpu-operator"
        # The schema gives each kind its fabrics: EFA on aws, InfiniBand / RoCE on bare metal.
        self.efa: list[EfaFabric] = efa_fabrics(site)
        self.rdma: list[InfinibandFabric | RoceFabric] = rdma_fabrics(site)
        self.namespaces = SystemNamespaces(
            f"{name}-namespaces", SystemNamespacesArgs(args.tags, self._namespaces()), self._child()
        )
        self.gpu_operator: GpuOperator | None = None
        self.device_plugin: NvidiaDevicePlugin | None = None
        self.efa_plugins: dict[str, EfaDevicePlugin] = {}
        self.network_operator: NetworkOperator | None = None
        self.dra_driver: DraDriver | None = None
        self._gpu_plugin()
        self._fabric_plugins()
        self._dra_driver()
        self.register_outputs({})

    def _child(self) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=self)

    def _namespaces(self) -> tuple[str, ...]:
        names = [GPU_OPERATOR_NAMESPACE if self.uses_operator else DEVICE_PLUGIN_NAMESPACE]
        if self.efa:
            names.append(EFA_PLUGIN_NAMESPACE)
        if self.rdma:
            names.append(NETWORK_OPERATOR_NAMESPACE)
        if dra.rack_scale_pools(self._args.site):
            names.append(DRA_DRIVER_NAMESPACE)
        return tuple(dict.fromkeys(names))

    def _gpu_plugin(self) -> None:
        a = self._args
        if self.uses_operator:
            ns = self.namespaces.resources[GPU_OPERATOR_NAMESPACE]
            self.gpu_operator = GpuOperator(
                f"{self._name}-gpu-operator", GpuOperatorArgs(a.spec, a.site, ns, a.after), self._child()
            )
            return
        ns = self.namespaces.resources[DEVICE_PLUGIN_NAMESPACE]
        self.device_plugin = NvidiaDevicePlugin(
            f"{self._name}-device-plugin",
            DevicePluginArgs(a.site, ns, nfd_elsewhere=bool(self.rdma)),
            self._child(),
        )

    def _fabric_plugins(self) -> None:
        """EFA device plugins for EFA fabrics (aws); the Network Operator for RDMA fabrics (bare metal)."""
        self._efa_plugins(self._args.site)
        self._network_operator(self._args.site)

    def _efa_plugins(self, site: Site) -> None:
        ns = self.namespaces.resources.get(EFA_PLUGIN_NAMESPACE)
        for fabric in self.efa:
            assert ns is not None  # _namespaces() adds it whenever there is an EFA fabric
            self.efa_plugins[fabric.name] = EfaDevicePlugin(
                f"{self._name}-efa-{fabric.name}", EfaDevicePluginArgs(site, fabric, ns), self._child()
            )

    def _network_operator(self, site: Site) -> None:
        if not self.rdma:
            return
        self.network_operator = NetworkOperator(
            f"{self._name}-network-operator",
            NetworkOperatorArgs(
                site,
                self._args.tags,
                self.namespaces.resources[NETWORK_OPERATOR_NAMESPACE],
                # The GPU Operator always runs NFD; the device plugin leaves it to this chart.
                nfd_elsewhere=self.uses_operator,
                nfd_release=self.gpu_operator.release if self.gpu_operator else None,
            ),
            self._child(),
        )

    def _dra_driver(self) -> None:
        if not dra.rack_scale_pools(self._args.site):
            return
        self.dra_driver = DraDriver(
            f"{self._name}-dra-driver",
            DraDriverArgs(self._args.site, self.namespaces.resources[DRA_DRIVER_NAMESPACE]),
            self._child(),
        )
