"""A fabric that grows keeps every node's nv-ipam block: adding a server changes none of the fabric's objects.

nv-ipam's controller drops each stored node allocation whose size is not the IPPool's perNodeBlockSize and carves
that node a new block (Mellanox/nvidia-k8s-ipam at network-operator-v26.4.1, the tag Mellanox/network-operator
v26.4.1 pins in hack/release.yaml: pkg/ipam-controller/allocator/allocator.go, checkAllocation "ip count
mismatch", then "ignore allocation info from node"). So the block size must not follow the server count.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpufleet.engine.plan import Plan
from model.load import SpecError, parse_estate
from tests.conftest import example_config, write_project

FABRIC = "gpufleet:baremetal:Fabric"
IPPOOL = "kubernetes:nv-ipam.nvidia.com/v1alpha1:IPPool"
RANGE = "192.168.64.0/20"  # 4094 usable addresses: 15 blocks of 256


def _fabric_of(servers_on_fabric: int) -> dict[str, Any]:
    """The onprem example with its `ib` fabric on a /20 and `servers_on_fabric` servers in its training pool."""
    config = example_config("onprem")
    site = config["gpufleet:estate"]["sites"][0]
    site["fabrics"][0]["ipoib_cidr"] = RANGE
    train = [s for s in site["inventory"] if s["labels"] == {"pool": "train"}]
    for n in range(len(train), servers_on_fabric):
        extra = copy.deepcopy(train[0])
        extra.update(hostname=f"gpu-r3-{n:02d}", address=f"10.10.3.{n + 11}", rack="r3", leaf="leaf-3")
        site["inventory"].append(extra)
    return config


def _fabric_objects(plan: Plan) -> dict[str, Any]:
    return {r.key: r.inputs for r in plan.kubernetes_objects() if f"{FABRIC}$" in r.key}


@pytest.fixture(scope="module")
def eight_and_nine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Plan, Plan]:
    from gpufleet.engine.synth import synth

    return tuple(  # type: ignore[return-value]
        synth(write_project(tmp_path_factory.mktemp(f"servers{n}"), _fabric_of(n)), "test") for n in (8, 9)
    )


def test_a_ninth_server_changes_no_object_of_the_fabric(eight_and_nine: tuple[Plan, Plan]) -> None:
    eight, nine = eight_and_nine
    (pool,) = nine.find(IPPOOL)
    assert pool.inputs["spec"]["subnet"] == RANGE and pool.inputs["spec"]["perNodeBlockSize"] == 256
    assert _fabric_objects(nine) == _fabric_objects(eight)


def test_a_range_too_small_for_the_fabric_at_its_block_size_is_refused() -> None:
    estate = _fabric_of(16)["gpufleet:estate"]  # 16 blocks of 256 in a /20 that holds 15
    with pytest.raises(SpecError) as info:
        parse_estate(estate, "stacks/Pulumi.onprem.yaml")
    message = str(info.value)
    assert "sites[0].fabrics[0].ipoib_cidr" in message
    assert "holds 15 block(s) of 256 addresses" in message and "16 servers are on fabric ib" in message
    assert "/19" in message  # the range that would hold them


def test_a_smaller_block_fits_more_servers_in_the_same_range() -> None:
    estate = _fabric_of(16)["gpufleet:estate"]
    estate["sites"][0]["fabrics"][0]["addresses_per_node"] = 128
    spec = parse_estate(estate, "stacks/Pulumi.onprem.yaml")
    assert spec.sites[0].fabrics[0].addresses_per_node == 128  # type: ignore[union-attr]
