"""GPU sharing per GPU model: which modes the catalog allows, the L40S shared by two tenants, and enforcement
overrides the schema would make meaningless.

Time-slicing facts: NVIDIA GPU Operator, "Time-Slicing GPUs in Kubernetes"
(https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-sharing.html): no memory or fault
isolation between the workloads on one GPU; each GPU is advertised as `replicas` nvidia.com/gpu.
"""

from __future__ import annotations

from typing import Any

import pytest

from model import catalog, queues
from model.load import SpecError
from model.rules.sharing import SCHEMA_ENFORCED_RULES
from model.spec import EstateSpec
from tests.model.helpers import example_spec as estate


def _problems(mutate: Any, stack: str = "aws-train") -> str:
    with pytest.raises(SpecError) as err:
        estate(stack, mutate)
    return str(err.value)


def _pool(raw: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for s in raw["sites"] for p in s["node_pools"] if p["name"] == name)


def _tenant(raw: dict[str, Any], name: str) -> dict[str, Any]:
    return next(t for t in raw["tenants"] if t["name"] == name)


def _share_l40s(raw: dict[str, Any], **extra: Any) -> None:
    """aws-train's l40s pool (g6e.12xlarge, research 8 + product 16 quota) time-sliced 4 ways for both tenants."""
    _pool(raw, "l40s")["sharing"] = {
        "mode": "time-slicing",
        "replicas": 4,
        "shared_by": ["research", "product"],
        **extra,
    }


def test_l40s_shared_by_two_trusted_tenants_who_accept_no_isolation_is_allowed() -> None:
    spec = estate("aws-train", lambda raw: _share_l40s(raw, accept_no_isolation=True))
    assert spec.pool_gpu_units("l40s") == 6 * 4 * 4  # 6 nodes x 4 L40S x 4 replicas: quotas count replicas
    site = spec.sites[0]
    research, product, agents = (spec.tenant(n) for n in ("research", "product", "agents"))
    assert "l40s" in {p.name for p in queues.tenant_flavors(site, research)}
    assert "l40s" in {p.name for p in queues.tenant_flavors(site, product)}
    assert "l40s" not in {p.name for p in queues.tenant_flavors(site, agents)}


def test_shared_time_sliced_pool_needs_the_no_isolation_acknowledgement() -> None:
    msg = _problems(_share_l40s)
    assert "sites[0].node_pools[1].sharing.accept_no_isolation" in msg
    assert "no memory or fault isolation" in msg and "gpu-sharing.html" in msg


def test_shared_time_sliced_pool_refuses_an_untrusted_tenant() -> None:
    def with_agents(raw: dict[str, Any]) -> None:
        _share_l40s(raw, accept_no_isolation=True)
        _pool(raw, "l40s")["sharing"]["shared_by"].append("agents")

    msg = _problems(with_agents)
    assert "sites[0].node_pools[1].sharing.shared_by[2]" in msg and "tenant agents is untrusted" in msg


def test_quota_on_a_shared_time_sliced_pool_only_for_the_tenants_it_names() -> None:
    def two_only(raw: dict[str, Any]) -> None:
        _share_l40s(raw, accept_no_isolation=True)
        _pool(raw, "l40s")["sharing"]["shared_by"] = ["research", "someone"]

    msg = _problems(two_only)
    assert "sharing.shared_by[1]: someone is not a tenant" in msg
    assert "tenants[1].gpu_quota.l40s" in msg and "shared_by research, someone only" in msg


def test_time_sliced_l40s_shared_without_declaration_says_which_setups_are_allowed() -> None:
    msg = _problems(lambda raw: _pool(raw, "l40s").update(sharing={"mode": "time-slicing", "replicas": 4}))
    assert "sites[0].node_pools[1].sharing.mode" in msg
    assert "dedicated_to one tenant" in msg and "accept_no_isolation: true" in msg and "mode whole" in msg
    assert "mode mig" not in msg  # an L40S has no MIG to offer


