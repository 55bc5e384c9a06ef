"""Pure facts of an AWS site: its EKS cluster's name and kubeconfig, and the tags its burst groups are found by."""

from __future__ import annotations

import json

from model.nodes import Taint
from model.spec import AwsSite
from model.tags import Tags

BURST_TAG = "gpufleet.io/burst-pool"
CA_TAG_PREFIX = "k8s.io/cluster-autoscaler"
NODE_TEMPLATE = f"{CA_TAG_PREFIX}/node-template"


def discovery_tags(cluster: str, pool: str) -> dict[str, str]:
    """The Auto Scaling group tags the autoscaler discovers a burst pool by (all of them must be present)."""
    return {f"{CA_TAG_PREFIX}/enabled": "true", f"{CA_TAG_PREFIX}/{cluster}": "owned", BURST_TAG: pool}


def discovery_keys(cluster: str) -> list[str]:
    """`autoDiscovery.tags` of the chart: the keys of `discovery_tags`."""
    return list(discovery_tags(cluster, "").keys())


def node_template_tags(
    labels: dict[str, str], taints: list[Taint], gpu_resource: str, gpu_units_per_node: int, shared: bool
) -> dict[str, str]:
    """Node-template tags of a burst pool's Auto Scaling group: its node labels and taints, and its GPU resource
    when GPUs are shared (the autoscaler counts whole GPUs of the instance type as nvidia.com/gpu by itself).

    The autoscaler learns a group's labels and taints from EKS DescribeNodegroup only while the group has never had
    nodes; after that only from these tags (cluster-autoscaler cloudprovider/aws/README.md, "Auto-discovery setup"
    and the eks:DescribeNodegroup note, at the pinned tag). EKS does not copy node group tags to its Auto Scaling
    group, so gpufleet tags the group itself.
    """
    tags = {f"{NODE_TEMPLATE}/label/{k}": v for k, v in sorted(labels.items())}
    tags |= {f"{NODE_TEMPLATE}/taint/{t.key}": f"{t.value}:{t.effect}" for t in taints}
    if shared:
        tags[f"{NODE_TEMPLATE}/resources/{gpu_resource}"] = str(gpu_units_per_node)
    return tags


def cluster_name(tags: Tags, site: AwsSite) -> str:
    """EKS cluster names are unique per account and region: estate, environment and site."""
    return site.cluster.adopt_name or f"{tags.base['cluster']}-{tags.base['env']}-{site.name}"


def kubeconfig(name: str, endpoint: str | None, ca_data: str | None, region: str) -> str:
    """A kubeconfig that authenticates with `aws eks get-token` (the deployer's AWS credentials)."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": name, "cluster": {"server": endpoint or "", "certificate-authority-data": ca_data or ""}}
        ],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
        "users": [
            {
                "name": name,
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "aws",
                        "args": ["eks", "get-token", "--cluster-name", name, "--region", region, "--output", "json"],
                        "interactiveMode": "Never",
                    }
                },
            }
        ],
    }
    return json.dumps(doc)
