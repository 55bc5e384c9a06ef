"""Bare-metal fabrics as NVIDIA Network Operator objects: InfiniBand (IPoIB, pkey-isolated SR-IOV) and RoCE.

- InfiniBand, per tenant with a partition key: a network on the fabric's SR-IOV VFs with that pkey, so the
  tenant's pods reach only each other. ib-kubernetes adds the pods to it through UFM; its Secret is made here.
- InfiniBand with `ipoib`: an IPoIBNetwork per tenant without a partition key, all in the default partition.
- InfiniBand with `device_plugin: sriov`: SriovNetworkNodePolicies (linkType IB) that create the VFs.
- RoCE: a SriovNetworkNodePolicy (linkType ETH) and a SriovNetwork per tenant, with the `rdma` meta plugin.
- Per fabric, one nv-ipam IPPool gives every network its addresses, a fixed block per node.

Nodes are selected by the fabric label their pool carries (model.conventions.FABRIC_LABEL). The Network
Operator and its NicClusterPolicy belong to the cluster's GPU stack (components/kubernetes). Kinds and fields
follow Mellanox/network-operator-docs; each object cites its section.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

import pulumi
import pulumi_kubernetes as k8s
from pulumi_kubernetes.apiextensions import CustomResource

from model.conventions import FABRIC_LABEL, NETWORK_OPERATOR_NAMESPACE
from model.queues import tenants_on_site
from model.rdma import SRIOV_RESOURCE_PREFIX, sriov_network, sriov_resource_name, ufm_secret_name
from model.spec import BaremetalSite, EstateSpec, InfinibandFabric, RoceFabric, Ufm

MELLANOX_VENDOR = "15b3"
T = TypeVar("T")  # what a stack secret is read as: pulumi.Output[str] in the program
NO_TENANT_NAMESPACE = "default"  # where a fabric's network goes in an estate without tenants


def ipam(fabric: InfinibandFabric | RoceFabric) -> str:
    """IPAM config of every network on a fabric: the fabric's nv-ipam pool (named after the fabric)."""
    return json.dumps({"type": "nv-ipam", "poolName": fabric.name}, sort_keys=True)


def pkey_network_config(fabric: InfinibandFabric, tenant: str, pkey: str) -> str:
    """CNI config of a tenant's partition: ib-sriov with the pkey, managed by ib-kubernetes, plus rdma isolation."""
    name = f"{fabric.name}-{tenant}"
    return json.dumps(
        {
            "cniVersion": "0.3.1",
            "name": name,
            "plugins": [
                {
                    "type": "ib-sriov",
                    "pkey": pkey,
                    "link_state": "enable",
                    "ibKubernetesEnabled": True,
                    "ipam": json.loads(ipam(fabric)),
                },
                {"type": "rdma"},
            ],
        },
        sort_keys=True,
    )


def ufm_secret_data(ufm: Ufm, secret: Callable[[str], T]) -> dict[str, str | T]:
    """The UFM Secret's entries, by the keys ib-kubernetes' Deployment reads (Mellanox/network-operator at the
    pinned tag, manifests/state-ib-kubernetes/0070-deployment.yaml; UFM_PORT and UFM_CERTIFICATE are optional
    there). No UFM_HTTP_SCHEMA: ib-kubernetes then speaks HTTPS (Mellanox/ib-kubernetes, pkg/sm/plugins/ufm)."""
    data: dict[str, str | T] = {
        "UFM_ADDRESS": ufm.address,
        "UFM_USERNAME": secret(ufm.username_config),
        "UFM_PASSWORD": secret(ufm.password_config),
    }
    if ufm.port is not None:
        data["UFM_PORT"] = str(ufm.port)
    if ufm.ca_certificate_config is not None:
        data["UFM_CERTIFICATE"] = secret(ufm.ca_certificate_config)
    return data


@dataclass(frozen=True)
class FabricArgs:
    spec: EstateSpec
    site: BaremetalSite
    fabric: InfinibandFabric | RoceFabric
    # Every object waits for what creates its CRD. IPoIBNetwork and NetworkAttachmentDefinition: the
    # network-operator chart's crds/. SriovNetworkNodePolicy and SriovNetwork: the sriov-network-operator
    # subchart's crds/. IPPool: the operator applies it at run time, so the NicClusterPolicy, which completes only
    # once that state is ready (components/kubernetes/network_operator.py, NV_IPAM_READY).
    chart_crds: pulumi.Resource  # the Network Operator release (its crds/ and the SR-IOV subchart's)
    runtime_crds: pulumi.Resource  # the NicClusterPolicy, done once the operator has applied nv-ipam's CRDs
    secret: Callable[[str], pulumi.Output[str]]  # a stack secret by config key (UFM's credentials)
    namespaces: Mapping[str, pulumi.Resource] = field(default_factory=dict)  # tenant -> its Namespace here