def test_time_sliced_h100_shared_without_declaration_also_offers_mig() -> None:
    msg = _problems(lambda raw: _pool(raw, "h100").update(sharing={"mode": "time-slicing", "replicas": 2}))
    assert "or mode mig (1g.10gb" in msg


def test_mig_on_l40s_refused_with_the_modes_an_l40s_has_and_how_quotas_count() -> None:
    msg = _problems(lambda raw: _pool(raw, "l40s").update(sharing={"mode": "mig", "mig_profile": "1g.10gb"}))
    assert "sites[0].node_pools[1].sharing.mode: L40S-48GB GPUs do not support MIG" in msg
    assert "whole (1 nvidia.com/gpu per GPU)" in msg
    assert "time-slicing (no memory or fault isolation; each GPU counts as `replicas` nvidia.com/gpu" in msg


def test_shared_by_only_with_time_slicing_and_two_tenants() -> None:
    assert "shared_by is only allowed with mode time-slicing" in _problems(
        lambda raw: _pool(raw, "l40s").update(sharing={"mode": "whole", "shared_by": ["research", "product"]})
    )
    assert "two or more distinct tenants" in _problems(
        lambda raw: _pool(raw, "l40s").update(
            sharing={"mode": "time-slicing", "replicas": 2, "shared_by": ["research"], "accept_no_isolation": True}
        )
    )


def test_sharing_mode_description_names_each_catalog_model_by_what_it_allows() -> None:
    desc = EstateSpec.model_json_schema()["$defs"]["Sharing"]["properties"]["mode"]["description"]
    mig, rest = desc.split("mig on ", 1)[1].split(" only (not ", 1)
    assert set(mig.split(", ")) == {m.id for m in catalog.gpu_models().values() if m.mig_profiles}
    assert set(rest.split(")")[0].split(", ")) == {m.id for m in catalog.gpu_models().values() if not m.mig_profiles}
    replicas = EstateSpec.model_json_schema()["$defs"]["Sharing"]["properties"]["replicas"]["description"]
    assert "N x replicas" in replicas


def test_catalog_sharing_modes_follow_gpus_yaml() -> None:
    assert catalog.gpu_model("L40S-48GB").sharing_modes() == ("whole", "time-slicing")
    assert catalog.gpu_model("H100-80GB").sharing_modes() == ("whole", "mig", "time-slicing")


@pytest.mark.parametrize("level", ["advisory", "disabled"])
def test_lowering_a_schema_enforced_rule_is_refused_naming_the_override(level: str) -> None:
    msg = _problems(
        lambda raw: raw["policies"].setdefault("enforcement", {}).update({"time-slicing-single-tenant": level})
    )
    assert f"policies.enforcement.time-slicing-single-tenant: {level} is refused" in msg
    assert "sharing.shared_by" in msg


def test_keeping_a_schema_enforced_rule_mandatory_is_accepted() -> None:
    spec = estate(
        "aws-train", lambda raw: raw["policies"].update(enforcement={"time-slicing-single-tenant": "mandatory"})
    )
    assert spec.policies.enforcement == {"time-slicing-single-tenant": "mandatory"}


def test_schema_enforced_rules_are_policy_rules() -> None:
    from gpufleet.review import check

    assert set(SCHEMA_ENFORCED_RULES) <= check.rule_ids()


def test_quota_above_a_time_sliced_pool_says_how_its_units_are_counted() -> None:
    def over(raw: dict[str, Any]) -> None:
        _share_l40s(raw, accept_no_isolation=True)
        _tenant(raw, "product")["gpu_quota"]["l40s"] = 89  # research 8 + 89 = 97 > 6 x 4 L40S x 4 replicas

    msg = _problems(over)
    assert "add up to 97, but the pool offers only 96 GPUs at max size (24 GPUs x 4 time-slicing replicas)" in msg
