"""Schema rules for bare-metal inventories and fabrics: bad input names the YAML path, never a traceback."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from components.model.load import SpecError
from tests.model.helpers import example_spec

Mutation = Callable[[dict[str, Any]], None]


def problem(mutate: Mutation) -> str:
    with pytest.raises(SpecError) as info:
        example_spec("onprem", mutate)
    return str(info.value)


def _ib(estate: dict[str, Any]) -> dict[str, Any]:
    fabric: dict[str, Any] = estate["sites"][0]["fabrics"][0]
    return fabric


def test_partition_keys_need_sriov_virtual_functions() -> None:
    def pkey_on_shared(estate: dict[str, Any]) -> None:
        _ib(estate)["partition_keys"] = {"research": "0x0010"}

    message = problem(pkey_on_shared)
    assert "sites[0].fabrics[0]" in message and "partition_keys need device_plugin: sriov" in message


def test_default_partition_key_is_not_a_tenant_partition() -> None:
    def default_pkey(estate: dict[str, Any]) -> None:
        _ib(estate).update(device_plugin="sriov", partition_keys={"research": "0x7fff"})

    message = problem(default_pkey)
    assert "sites[0].fabrics[0].partition_keys" in message and "0x7fff" in message


def test_partition_key_of_an_unknown_tenant_is_rejected() -> None:
    def unknown(estate: dict[str, Any]) -> None:
        _ib(estate).update(device_plugin="sriov", partition_keys={"ghost": "0x0010"})

    assert "sites[0].fabrics[0].partition_keys.ghost: ghost is not a tenant of the estate" in problem(unknown)


def test_two_tenants_sharing_a_partition_key_is_rejected() -> None:
    def shared(estate: dict[str, Any]) -> None:
        _ib(estate).update(device_plugin="sriov", partition_keys={"research": "0x10", "product": "0x0010"})

    assert "share partition key" in problem(shared)


def test_server_selected_by_two_pools_is_rejected() -> None:
    def overlap(estate: dict[str, Any]) -> None:
        estate["sites"][0]["node_pools"].append({"name": "extra", "role": "batch", "selector": {"pool": "dev"}})

    message = problem(overlap)
    assert "sites[0].node_pools[2].selector" in message
    assert "server gpu-r2-03 is selected by pools dev and extra" in message


def test_eks_hybrid_join_needs_cluster_name_and_region() -> None:
    def eks(estate: dict[str, Any]) -> None:
        estate["sites"][0]["join"] = {"method": "eks-hybrid", "api_server": "x.eks.amazonaws.com:443"}

    assert "method eks-hybrid needs cluster_name and region" in problem(eks)
