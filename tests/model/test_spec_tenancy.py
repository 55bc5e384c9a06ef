"""Quota arithmetic and trust rules the schema enforces before anything is built."""

from __future__ import annotations

from typing import Any

import pytest

from model.load import SpecError
from tests.model.helpers import example_spec as estate


def _problems(stack: str, mutate: Any) -> str:
    with pytest.raises(SpecError) as err:
        estate(stack, mutate)
    return str(err.value)


def _pool(raw: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for s in raw["sites"] for p in s["node_pools"] if p["name"] == name)


def _tenant(raw: dict[str, Any], name: str) -> dict[str, Any]:
    return next(t for t in raw["tenants"] if t["name"] == name)


def test_quota_sum_above_pool_capacity_rejected_with_both_numbers() -> None:
    # h100: 4 x p5.48xlarge = 32 GPUs at max; research 24 + product 8 = 32 fits, 9 more does not.
    def grow(raw: dict[str, Any]) -> None:
        _tenant(raw, "product")["gpu_quota"]["h100"] = 17

    msg = _problems("aws-train", grow)
    assert "config.gpufleet:estate.sites[0].node_pools[0]" in msg
    assert "add up to 41" in msg and "only 32 GPUs" in msg


def test_mig_quota_counts_slices_and_rejects_above_the_slice_count() -> None:
    # dev: 2 servers x 8 H100 x 7 slices of 1g.10gb = 112; 56 + 57 = 113.
    def grow(raw: dict[str, Any]) -> None:
        _tenant(raw, "product")["gpu_quota"]["dev"] = 57

    msg = _problems("onprem", grow)
    assert "add up to 113" in msg and "only 112 GPUs" in msg


def test_quota_exactly_at_capacity_accepted() -> None:
    spec = estate("aws-train")
    assert sum(t.gpu_quota.get("h100", 0) for t in spec.tenants) == spec.pool_gpu_units("h100") == 32


def test_time_sliced_pool_shared_between_tenants_rejected() -> None:
    def share(raw: dict[str, Any]) -> None:
        _pool(raw, "l40s")["sharing"] = {"mode": "time-slicing", "replicas": 4}

    assert "time-slicing, which does not isolate tenants" in _problems("aws-train", share)


def test_untrusted_tenant_never_on_a_time_sliced_pool_even_its_own() -> None:
    def time_slice(raw: dict[str, Any]) -> None:
        _pool(raw, "agents-l40s")["sharing"] = {"mode": "time-slicing", "replicas": 4}

    msg = _problems("aws-train", time_slice)
    assert "tenants[2].gpu_quota.agents-l40s" in msg
    assert "untrusted tenants get whole GPUs or MIG slices only" in msg


def test_untrusted_tenant_quota_on_a_shared_pool_rejected() -> None:
    def spill(raw: dict[str, Any]) -> None:
        _tenant(raw, "agents")["gpu_quota"]["l40s"] = 1

    msg = _problems("aws-train", spill)
    assert "tenants[2].gpu_quota.l40s" in msg and "untrusted" in msg


def test_trusted_tenant_quota_on_another_tenants_dedicated_pool_rejected() -> None:
    def intrude(raw: dict[str, Any]) -> None:
        _tenant(raw, "research")["gpu_quota"]["agents-l40s"] = 1

    assert "pool agents-l40s is dedicated to tenant agents" in _problems("aws-train", intrude)


def test_time_sliced_pool_dedicated_to_one_trusted_tenant_accepted() -> None:
    def dedicate(raw: dict[str, Any]) -> None:
        pool = _pool(raw, "l40s")
        pool["sharing"] = {"mode": "time-slicing", "replicas": 4}
        pool["dedicated_to"] = "product"
        _tenant(raw, "research")["gpu_quota"].pop("l40s")

    spec = estate("aws-train", dedicate)
    assert spec.pool_gpu_units("l40s") == 6 * 4 * 4  # 6 nodes x 4 L40S x 4 replicas


@pytest.mark.parametrize(
    ("members", "says"),
    [
        ([f"g{i}" for i in range(1001)], "members: List should have at most 1000 items"),
        (["g" * 1025], "members[0]: String should have at most 1024 characters"),
        ([""], "members[0]: String should have at least 1 character"),
    ],
)
def test_tenant_members_are_bounded_so_their_role_binding_fits_etcd(members: list[str], says: str) -> None:
    # Before: 190,000 members under the 4 MB file limit were accepted and took 42 s to preview.
    assert says in _problems("aws-train", lambda raw: raw["tenants"][0].update(members=members))
