"""Standalone NVIDIA device plugin: same sharing configs and node confinement as the operator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from components.kubernetes import sharing
from components.kubernetes.device_plugin import device_plugin_values
from gpufleet.engine.plan import Plan
from model import versions
from model.conventions import DEVICE_PLUGIN_CONFIG_LABEL, GPU_PRESENT_LABEL
from model.nodes import pool_labels
from tests.conftest import example_config
from tests.kubernetes.helpers import estate, parse, release, releases, time_sliced_pool


def _device_plugin_stack(raw: dict[str, Any]) -> None:
    raw["sites"][0].setdefault("kubernetes", {})["gpu_stack"] = "device-plugin"
    raw["sites"][0]["kubernetes"]["driver_managed_by"] = "host"  # without the operator, the host brings the driver
    if raw["sites"][0]["kind"] == "baremetal":  # GPUDirect RDMA not used (its own tests set dma-buf)
        raw["sites"][0]["kubernetes"]["gpudirect_rdma"] = "off"


def test_device_plugin_site_gets_the_plugin_instead_of_the_operator(synth_config: Callable[..., Plan]) -> None:
    config = example_config("onprem")
    _device_plugin_stack(config["gpufleet:estate"])
    plan = synth_config(config)
    assert releases(plan, versions.GPU_OPERATOR.name) == []
    r = release(plan, "nvidia-device-plugin")
    assert r.inputs["chart"] == versions.NVIDIA_DEVICE_PLUGIN.name
    assert r.inputs["version"] == versions.NVIDIA_DEVICE_PLUGIN.version
    assert r.inputs["namespace"] == "kube-system"
    values = r.inputs["values"]
    assert values["migStrategy"] == "mixed"
    assert values["failOnInitError"] is True
    # one NFD per cluster: the Network Operator's on this InfiniBand site
    assert values["nfd"]["enabled"] is False
    assert release(plan, "network-operator").inputs["values"]["nfd"]["enabled"] is True
    assert values["gfd"] == {"enabled": True}  # the dev pool is MIG-partitioned


def test_device_plugin_time_slicing_configs_selected_by_pool_label() -> None:
    def mutate(raw: dict[str, Any]) -> None:
        time_sliced_pool(raw)
        _device_plugin_stack(raw)

    spec = estate("aws-train", mutate)
    values = device_plugin_values(spec.sites[0], nfd_elsewhere=False)
    key = pool_labels(spec, spec.pool("l40s-shared"))[DEVICE_PLUGIN_CONFIG_LABEL]
    assert values["config"]["default"] == sharing.DEFAULT_DEVICE_PLUGIN_CONFIG
    slicing = parse(values["config"]["map"][key])["sharing"]["timeSlicing"]
    assert slicing["failRequestsGreaterThanOne"] is True
    assert slicing["renameByDefault"] is False
    assert slicing["resources"] == [{"name": "nvidia.com/gpu", "replicas": 4}]
    assert "name" not in values["config"]  # only one of config.name / config.map may be set
    assert values["nfd"]["enabled"] is True  # GFD needs NFD and nothing else provides it here


def test_device_plugin_confined_to_gpu_nodes_with_exact_tolerations() -> None:
    spec = estate("aws-train", _device_plugin_stack)
    values = device_plugin_values(spec.sites[0], nfd_elsewhere=False)
    term = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term == [{"matchExpressions": [{"key": GPU_PRESENT_LABEL, "operator": "In", "values": ["true"]}]}]
    assert values["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
        {"key": "tenant", "operator": "Equal", "value": "agents", "effect": "NoSchedule"},
        {"key": "gpufleet.io/quarantine", "operator": "Exists", "effect": "NoSchedule"},
    ]
    assert values["gfd"] == {"enabled": False}  # whole GPUs only: no sharing labels to publish
    assert all(e.get("name") != "DP_DISABLE_HEALTHCHECKS" for e in values.get("env", []))


def test_gfd_runs_where_a_pool_spans_nvlink_domains_so_nodes_carry_the_clique_level() -> None:
    # Kueue drops a node missing a level's label (pkg/util/tas/node.go NodeMatchesFlavor): without GFD a pool whose
    # Topology has nvidia.com/gpu.clique would lose all its capacity.
    site = estate("onprem", _device_plugin_stack).sites[0]
    whole = [p.model_copy(update={"sharing": type(p.sharing)()}) for p in site.node_pools]
    assert device_plugin_values(site.model_copy(update={"node_pools": whole}), nfd_elsewhere=True)["gfd"] == {
        "enabled": False
    }
    nvl = [whole[0].model_copy(update={"nvlink_domain_nodes": 2}), *whole[1:]]
    values = device_plugin_values(site.model_copy(update={"node_pools": nvl}), nfd_elsewhere=True)
    assert values["gfd"] == {"enabled": True}
