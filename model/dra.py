"""Rack-scale NVLink domains through NVIDIA's DRA driver: which pools need it, its device classes and objects.

- A pool is rack-scale when one NVLink domain spans its nodes (an UltraServer type, or owned NVL72 servers). Its
  pods reach GPUs of other nodes over multi-node NVLink only through IMEX channels, which the driver's
  ComputeDomains hand out.
- ComputeDomains are on and GPU allocation off: GPUs stay with the device plugin, as the EKS user guide
  recommends until the driver's GPU allocation leaves experimental.
- Kueue counts DRA claims through `deviceClassMappings`; a claim of an unmapped class is inadmissible.
- The objects are `resource.k8s.io/v1`, served from Kubernetes 1.34, so rack-scale pools need 1.34 or later.
"""

from __future__ import annotations

from typing import Any

from model import conventions, versions
from model.spec.aws import AwsNodePool
from model.spec.sites import NodePool, Site

# The driver's DeviceClasses (templates/deviceclass-*.yaml of nvidia-dra-driver-gpu at the pinned tag,
# versions.NVIDIA_DRA_DRIVER): IMEX channel 0 of a ComputeDomain, the IMEX daemon the driver runs per node, and
# whole GPUs (off here).
CHANNEL_DEVICE_CLASS = "compute-domain-default-channel.nvidia.com"
DAEMON_DEVICE_CLASS = "compute-domain-daemon.nvidia.com"
GPU_DEVICE_CLASS = "gpu.nvidia.com"
# ComputeDomain CRD group and version (crds/resource.nvidia.com_computedomains.yaml at the pinned tag).
COMPUTE_DOMAIN_API = "resource.nvidia.com/v1beta1"
# The API the driver's DeviceClasses and a pod's claim templates use; GA (and served by default) from 1.34
# (https://kubernetes.io/docs/concepts/scheduling-eviction/dynamic-resource-allocation/, "resource.k8s.io/v1").
RESOURCE_API = "resource.k8s.io/v1"
MIN_KUBERNETES = (1, 34)
# The quota name of IMEX channels in Kueue, beside nvidia.com/gpu.
IMEX_CHANNEL_RESOURCE = f"{conventions.LABEL_PREFIX}imex-channel"


def rack_scale(pool: NodePool) -> bool:
    """The pool's NVLink domain spans nodes: an EC2 UltraServer type, or bare-metal servers whose inventory joins
    them in NVLink domains (`nvlink_domain_nodes` above 1; model.rules.baremetal checks the GPU model can)."""
    if isinstance(pool, AwsNodePool):
        return pool.instance.rack_scale
    return pool.nvlink_domain_nodes > 1


def domain_gpus(pool: NodePool) -> int:
    """GPUs of the NVLink domain a pool's nodes join. A p6e-gb200 UltraServer is an x72 (18 instances, 72 GPUs) or
    an x36 (9 instances, 36 GPUs; EKS user guide ml-eks-nvidia-ultraserver): a pool whose max is not whole x72s holds
    an x36, so its domain is taken as the x36's (the smaller, which a gang must fit)."""
    if not isinstance(pool, AwsNodePool):
        return 0  # bare-metal NVLink domains are not modelled yet
    full = pool.instance.nvlink_domain_gpus
    if not rack_scale(pool):
        return full
    per_node = pool.instance.gpu_count
    x72_nodes = full // per_node
    return full if pool.scaling.max % x72_nodes == 0 else full // 2


def rack_scale_pools(site: Site) -> list[NodePool]:
    return [p for p in site.node_pools if rack_scale(p)]


def kubernetes_too_old(version: str) -> bool:
    major, minor = (int(x) for x in versions.kubernetes_minor(version).split("."))
    return (major, minor) < MIN_KUBERNETES


def device_class_mappings() -> list[dict[str, Any]]:
    """Kueue `resources.deviceClassMappings` (config.kueue.x-k8s.io/v1beta2 DeviceClassMapping,
    apis/config/v1beta2/configuration_types.go at the pinned tag, versions.KUEUE). Kueue refuses a workload whose
    claim names an unmapped class ("DeviceClass ... is not mapped in DRA configuration", pkg/dra/claims.go), and
    its DRA integration is on by default (feature gate KueueDRAIntegration, beta; the older
    DynamicResourceAllocation gate is gone at that tag, CHANGELOG-0.19.md). DRA-allocated GPUs count as nvidia.com/gpu, so quotas count GPUs whichever way they are claimed."""
    return [
        {"name": IMEX_CHANNEL_RESOURCE, "deviceClassNames": [CHANNEL_DEVICE_CLASS]},
        {"name": conventions.GPU_RESOURCE, "deviceClassNames": [GPU_DEVICE_CLASS]},
    ]


def channel_claim_template(name: str, namespace: str) -> dict[str, Any]:
    """A ResourceClaimTemplate for one IMEX channel of the driver's default-channel class, as a pod names it."""
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "spec": {
                "devices": {"requests": [{"name": "channel", "exactly": {"deviceClassName": CHANNEL_DEVICE_CLASS}}]}
            }
        },
    }


def compute_domain(name: str, namespace: str, claim_template: str) -> dict[str, Any]:
    """A ComputeDomain whose channel claim template the driver creates under `claim_template` (numNodes 0: elastic,
    from driver 25.8.0; EKS user guide ml-eks-nvidia-ultraserver)."""
    return {
        "apiVersion": COMPUTE_DOMAIN_API,
        "kind": "ComputeDomain",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": claim_template}}},
    }


def claim_channel(pod: dict[str, Any], domain: dict[str, Any]) -> None:
    """Pod spec `pod` claims an IMEX channel from the claim template ComputeDomain `domain` names (the driver's
    controller creates it; NVIDIA/k8s-dra-driver-gpu README at versions.NVIDIA_DRA_DRIVER), and each of its
    containers uses the claim."""
    template = domain["spec"]["channel"]["resourceClaimTemplate"]["name"]
    pod["resourceClaims"] = [{"name": "imex", "resourceClaimTemplateName": template}]
    for container in pod["containers"]:
        container.setdefault("resources", {})["claims"] = [{"name": "imex"}]
