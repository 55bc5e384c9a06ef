"""Who installs the NVIDIA driver on bare metal (kubernetes.driver_managed_by): the GPU Operator's values and the
schema agree with the preflight (tests/baremetal/test_preflight.py) on one owner per site."""

from __future__ import annotations

from typing import Any

import pytest

from components.kubernetes.gpu_operator import gpu_operator_values
from model import versions
from model.load import SpecError
from tests.kubernetes.helpers import Mutate, estate


def _host(raw: dict[str, Any]) -> None:
    raw["sites"][0]["kubernetes"]["driver_managed_by"] = "host"
    if raw["sites"][0]["kind"] == "baremetal":  # GPUDirect RDMA not used (its own tests set dma-buf)
        raw["sites"][0]["kubernetes"]["gpudirect_rdma"] = "off"


def _add_lustre(raw: dict[str, Any]) -> None:
    raw["sites"][0]["storage"].append(
        {"kind": "parallel-fs", "name": "lustre", "csi_driver": "lustre.csi.k8s.io", "throughput_gbps": 200}
    )


def problem(stack: str, mutate: Mutate) -> str:
    with pytest.raises(SpecError) as info:
        estate(stack, mutate)
    return str(info.value)


def test_bare_metal_driver_is_operator_managed_by_default() -> None:
    spec = estate("onprem")
    assert spec.sites[0].kubernetes.driver_managed_by == "operator"
    driver = gpu_operator_values(spec, spec.sites[0])["driver"]
    assert driver["enabled"] is True
    assert driver["version"] == spec.sites[0].kubernetes.driver_version
    assert driver["upgradePolicy"]["maxParallelUpgrades"] == 1


def test_host_managed_site_turns_the_operator_driver_off_but_keeps_the_toolkit() -> None:
    spec = estate("onprem", _host)
    values = gpu_operator_values(spec, spec.sites[0])
    # no version and no upgrade policy: the operator never touches the host's driver
    assert values["driver"] == {"enabled": False}
    assert values["toolkit"] == {"enabled": True}  # unlike EKS, where the AMI ships the toolkit too
    assert values["devicePlugin"]["enabled"] is True


def test_host_managed_site_gets_no_gpudirect_storage_without_the_operators_driver() -> None:
    def host_with_lustre(raw: dict[str, Any]) -> None:
        _host(raw)
        _add_lustre(raw)

    operator = estate("onprem", _add_lustre)
    assert gpu_operator_values(operator, operator.sites[0])["gds"] == {"enabled": True}
    host = estate("onprem", host_with_lustre)
    assert gpu_operator_values(host, host.sites[0])["gds"] == {"enabled": False}


def test_operator_driver_defaults_to_the_operator_pin_when_the_site_pins_none() -> None:
    def unpin(raw: dict[str, Any]) -> None:
        del raw["sites"][0]["kubernetes"]["driver_version"]

    spec = estate("onprem", unpin)
    assert gpu_operator_values(spec, spec.sites[0])["driver"]["version"] == versions.GPU_DRIVER


def test_aws_site_set_to_operator_managed_drivers_is_rejected() -> None:
    def operator_on_eks(raw: dict[str, Any]) -> None:
        raw["sites"][0]["kubernetes"]["driver_managed_by"] = "operator"

    message = problem("aws-train", operator_on_eks)
    assert "sites[0].kubernetes.driver_managed_by" in message
    assert "EKS NVIDIA AMIs ship the driver" in message


def test_aws_site_leaves_the_driver_to_the_ami_whether_unset_or_host() -> None:
    for mutate in (None, _host):
        spec = estate("aws-train", mutate)
        values = gpu_operator_values(spec, spec.sites[0])
        assert values["driver"] == {"enabled": False}
        assert values["toolkit"] == {"enabled": False}


def test_server_driver_pin_on_an_operator_managed_site_is_rejected() -> None:
    def server_pin(raw: dict[str, Any]) -> None:
        raw["sites"][0]["inventory"][1]["driver_version"] = "570.86.15"

    message = problem("onprem", server_pin)
    assert "sites[0].inventory[1].driver_version" in message
    assert "driver_managed_by: host" in message

    def host_server_pin(raw: dict[str, Any]) -> None:
        _host(raw)
        server_pin(raw)

    assert estate("onprem", host_server_pin).sites[0].inventory[1].driver_version == "570.86.15"


def test_bare_metal_device_plugin_site_must_take_the_driver_from_the_host() -> None:
    def device_plugin(raw: dict[str, Any]) -> None:
        raw["sites"][0]["kubernetes"]["gpu_stack"] = "device-plugin"

    message = problem("onprem", device_plugin)
    assert "sites[0].kubernetes.driver_managed_by" in message
    assert "nothing installs the NVIDIA driver" in message

    def device_plugin_on_host(raw: dict[str, Any]) -> None:
        device_plugin(raw)
        _host(raw)

    assert estate("onprem", device_plugin_on_host).sites[0].kubernetes.gpu_stack == "device-plugin"


def test_host_driver_site_on_a_fabric_must_say_how_gpudirect_rdma_works() -> None:
    """With driver_managed_by: host the GPU Operator installs no driver, so `driver.rdma` (nvidia-peermem in the
    operator's driver pod) cannot provide GPUDirect RDMA: the site states it (dma-buf or off)."""

    def host_unsaid(raw: dict[str, Any]) -> None:
        raw["sites"][0]["kubernetes"]["driver_managed_by"] = "host"

    message = problem("onprem", host_unsaid)
    assert "sites[0].kubernetes.gpudirect_rdma" in message and "dma-buf" in message

    def operator_said(raw: dict[str, Any]) -> None:
        raw["sites"][0]["kubernetes"]["gpudirect_rdma"] = "dma-buf"

    assert "only for a bare-metal site with driver_managed_by: host" in problem("onprem", operator_said)

    def host_dma_buf(raw: dict[str, Any]) -> None:
        host_unsaid(raw)
        raw["sites"][0]["kubernetes"]["gpudirect_rdma"] = "dma-buf"

    spec = estate("onprem", host_dma_buf)
    assert gpu_operator_values(spec, spec.sites[0])["driver"] == {"enabled": False}
