"""NVIDIA Network Operator and its NicClusterPolicy, for sites with InfiniBand or RoCE fabrics.

Chart `network-operator` (versions.NETWORK_OPERATOR) from the NGC Helm repository. Values and the
NicClusterPolicy (`mellanox.com/v1alpha1`, singleton `nic-cluster-policy`) are checked against
Mellanox/network-operator at the pinned tag: `deployment/network-operator/values.yaml`,
`api/v1alpha1/nicclusterpolicy_types.go` and `example/crs/mellanox.com_v1alpha1_nicclusterpolicy_cr*.yaml`.

- The policy's daemons run only on nodes of the site's RDMA fabrics (`model.conventions.FABRIC_LABEL`). They
  tolerate exactly those pools' GPU and tenant taints.
- The operator Deployment stays off GPU nodes.
- One NFD per cluster: the GPU Operator's (or the device plugin's) when present, else this chart's.
- Per-tenant IPoIB and SR-IOV networks and node policies belong to the bare-metal fabric component.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.kubernetes import helm, placement
from components.kubernetes.gpu_driver import rdma_fabrics
from model import versions
from model.conventions import FABRIC_LABEL, NETWORK_OPERATOR_NAMESPACE
from model.rdma import rdma_shared_resource_name, ufm_secret_name, uses_sriov
from model.spec import InfinibandFabric, Site
from model.tags import Tags

NIC_CLUSTER_POLICY = "nic-cluster-policy"
# nv-ipam's IPPool / CIDRPool CRDs ship with no chart: the operator applies them when it reconciles
# `spec.nvIpam` (manifests/state-nv-ipam-cni at the pinned tag) and reports that state in
# `status.appliedStates[].name` (crds/mellanox.com_nicclusterpolicies.yaml: state ready/notReady/ignore/error).
NV_IPAM_STATE = "state-nv-ipam-cni"
# pulumi-kubernetes' `pulumi.com/waitFor` annotation (4.18+; RFC 9535 JSONPath since 4.24, CHANGELOG.md) holds the
# policy's create and update until the nv-ipam state is ready, so objects of those CRDs can depend on the policy
# (creating one before its CRD fails "no matches for kind": pulumi/pulumi-kubernetes#1446, #1735).
NV_IPAM_READY = f"jsonpath={{.status.appliedStates[?(@.name=='{NV_IPAM_STATE}')].state}}=ready"
NV_IPAM_WAIT_SECONDS = 1200  # the state's DaemonSet pulls its image on every fabric node
# ib-kubernetes' GUID pool and update interval: the upstream defaults (Mellanox/network-operator at the pinned tag,
# example/crs/mellanox.com_v1alpha1_nicclusterpolicy_cr-full.yaml; Mellanox/ib-kubernetes pkg/config/config.go).
# The CRD requires the pool's ends (crds/mellanox.com_nicclusterpolicies.yaml, ibKubernetes.required).
GUID_POOL_START = "02:00:00:00:00:00:00:00"
GUID_POOL_END = "02:FF:FF:FF:FF:FF:FF:FF"
IB_KUBERNETES_UPDATE_SECONDS = 5
MELLANOX_VENDOR_ID = "15b3"
RDMA_HCA_MAX = 63  # pods sharing one HCA (the upstream examples' value)
DRAIN_TIMEOUT_SECONDS = 900


def needs_sriov_operator(site: Site) -> bool:
    """InfiniBand with `device_plugin: sriov`, and every RoCE fabric, use the chart's SR-IOV Network Operator
    (`sriovNetworkOperator.enabled`). It creates the VFs from SriovNetworkNodePolicies and runs its own SR-IOV
    device plugin, so the policy carries no `sriovDevicePlugin`: two would fight over the VFs."""
    return any(uses_sriov(f) for f in site.fabrics)


def network_operator_values(site: Site, *, nfd_elsewhere: bool) -> dict[str, Any]:
    values: dict[str, Any] = {
        "nfd": {"enabled": not nfd_elsewhere, "deployNodeFeatureRules": True},
        "sriovNetworkOperator": {"enabled": needs_sriov_operator(site)},
        "operator": {"affinity": placement.off_gpu_nodes_affinity()},
    }
    if not nfd_elsewhere:
        control_plane = {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}
        tolerations = [control_plane, *placement.tolerations(site.node_pools)]
        values["node-feature-discovery"] = {"worker": {"tolerations": tolerations}}
    return values


def _image(name: str) -> dict[str, str]:
    return {
        "image": name,
        "repository": versions.NETWORK_OPERATOR_REGISTRY,
        "version": versions.NETWORK_OPERATOR_COMPONENTS_TAG,
    }


def _ofed_driver() -> dict[str, Any]:
    """The DOCA-OFED driver container (versions.DOCA_DRIVER), upgraded one node at a time after a drain. Hosts carry
    no MOFED of their own, and the GPU Operator is told so (`driver.rdma.useHostMofed=false`, gpu_operator.py)."""
    return {
        "image": "doca-driver",
        "repository": versions.NETWORK_OPERATOR_REGISTRY,
        "version": versions.DOCA_DRIVER,
        "upgradePolicy": {
            "autoUpgrade": True,
            "maxParallelUpgrades": 1,
            "drain": {"enable": True, "force": False, "timeoutSeconds": DRAIN_TIMEOUT_SECONDS, "deleteEmptyDir": True},
        },
        "startupProbe": {"initialDelaySeconds": 10, "periodSeconds": 10},
        "livenessProbe": {"initialDelaySeconds": 30, "periodSeconds": 30},
        "readinessProbe": {"initialDelaySeconds": 10, "periodSeconds": 30},
    }


def rdma_shared_config(site: Site) -> dict[str, Any] | None:
    """The RDMA shared device plugin's configList: one resource per rdma-shared InfiniBand fabric
    (`rdma/shared_<fabric>`), selecting the fabric's HCAs by vendor 15b3 and `hca_device_ids`."""
    resources = [
        {
            "resourceName": rdma_shared_resource_name(f),
            "rdmaHcaMax": RDMA_HCA_MAX,
            "selectors": {"vendors": [MELLANOX_VENDOR_ID], "deviceIDs": list(f.hca_device_ids)},
        }
        for f in site.fabrics
        if isinstance(f, InfinibandFabric) and f.device_plugin == "rdma-shared"
    ]
    return {"configList": resources} if resources else None


