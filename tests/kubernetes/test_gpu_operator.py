"""GPU Operator values: derived per site (EKS vs bare metal) and per pool (MIG, time-slicing, tenants)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from components.kubernetes import sharing
from components.kubernetes.gpu_driver import fabric_driver_specs
from components.kubernetes.gpu_operator import gpu_operator_values
from gpufleet.engine.plan import Plan
from model import versions
from model.conventions import (
    DEVICE_PLUGIN_CONFIG_LABEL,
    GPU_PRESENT_LABEL,
    MIG_CONFIG_LABEL,
    NODE_GROUP,
    POOL_LABEL,
)
from model.load import SpecError
from model.nodes import pool_labels
from tests.conftest import example_config
from tests.kubernetes.helpers import estate, parse, release, time_sliced_pool

NODE_PATCH = "kubernetes:core/v1:NodePatch"


def operator_values(plan: Plan) -> dict[str, Any]:
    values: dict[str, Any] = release(plan, "gpu-operator").inputs["values"]
    return values


# -- driver and toolkit ---------------------------------------------------------------------------------


def test_eks_operator_leaves_driver_and_toolkit_to_the_ami(example_plans: dict[str, Plan]) -> None:
    values = operator_values(example_plans["aws-train"])
    assert values["driver"] == {"enabled": False}
    assert values["toolkit"] == {"enabled": False}


def test_bare_metal_operator_installs_the_sites_pinned_driver(example_plans: dict[str, Plan]) -> None:
    values = operator_values(example_plans["onprem"])
    assert values["driver"]["enabled"] is True
    assert values["toolkit"]["enabled"] is True
    spec = estate("onprem")
    assert values["driver"]["version"] == spec.sites[0].kubernetes.driver_version


def test_bare_metal_driver_defaults_to_the_operator_pin() -> None:
    def unpin(raw: dict[str, Any]) -> None:
        del raw["sites"][0]["kubernetes"]["driver_version"]

    spec = estate("onprem", unpin)
    assert gpu_operator_values(spec, spec.sites[0])["driver"]["version"] == versions.GPU_DRIVER


def test_bare_metal_driver_upgrades_one_drained_node_at_a_time(example_plans: dict[str, Plan]) -> None:
    policy = operator_values(example_plans["onprem"])["driver"]["upgradePolicy"]
    assert policy["maxParallelUpgrades"] == 1
    assert policy["drain"]["enable"] is True
    assert policy["drain"]["deleteEmptyDir"] is True
    assert policy["drain"]["force"] is False
    assert 0 < policy["drain"]["timeoutSeconds"] <= 3600
    assert policy["gpuPodDeletion"]["timeoutSeconds"] > 0


def test_gpudirect_rdma_only_with_an_infiniband_or_roce_fabric() -> None:
    onprem = estate("onprem")
    # the default NVIDIADriver (nodes off every fabric) has no RDMA; the fabric's own NVIDIADriver has it
    assert gpu_operator_values(onprem, onprem.sites[0])["driver"]["rdma"] == {"enabled": False, "useHostMofed": False}
    (spec,) = fabric_driver_specs(onprem.sites[0]).values()
    assert spec["rdma"] == {"enabled": True, "useHostMofed": False}

    def no_fabric(raw: dict[str, Any]) -> None:
        raw["sites"][0]["fabrics"] = []
        for pool in raw["sites"][0]["node_pools"]:
            pool.pop("fabric", None)

    plain = estate("onprem", no_fabric)
    assert gpu_operator_values(plain, plain.sites[0])["driver"]["rdma"]["enabled"] is False
    assert fabric_driver_specs(plain.sites[0]) == {}


def test_gds_only_with_rdma_and_a_parallel_file_system() -> None:
    onprem = estate("onprem")
    assert gpu_operator_values(onprem, onprem.sites[0])["gds"] == {"enabled": False}

    def add_lustre(raw: dict[str, Any]) -> None:
        raw["sites"][0]["storage"].append(
            {"kind": "parallel-fs", "name": "lustre", "csi_driver": "lustre.csi.k8s.io", "throughput_gbps": 200}
        )

    spec = estate("onprem", add_lustre)
    assert gpu_operator_values(spec, spec.sites[0])["gds"] == {"enabled": True}


# -- MIG ------------------------------------------------------------------------------------------------


def test_mig_strategy_follows_the_site(example_plans: dict[str, Plan]) -> None:
    assert operator_values(example_plans["onprem"])["mig"] == {"strategy": "mixed"}
    assert operator_values(example_plans["aws-train"])["mig"] == {"strategy": "single"}


def test_mig_manager_has_a_layout_for_every_pools_label(example_plans: dict[str, Plan]) -> None:
    mig = operator_values(example_plans["onprem"])["migManager"]
    assert mig["enabled"] is True
    assert mig["config"]["create"] is True and mig["config"]["name"]
    assert mig["config"]["default"] == "all-disabled"
    layouts = parse(mig["config"]["data"]["config.yaml"])["mig-configs"]
    spec = estate("onprem")
    for pool in spec.sites[0].node_pools:
        assert pool_labels(spec, pool)[MIG_CONFIG_LABEL] in layouts
    # and every bare-metal node patch selects a layout that exists
    patched = [r.inputs["metadata"].get("labels") or {} for r in example_plans["onprem"].find(NODE_PATCH)]
    selected = {labels[MIG_CONFIG_LABEL] for labels in patched if MIG_CONFIG_LABEL in labels}
    assert selected and selected <= set(layouts)
    # the H100 `dev` pool: 7 x 1g.10gb per GPU, from the catalog
    assert layouts["all-1g.10gb"] == [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}]
    assert layouts["all-disabled"] == [{"devices": "all", "mig-enabled": False}]


def _set_dev_profile(profile: str) -> Callable[[dict[str, Any]], None]:
    def mutate(raw: dict[str, Any]) -> None:
        raw["sites"][0]["node_pools"][1]["sharing"]["mig_profile"] = profile

    return mutate


def test_invalid_mig_profile_is_rejected_naming_the_field() -> None:
    with pytest.raises(SpecError) as err:
        estate("onprem", _set_dev_profile("1g.5gb"))  # an A100-40GB profile, not an H100 one
    message = str(err.value)
    assert "sites[0].node_pools[1].sharing.mig_profile" in message
    assert "1g.5gb is not a MIG profile of H100-80GB" in message
    assert "1g.10gb" in message  # the valid profiles are listed


def test_one_profile_name_with_two_layouts_on_a_site_is_rejected() -> None:
    def a100_40gb_pool(raw: dict[str, Any]) -> None:
        site = raw["sites"][0]
        for server in site["inventory"][:2]:
            server["gpu_model"] = "A100-40GB"  # 1g.10gb fits 4 per A100-40GB, 7 per H100-80GB
            server["labels"] = {"pool": "old"}
        site["node_pools"].append(
            {
                "name": "old",
                "role": "interactive",
                "selector": {"pool": "old"},
                "sharing": {"mode": "mig", "mig_profile": "1g.10gb"},
            }
        )
        raw["tenants"][0]["gpu_quota"]["train"] = 16
        raw["tenants"][1]["gpu_quota"]["train"] = 0

    with pytest.raises(SpecError) as err:
        estate("onprem", a100_40gb_pool)
    assert ".sharing.mig_profile" in str(err.value)
    assert "one `all-1g.10gb` layout" in str(err.value)


# -- time-slicing ---------------------------------------------------------------------------------------


def test_time_slicing_config_per_pool_selected_by_the_pools_label(synth_config: Callable[..., Plan]) -> None:
    config = example_config("aws-train")
    time_sliced_pool(config["gpufleet:estate"])
    plan = synth_config(config)
    plugin = operator_values(plan)["devicePlugin"]["config"]
    # the pool's node group carries the label that selects its config
    (group,) = [r for r in plan.find(NODE_GROUP) if (r.inputs.get("labels") or {}).get(POOL_LABEL) == "l40s-shared"]
    assert group.inputs["labels"][DEVICE_PLUGIN_CONFIG_LABEL] in plugin["data"]
    assert plugin["create"] is True and plugin["name"]
    assert plugin["default"] == sharing.DEFAULT_DEVICE_PLUGIN_CONFIG

    spec = estate("aws-train", time_sliced_pool)
    pool = spec.pool("l40s-shared")
    key = pool_labels(spec, pool)[DEVICE_PLUGIN_CONFIG_LABEL]
    config_file = parse(plugin["data"][key])
    assert config_file["sharing"]["timeSlicing"] == {
        "renameByDefault": False,
        "failRequestsGreaterThanOne": True,
        "resources": [{"name": "nvidia.com/gpu", "replicas": 4}],
    }
    # every other pool falls back to the default config, which shares nothing
    for other in spec.sites[0].node_pools:
        if other.name != pool.name:
            assert DEVICE_PLUGIN_CONFIG_LABEL not in pool_labels(spec, other)
    assert "sharing" not in parse(plugin["data"][sharing.DEFAULT_DEVICE_PLUGIN_CONFIG])
    assert set(plugin["data"]) == {sharing.DEFAULT_DEVICE_PLUGIN_CONFIG, key}


def test_default_device_plugin_config_cannot_collide_with_a_pool_name() -> None:
    spec = estate("aws-train", time_sliced_pool)
    assert all(p.name != sharing.DEFAULT_DEVICE_PLUGIN_CONFIG for _, p in spec.pools())
    assert "." in sharing.DEFAULT_DEVICE_PLUGIN_CONFIG  # pool names are DNS-1123 labels: no dots


# -- DCGM, health checks, placement ----------------------------------------------------------------------


def test_dcgm_exporter_on_without_a_service_monitor_unless_an_operator_exists(example_plans: dict[str, Plan]) -> None:
    eks = operator_values(example_plans["aws-train"])["dcgmExporter"]  # monitoring.prometheus_operator: none
    bm = operator_values(example_plans["onprem"])["dcgmExporter"]  # monitoring unset
    assert eks["enabled"] is True and eks["serviceMonitor"] == {"enabled": False}
    assert bm["enabled"] is True and bm["serviceMonitor"] == {"enabled": False}
    for v in (eks, bm):
        assert v["enablePodLabels"] is False and v["enablePodUID"] is False


def test_device_plugin_health_checks_are_not_disabled(example_plans: dict[str, Plan]) -> None:
    for stack in ("aws-train", "onprem"):
        env = operator_values(example_plans[stack])["devicePlugin"].get("env", [])
        assert all(e.get("name") != "DP_DISABLE_HEALTHCHECKS" for e in env)


def test_operands_tolerate_the_gpu_dedicated_tenant_and_quarantine_taints_only(
    example_plans: dict[str, Plan],
) -> None:
    tolerations = operator_values(example_plans["aws-train"])["daemonsets"]["tolerations"]
    assert {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"} in tolerations
    # agents-l40s is dedicated to the agents tenant
    assert {"key": "tenant", "operator": "Equal", "value": "agents", "effect": "NoSchedule"} in tolerations
    # a node `gpufleet verify` quarantined keeps its operands (tests/kubernetes/test_quarantine_tolerated.py)
    assert {"key": "gpufleet.io/quarantine", "operator": "Exists", "effect": "NoSchedule"} in tolerations
    assert len(tolerations) == 3
    assert all(t.get("key") for t in tolerations)  # no wildcard toleration


def test_nfd_on_and_operator_kept_off_gpu_nodes(example_plans: dict[str, Plan]) -> None:
    values = operator_values(example_plans["aws-train"])
    assert values["nfd"] == {"enabled": True}
    terms = values["operator"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    expr = terms["nodeSelectorTerms"][0]["matchExpressions"][0]
    assert expr == {"key": GPU_PRESENT_LABEL, "operator": "NotIn", "values": ["true"]}
    nfd_tolerations = values["node-feature-discovery"]["worker"]["tolerations"]
    assert {"key": "tenant", "operator": "Equal", "value": "agents", "effect": "NoSchedule"} in nfd_tolerations


def test_operator_release_is_pinned_and_in_its_namespace(example_plans: dict[str, Plan]) -> None:
    for stack in ("aws-train", "onprem"):
        r = release(example_plans[stack], "gpu-operator")
        assert r.inputs["chart"] == versions.GPU_OPERATOR.name
        assert r.inputs["version"] == versions.GPU_OPERATOR.version
        assert r.inputs["repositoryOpts"] == {"repo": versions.GPU_OPERATOR.repository}
        assert r.inputs["namespace"] == "gpu-operator"
