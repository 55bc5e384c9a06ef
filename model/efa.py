"""EFA network-interface layout of a launch template, derived from the catalog. Pure; no Pulumi.

- An instance gets one ENA interface for IP traffic (pods, kubelet), and `max_efa_interfaces` EFA-only
  interfaces, one per EFA-capable network card (`efa_interfaces`).
- EFA-only interfaces take no IP addresses, which keeps the VPC CNI from draining the fabric subnet (EKS
  "Conserving IP address allocation").
- terraform-aws-eks (`efa_indices`) and eksctl (`efaEnabled`) make the primary an `efa` interface and put the
  others at device index 1. That gives the same EFA count, but uses IPs on every card.
"""

from __future__ import annotations

from dataclasses import dataclass

from model import catalog

ENA = "interface"
EFA_ONLY = "efa-only"


@dataclass(frozen=True)
class NetworkInterfaceSlot:
    network_card_index: int
    device_index: int
    interface_type: str  # "interface" (ENA) or "efa-only"

    @property
    def is_efa(self) -> bool:
        return self.interface_type == EFA_ONLY


# Types whose EFA-only interfaces go on named network cards only. P6e-GB200 (EC2 user guide efa-acc-inst-types,
# "EFA configuration for P6e-GB200 instances", https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html#efa-for-p6e):
# card 0 carries the 100 Gbps ENA primary; only the odd cards 1-15 take 400 Gbps EFA-only interfaces (an even card
# shares a NIC with its odd partner); recommended: 4 EFA-only on cards 1, 5, 9 and 13 (1600 Gbps), or 8 on every odd
# card. gpufleet takes the 4: the EKS user guide (ml-eks-nvidia-ultraserver) expects "4 allocatable EFA devices per
# node".
EFA_ONLY_CARDS: dict[str, tuple[int, ...]] = {"p6e-gb200.36xlarge": (1, 5, 9, 13)}


def efa_interfaces(instance_type: str) -> list[NetworkInterfaceSlot]:
    """The launch-template interfaces of an EFA node of `instance_type`: ENA primary, then EFA-only per card.

    AWS guidance (EC2 user guide `efa-acc-inst-types`, "Maximize network bandwidth on Amazon EC2 instances with
    multiple network cards"; EKS user guide `device-management-efa`, launch-template example for P6-B200):
    - the primary network interface (network card 0, device index 0) is an ENA interface; an EFA-only interface
      cannot be the primary;
    - if network card 0 supports EFA, an EFA-only interface goes on network card 0, device index 1;
    - every further network card gets one EFA-only interface at device index 0.

    The catalog gives `network_cards` and `max_efa_interfaces` (EC2 DescribeInstanceTypes). When an instance has
    more network cards than EFA interfaces (p6-b300: 17 cards, 16 EFA), the card without EFA is card 0, which
    then carries only the primary ENA interface. A type in EFA_ONLY_CARDS uses the cards its EC2 section names.
    """
    it = catalog.instance_type(instance_type)
    if not it.efa_supported or it.max_efa_interfaces < 1:
        raise ValueError(f"{instance_type} does not support EFA")
    slots = [NetworkInterfaceSlot(0, 0, ENA)]
    if instance_type in EFA_ONLY_CARDS:
        return slots + [NetworkInterfaceSlot(card, 0, EFA_ONLY) for card in EFA_ONLY_CARDS[instance_type]]
    card0_has_efa = it.network_cards <= it.max_efa_interfaces
    first_card = 0 if card0_has_efa else 1
    for card in range(first_card, first_card + it.max_efa_interfaces):
        slots.append(NetworkInterfaceSlot(card, 1 if card == 0 else 0, EFA_ONLY))
    return slots


HUGEPAGES_2MI = "hugepages-2Mi"  # the kubelet's resource for 2 MiB huge pages (Kubernetes "Manage HugePages")
EFA_HUGEPAGES = 5128
"""2 MiB huge pages every EFA node pre-allocates. libfabric's EFA provider uses them for its bounce buffers, and
published EFA jobs request them (`hugepages-2Mi: 5120Mi`, aws-samples/awsome-distributed-training
micro-benchmarks/nccl-tests). The EKS user guide (node-efa): "Amazon EC2 instances with the EFA driver installed
pre-allocate 5128 2MiB Huge Pages"; the EFA installer's efa_test.sh warns below 5128. gpufleet sets the count in
the launch template (components/aws/launch.py) rather than trusting the AMI, so the plan states it."""


def efa_node_hugepages() -> dict[str, int]:
    """What an EFA node's kubelet reports as hugepages, in bytes. The kubelet takes the same bytes out of its
    allocatable memory (kubernetes pkg/kubelet/nodestatus/setters.go, MachineInfo)."""
    return {HUGEPAGES_2MI: EFA_HUGEPAGES * 2 * 2**20}