def ib_kubernetes(fabric: InfinibandFabric) -> dict[str, Any]:
    """The policy's `ibKubernetes` (IBKubernetesSpec in api/v1alpha1/nicclusterpolicy_types.go at the pinned tag):
    the daemon that puts each pod's GUID in its tenant's partition through the fabric's UFM. The operator's
    Deployment reads UFM's address and credentials from the fabric's UFM Secret
    (manifests/state-ib-kubernetes/0070-deployment.yaml), which the fabric component creates."""
    return {
        **_image("ib-kubernetes"),
        "periodicUpdateSeconds": IB_KUBERNETES_UPDATE_SECONDS,
        "pKeyGUIDPoolRangeStart": GUID_POOL_START,
        "pKeyGUIDPoolRangeEnd": GUID_POOL_END,
        "ufmSecret": ufm_secret_name(fabric),
    }


def nic_cluster_policy_spec(site: Site) -> dict[str, Any]:
    """The NicClusterPolicy spec (api/v1alpha1/nicclusterpolicy_types.go at the pinned tag). Multus, the CNI plugins
    and NVIDIA IPAM always; IPoIB secondary networks when a fabric sets `ipoib`; ib-kubernetes for the fabric with
    partition keys (the rules allow one per site)."""
    fabrics = rdma_fabrics(site)
    names = [f.name for f in fabrics]
    pools = [p for p in site.node_pools if p.fabric in names]
    spec: dict[str, Any] = {
        "nodeAffinity": placement.require_labels(FABRIC_LABEL, names)["nodeAffinity"],
        "tolerations": placement.tolerations(pools),
        "ofedDriver": _ofed_driver(),
        "secondaryNetwork": {"multus": _image("multus-cni"), "cniPlugins": _image("plugins")},
        "nvIpam": {**_image("nvidia-k8s-ipam"), "enableWebhook": False},
    }
    if any(isinstance(f, InfinibandFabric) and f.ipoib for f in fabrics):
        spec["secondaryNetwork"]["ipoib"] = _image("ipoib-cni")
    partitioned = [f for f in fabrics if isinstance(f, InfinibandFabric) and f.partition_keys]
    if partitioned:
        spec["ibKubernetes"] = ib_kubernetes(partitioned[0])
    shared = rdma_shared_config(site)
    if shared is not None:
        spec["rdmaSharedDevicePlugin"] = {**_image("k8s-rdma-shared-dev-plugin"), "config": json.dumps(shared)}
    return spec


@dataclass(frozen=True)
class NetworkOperatorArgs:
    site: Site
    tags: Tags
    namespace: pulumi.Resource  # the network-operator namespace (namespaces.SystemNamespaces)
    nfd_elsewhere: bool  # NFD comes from the GPU Operator on this site
    nfd_release: pulumi.Resource | None = None  # the release that installs NFD's CRDs when nfd_elsewhere


class NetworkOperator(pulumi.ComponentResource):
    """The NVIDIA Network Operator Helm release and the cluster's NicClusterPolicy."""

    release: k8s.helm.v3.Release
    policy: k8s.apiextensions.CustomResource

    def __init__(self, name: str, args: NetworkOperatorArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:kubernetes:NetworkOperator", name, None, opts)
        self.release = helm.release(
            f"{name}-release",
            versions.NETWORK_OPERATOR,
            name="network-operator",
            namespace=NETWORK_OPERATOR_NAMESPACE,
            create_namespace=False,
            values=network_operator_values(args.site, nfd_elsewhere=args.nfd_elsewhere),
            max_history=10,
            timeout=900,
            # deployNodeFeatureRules needs the NodeFeatureRule CRD, which the NFD-carrying release installs.
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[args.namespace, *([args.nfd_release] if args.nfd_release else [])]
            ),
        )
        # The CRD arrives with the chart, so the policy waits for the release; the policy in turn is done only
        # once the operator has applied nv-ipam's CRDs (NV_IPAM_READY), which IPPools depend on.
        self.policy = k8s.apiextensions.CustomResource(
            f"{name}-nic-cluster-policy",
            api_version="mellanox.com/v1alpha1",
            kind="NicClusterPolicy",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=NIC_CLUSTER_POLICY,
                labels=args.tags.labels(),
                annotations={
                    "pulumi.com/waitFor": NV_IPAM_READY,
                    "pulumi.com/timeoutSeconds": str(NV_IPAM_WAIT_SECONDS),
                },
            ),
            spec=nic_cluster_policy_spec(args.site),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.release]),
        )
        self.register_outputs({"status": self.release.status})
