"""The node daemons gpufleet installs tolerate the quarantine taint `gpufleet verify` adds at run time (any reason).
A DaemonSet's rollout deletes its pods, and the controller recreates one only where the pod tolerates the node's
NoSchedule taints (https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/#taints-and-tolerations). A
quarantined node without its device plugin advertises no GPUs, so `verify --return`'s re-probe could never pass.
The burst-stopped taint stays untolerated (tests/hybrid/test_backstop.py)."""

from __future__ import annotations

import pytest

from components.kubernetes import gpu_driver
from components.kubernetes.device_plugin import device_plugin_values
from components.kubernetes.dra_driver import dra_driver_values
from components.kubernetes.efa import efa_plugin_values
from components.kubernetes.gpu_operator import gpu_operator_values
from components.kubernetes.metrics_stack import metrics_stack_values
from components.kubernetes.network_operator import network_operator_values, nic_cluster_policy_spec
from gpufleet.review.reality.scheduling import Node, fits
from model import dra
from model.conventions import QUARANTINE_KEY, Taint, quarantine_taint
from model.load import parse_estate
from model.nodes import pool_taints
from model.spec import AwsSite, EfaFabric, EstateSpec, NodePool, Site
from tests.aws.ultraserver import gb200_config
from tests.kubernetes.helpers import estate

Tolerations = list[dict[str, str]]


def _daemons(spec: EstateSpec, site: Site) -> dict[str, Tolerations]:
    """Every node daemon's tolerations on `site`, by the values key that sets them."""
    operator = gpu_operator_values(spec, site)
    plugin = device_plugin_values(site, nfd_elsewhere=False)
    found = {
        "gpu-operator daemonsets.tolerations": operator["daemonsets"]["tolerations"],
        "gpu-operator node-feature-discovery.worker.tolerations": operator["node-feature-discovery"]["worker"][
            "tolerations"
        ],
        "nvidia-device-plugin tolerations": plugin["tolerations"],
        "nvidia-device-plugin nfd.worker.tolerations": plugin["nfd"]["worker"]["tolerations"],
        "prometheus-node-exporter tolerations": metrics_stack_values(site)["prometheus-node-exporter"]["tolerations"],
    }
    for driver, driver_spec in gpu_driver.fabric_driver_specs(site).items():
        found[f"NVIDIADriver {driver} tolerations"] = driver_spec["tolerations"]
    if isinstance(site, AwsSite):
        for fabric in site.fabrics:
            if isinstance(fabric, EfaFabric):
                found[f"aws-efa-k8s-device-plugin {fabric.name} tolerations"] = efa_plugin_values(site, fabric)[
                    "tolerations"
                ]
    if dra.rack_scale_pools(site):
        found["nvidia-dra-driver-gpu kubeletPlugin.tolerations"] = dra_driver_values(site)["kubeletPlugin"][
            "tolerations"
        ]
    if not isinstance(site, AwsSite) and site.fabrics:
        found["NicClusterPolicy tolerations"] = nic_cluster_policy_spec(site)["tolerations"]
        found["network-operator node-feature-discovery.worker.tolerations"] = network_operator_values(
            site, nfd_elsewhere=False
        )["node-feature-discovery"]["worker"]["tolerations"]
    return found


def _node(pool: NodePool, *extra: Taint) -> Node:
    return Node("test", f"{pool.name}-0", taints=(*pool_taints(pool), *extra))


def _runs_on(tolerations: Tolerations, node: Node) -> bool:
    return fits({"tolerations": tolerations}, node)


def _gb200() -> EstateSpec:
    return parse_estate(gb200_config()["gpufleet:estate"], "Pulumi.gb200.yaml")


SPECS = {
    "aws-train": lambda: estate("aws-train"),
    "onprem": lambda: estate("onprem"),
    "hybrid": lambda: estate("hybrid"),
    "gb200": _gb200,
}


@pytest.mark.parametrize("stack", sorted(SPECS))
@pytest.mark.parametrize("why", ["verify", "health", "drill"])
def test_node_daemons_run_on_a_quarantined_node(stack: str, why: str) -> None:
    spec = SPECS[stack]()
    for site in spec.sites:
        daemons = _daemons(spec, site)
        for pool in site.node_pools:
            node = _node(pool, quarantine_taint(why))
            for key, tolerations in daemons.items():
                # a daemon meant for the pool (it tolerates the pool's taints) still runs once the node is quarantined
                if _runs_on(tolerations, _node(pool)):
                    assert _runs_on(tolerations, node), (stack, site.name, pool.name, key)


def test_every_gpu_pool_keeps_its_device_plugin_and_dcgm_exporter_when_quarantined() -> None:
    for stack, make in SPECS.items():
        spec = make()
        for site in spec.sites:
            operands = gpu_operator_values(spec, site)["daemonsets"]["tolerations"]
            for pool in site.node_pools:
                assert _runs_on(operands, _node(pool, quarantine_taint("verify"))), (stack, pool.name)


def test_the_quarantine_toleration_names_its_key_and_no_value() -> None:
    operands = gpu_operator_values(spec := estate("aws-train"), spec.sites[0])["daemonsets"]["tolerations"]
    ours = [t for t in operands if t.get("key") == QUARANTINE_KEY]
    assert ours == [{"key": QUARANTINE_KEY, "operator": "Exists", "effect": "NoSchedule"}]
    assert all(t.get("key") for t in operands)  # still no wildcard toleration
