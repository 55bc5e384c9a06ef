"""Which instance types, in which Regions, EC2 describes the network topology of, and how many layers above each.

From the Amazon EC2 User Guide, "Prerequisites for Amazon EC2 topology",
https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-topology-prerequisites.html (read
2026-12-04): three network nodes for most types, four for p6-b200 and p6-b300 (its HPC types left out), and one
list of supported Regions for every type.

Amazon EKS exposes each node's place in that hierarchy as the labels `topology.k8s.aws/network-node-layer-1..4`
(model.conventions.EKS_NETWORK_LAYER_LABELS; https://docs.aws.amazon.com/eks/latest/userguide/ml-workload-topology.html).
The AWS cloud controller manager sets them when it initialises a node, from
DescribeInstanceTopology, and sets none in a Region where that call is unsupported (kubernetes/cloud-provider-aws,
pkg/providers/v1/instances_v2.go `InstanceMetadata`).
"""

from __future__ import annotations

from dataclasses import dataclass

PAGE = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-topology-prerequisites.html"
READ = "2026-12-04"

# The page's "Supported AWS Regions", by code, each with the name the page gives it. Its one list holds for every
# instance type. Commercial Regions it does not list: ap-east-2, ap-southeast-5/6/7, ca-west-1, eu-south-1, mx-central-1.
REGIONS: dict[str, str] = {
    "us-east-1": "US East (N. Virginia)",
    "us-east-2": "US East (Ohio)",
    "us-west-1": "US West (N. California)",
    "us-west-2": "US West (Oregon)",
    "af-south-1": "Africa (Cape Town)",
    "ap-southeast-3": "Asia Pacific (Jakarta)",
    "ap-east-1": "Asia Pacific (Hong Kong)",
    "ap-south-2": "Asia Pacific (Hyderabad)",
    "ap-southeast-4": "Asia Pacific (Melbourne)",
    "ap-south-1": "Asia Pacific (Mumbai)",
    "ap-northeast-3": "Asia Pacific (Osaka)",
    "ap-northeast-2": "Asia Pacific (Seoul)",
    "ap-southeast-1": "Asia Pacific (Singapore)",
    "ap-southeast-2": "Asia Pacific (Sydney)",
    "ap-northeast-1": "Asia Pacific (Tokyo)",
    "ca-central-1": "Canada (Central)",
    "eu-central-1": "Europe (Frankfurt)",
    "eu-west-1": "Europe (Ireland)",
    "eu-west-2": "Europe (London)",
    "eu-west-3": "Europe (Paris)",
    "eu-south-2": "Europe (Spain)",
    "eu-north-1": "Europe (Stockholm)",
    "eu-central-2": "Europe (Zurich)",
    "il-central-1": "Israel (Tel Aviv)",
    "me-south-1": "Middle East (Bahrain)",
    "me-central-1": "Middle East (UAE)",
    "sa-east-1": "South America (São Paulo)",
    "us-gov-west-1": "AWS GovCloud (US-West)",  # outside the commercial Regions a stack may name
}


@dataclass(frozen=True)
class TopologyGroup:
    """Instance types the page lists together: the network nodes EC2 describes above each, and the Regions it
    describes them in."""

    layers: int
    instance_types: frozenset[str]
    regions: frozenset[str]


def _group(layers: int, types: str) -> TopologyGroup:
    return TopologyGroup(layers, frozenset(types.split()), frozenset(REGIONS))


GROUPS: tuple[TopologyGroup, ...] = (
    _group(
        3,
        "g6e.xlarge g6e.2xlarge g6e.4xlarge g6e.8xlarge g6e.12xlarge g6e.16xlarge g6e.24xlarge g6e.48xlarge "
        "g7e.2xlarge g7e.4xlarge g7e.8xlarge g7e.12xlarge g7e.24xlarge g7e.48xlarge",
    ),
    _group(3, "p3dn.24xlarge p4d.24xlarge p4de.24xlarge p5.48xlarge p5e.48xlarge p5en.48xlarge p6e-gb200.36xlarge"),
    _group(3, "trn1.2xlarge trn1.32xlarge trn1n.32xlarge trn2.48xlarge trn2u.48xlarge"),
    _group(4, "p6-b200.48xlarge p6-b300.48xlarge"),
)


def _group_of(instance_type: str) -> TopologyGroup | None:
    return next((g for g in GROUPS if instance_type in g.instance_types), None)


def type_layers(instance_type: str) -> int:
    """The network layers EC2 describes above an instance of `instance_type` in a Region it supports; 0 for a type
    it describes no topology of. Whether a node carries them depends on its Region too: `network_layers`."""
    group = _group_of(instance_type)
    return group.layers if group is not None else 0


def network_layers(instance_type: str, region: str) -> int:
    """The network layers EKS labels a node of `instance_type` in `region` with; 0 where EC2 describes no topology
    of the type, or none in the Region."""
    group = _group_of(instance_type)
    return group.layers if group is not None and region in group.regions else 0
