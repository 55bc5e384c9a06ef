"""The EFA interface layout of a launch template, per instance type, from the catalog (no Pulumi)."""

from __future__ import annotations

import pytest

from model import catalog
from model.efa import EFA_ONLY, ENA, efa_interfaces


@pytest.mark.parametrize("instance_type", ["p5.48xlarge", "p5en.48xlarge", "p4d.24xlarge", "g6e.48xlarge"])
def test_efa_interfaces_one_per_network_card_up_to_the_catalog_maximum(instance_type: str) -> None:
    it = catalog.instance_type(instance_type)
    slots = efa_interfaces(instance_type)
    efa = [s for s in slots if s.is_efa]
    assert len(efa) == it.max_efa_interfaces
    assert sorted(s.network_card_index for s in efa) == list(range(it.max_efa_interfaces))  # one per card
    assert all(s.interface_type == EFA_ONLY for s in efa)


@pytest.mark.parametrize("instance_type", ["p5.48xlarge", "p5en.48xlarge", "p4d.24xlarge", "g6e.48xlarge"])
def test_primary_interface_is_ena_on_card_0_device_0_and_efa_only_follow_the_ec2_guidance(instance_type: str) -> None:
    slots = efa_interfaces(instance_type)
    assert slots[0].network_card_index == 0 and slots[0].device_index == 0 and slots[0].interface_type == ENA
    assert [s for s in slots if s.interface_type == ENA] == [slots[0]]  # exactly one IP-carrying interface
    for s in slots[1:]:
        # card 0 shares with the primary (device 1); every other card's EFA-only interface is its device 0
        assert s.device_index == (1 if s.network_card_index == 0 else 0)
    pairs = [(s.network_card_index, s.device_index) for s in slots]
    assert len(pairs) == len(set(pairs))


def test_p5_gets_32_efa_only_interfaces_and_p4d_4() -> None:
    assert sum(s.is_efa for s in efa_interfaces("p5.48xlarge")) == 32
    assert sum(s.is_efa for s in efa_interfaces("p5en.48xlarge")) == 16
    assert sum(s.is_efa for s in efa_interfaces("p4d.24xlarge")) == 4
    assert sum(s.is_efa for s in efa_interfaces("g6e.48xlarge")) == 4


def test_card_0_without_efa_carries_only_the_primary_when_cards_outnumber_efa_interfaces() -> None:
    it = catalog.instance_type("p6-b300.48xlarge")
    assert it.network_cards > it.max_efa_interfaces  # 17 cards, 16 EFA (catalog)
    slots = efa_interfaces("p6-b300.48xlarge")
    assert [s.network_card_index for s in slots if s.is_efa] == list(range(1, it.max_efa_interfaces + 1))


def test_non_efa_instance_type_has_no_efa_layout() -> None:
    with pytest.raises(ValueError, match="does not support EFA"):
        efa_interfaces("g6e.xlarge")