class BaremetalFabric(pulumi.ComponentResource):
    """Network Operator objects of one InfiniBand or RoCE fabric (the module docstring lists them)."""

    def __init__(self, name: str, args: FabricArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:baremetal:Fabric", name, None, opts)
        self._name_prefix = name
        self._args = args
        self._child_opts = pulumi.ResourceOptions(parent=self, depends_on=[args.chart_crds])
        tenants = [t.name for t in tenants_on_site(args.spec, args.site)]
        fabric = args.fabric
        self._ip_pool(fabric)
        if isinstance(fabric, InfinibandFabric):
            self._infiniband(fabric, tenants)
        else:
            self._roce(fabric, tenants)
        self.register_outputs({})

    # -- InfiniBand ---------------------------------------------------------------------------------------
    def _infiniband(self, fabric: InfinibandFabric, tenants: list[str]) -> None:
        if fabric.device_plugin == "sriov":
            for device_id in fabric.hca_device_ids:
                self._node_policy(f"ib-{device_id}", fabric, {"vendor": MELLANOX_VENDOR, "deviceID": device_id}, "IB")
        if fabric.ufm is not None:
            self._ufm_secret(fabric, fabric.ufm)
        for tenant, pkey in sorted(fabric.partition_keys.items()):
            self._pkey_network(fabric, tenant, pkey)
        if fabric.ipoib:
            # every tenant without a partition of its own shares the default partition
            shared = [t for t in tenants if t not in fabric.partition_keys] if tenants else [NO_TENANT_NAMESPACE]
            for namespace in shared:
                self._ipoib_network(fabric, namespace)

    def _ufm_secret(self, fabric: InfinibandFabric, ufm: Ufm) -> None:
        """The Secret ib-kubernetes reads UFM's address and credentials from (ufm_secret_data). The credentials are
        string_data from secret Outputs, so they never appear in plain inputs. It waits for the operator's release,
        which waits for the namespace; ib-kubernetes starts once it exists."""
        k8s.core.v1.Secret(
            f"{self._name_prefix}-ufm",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=ufm_secret_name(fabric), namespace=NETWORK_OPERATOR_NAMESPACE, labels={FABRIC_LABEL: fabric.name}
            ),
            type="Opaque",
            string_data=ufm_secret_data(ufm, self._args.secret),
            opts=self._child_opts,
        )

    def _pkey_network(self, fabric: InfinibandFabric, tenant: str, pkey: str) -> None:
        """A NetworkAttachmentDefinition (`k8s.cni.cncf.io/v1`) in the tenant's namespace, of type `ib-sriov` with a
        `pkey`. ib-kubernetes adds the pods' GUIDs to the partition through UFM (network-operator-docs, "Network
        Operator Deployment with InfiniBand ... ib-kubernetes")."""
        CustomResource(
            f"{self._name_prefix}-{tenant}-pkey",
            api_version="k8s.cni.cncf.io/v1",
            kind="NetworkAttachmentDefinition",
            metadata={
                "name": sriov_network(fabric, tenant),
                "namespace": tenant,
                "annotations": {
                    "k8s.v1.cni.cncf.io/resourceName": f"{SRIOV_RESOURCE_PREFIX}/{sriov_resource_name(fabric)}"
                },
                "labels": {FABRIC_LABEL: fabric.name},
            },
            spec={"config": pkey_network_config(fabric, tenant, pkey)},
            opts=self._in_namespace(tenant),
        )

    def _ipoib_network(self, fabric: InfinibandFabric, namespace: str) -> None:
        """An IPoIBNetwork (`mellanox.com/v1alpha1`, cluster-scoped: networkNamespace, master, ipam;
        network-operator-docs, IPoIBNetwork CRD). `master` names one host interface for every node, so each
        server's preflight checks it has it."""
        assert fabric.ipoib_interface is not None  # the rules require it with ipoib (model/rules/baremetal.py)
        CustomResource(
            f"{self._name_prefix}-{namespace}-ipoib",
            api_version="mellanox.com/v1alpha1",
            kind="IPoIBNetwork",
            metadata={"name": f"{fabric.name}-ipoib-{namespace}", "labels": {FABRIC_LABEL: fabric.name}},
            spec={
                "networkNamespace": namespace,
                "master": fabric.ipoib_interface,
                "ipam": ipam(fabric),
            },
            opts=self._in_namespace(namespace),
        )

    # -- RoCE -----------------------------------------------------------------------------------------------
    def _roce(self, fabric: RoceFabric, tenants: list[str]) -> None:
        """SriovNetworkNodePolicy and SriovNetwork (`sriovnetwork.openshift.io/v1`, in the operator's namespace;
        network-operator-docs, "Host Device Network"). The operator writes each SriovNetwork's
        NetworkAttachmentDefinition into the tenant's namespace."""
        self._node_policy("roce", fabric, {"vendor": MELLANOX_VENDOR, "pfNames": list(fabric.interfaces)}, "ETH")
        for namespace in tenants or [NO_TENANT_NAMESPACE]:
            CustomResource(
                f"{self._name_prefix}-{namespace}-roce",
                api_version="sriovnetwork.openshift.io/v1",
                kind="SriovNetwork",
                metadata={
                    "name": sriov_network(fabric, namespace),
                    "namespace": NETWORK_OPERATOR_NAMESPACE,
                    "labels": {FABRIC_LABEL: fabric.name},
                },
                spec={
                    "networkNamespace": namespace,
                    "resourceName": sriov_resource_name(fabric),
                    "ipam": ipam(fabric),
                    "metaPlugins": json.dumps({"type": "rdma"}),
                },
                opts=self._in_namespace(namespace),
            )

    # -- shared -------------------------------------------------------------------------------------------
    def _in_namespace(self, tenant: str) -> pulumi.ResourceOptions:
        """After the chart's CRDs and, for a tenant's network, the tenant's Namespace on this cluster. Networks go
        only to tenants with quota on the site: the ones that have a namespace here."""
        namespace = self._args.namespaces.get(tenant)
        after = [self._args.chart_crds, *([namespace] if namespace is not None else [])]
        return pulumi.ResourceOptions(parent=self, depends_on=after)

    def _ip_pool(self, fabric: InfinibandFabric | RoceFabric) -> None:
        """An NVIDIA IPAM IPPool (`nv-ipam.nvidia.com/v1alpha1`: subnet, perNodeBlockSize, nodeSelector). The
        cluster's NicClusterPolicy deploys nv-ipam, not whereabouts (components/kubernetes/network_operator.py).
        The block size is the fabric's `addresses_per_node`, never derived from the server count: a server added
        to the fabric changes no other node's block (model/rules/baremetal.py says why it must not)."""
        CustomResource(
            f"{self._name_prefix}-ippool",
            api_version="nv-ipam.nvidia.com/v1alpha1",
            kind="IPPool",
            metadata={
                "name": fabric.name,
                "namespace": NETWORK_OPERATOR_NAMESPACE,
                "labels": {FABRIC_LABEL: fabric.name},
            },
            spec={
                "subnet": fabric.address_range,
                "perNodeBlockSize": fabric.addresses_per_node,
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": FABRIC_LABEL, "operator": "In", "values": [fabric.name]}]}
                    ]
                },
            },
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self._args.chart_crds, self._args.runtime_crds]),
        )

    def _node_policy(
        self, suffix: str, fabric: InfinibandFabric | RoceFabric, nic_selector: dict[str, object], link_type: str
    ) -> None:
        vfs = fabric.vfs_per_port if isinstance(fabric, InfinibandFabric) else fabric.vfs_per_interface
        CustomResource(
            f"{self._name_prefix}-{suffix}-policy",
            api_version="sriovnetwork.openshift.io/v1",
            kind="SriovNetworkNodePolicy",
            metadata={
                "name": f"{fabric.name}-{suffix}",
                "namespace": NETWORK_OPERATOR_NAMESPACE,
                "labels": {FABRIC_LABEL: fabric.name},
            },
            spec={
                "resourceName": sriov_resource_name(fabric),
                "nodeSelector": {FABRIC_LABEL: fabric.name},
                "nicSelector": nic_selector,
                "linkType": link_type,
                "isRdma": True,
                "numVfs": vfs,
                "deviceType": "netdevice",
                "priority": 90,
            },
            opts=self._child_opts,
        )
