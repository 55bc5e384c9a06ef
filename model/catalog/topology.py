"""How many network layers EC2 describes above an instance of each type: EKS labels the type's nodes with them.

EC2 describes the topology of these GPU and Trainium types (its HPC types left out; Amazon EC2 User Guide, "Prerequisites for Amazon EC2 topology",
https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-topology-prerequisites.html, read 2026-12-02:
three network nodes for most, four for p6-b200 and p6-b300). EKS turns them into the node labels
`topology.k8s.aws/network-node-layer-1..4` (model.conventions.EKS_NETWORK_LAYER_LABELS).
"""

from __future__ import annotations

_THREE = (
    "g6e.xlarge g6e.2xlarge g6e.4xlarge g6e.8xlarge g6e.12xlarge g6e.16xlarge g6e.24xlarge g6e.48xlarge "
    "g7e.2xlarge g7e.4xlarge g7e.8xlarge g7e.12xlarge g7e.24xlarge g7e.48xlarge "
    "p3dn.24xlarge p4d.24xlarge p4de.24xlarge p5.48xlarge p5e.48xlarge p5en.48xlarge p6e-gb200.36xlarge "
    "trn1.2xlarge trn1.32xlarge trn1n.32xlarge trn2.48xlarge trn2u.48xlarge"
)
_FOUR = "p6-b200.48xlarge p6-b300.48xlarge"

NETWORK_LAYERS: dict[str, int] = {**dict.fromkeys(_THREE.split(), 3), **dict.fromkeys(_FOUR.split(), 4)}


def network_layers(instance_type: str) -> int:
    """The network layers EKS labels a node of `instance_type` with; 0 for a type EC2 describes no topology of."""
    return NETWORK_LAYERS.get(instance_type, 0)
