"""Schema rules for bare-metal inventories and fabrics: bad input names the YAML path, never a traceback."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from model.load import SpecError
from tests.model.helpers import example_spec

Mutation = Callable[[dict[str, Any]], None]


def problem(mutate: Mutation) -> str:
    with pytest.raises(SpecError) as info:
        example_spec("onprem", mutate)
    return str(info.value)


def _ib(estate: dict[str, Any]) -> dict[str, Any]:
    fabric: dict[str, Any] = estate["sites"][0]["fabrics"][0]
    return fabric


UFM = {"address": "ufm.dc1.example.com", "username_config": "ufmUser", "password_config": "ufmPassword",
       "ca_certificate_config": "ufmCa"}  # fmt: skip


def _partitioned(estate: dict[str, Any], keys: dict[str, str]) -> None:
    _ib(estate).update(device_plugin="sriov", partition_keys=keys, ufm=dict(UFM))


def test_partition_keys_need_sriov_virtual_functions() -> None:
    def pkey_on_shared(estate: dict[str, Any]) -> None:
        _ib(estate)["partition_keys"] = {"research": "0x0010"}

    message = problem(pkey_on_shared)
    assert "sites[0].fabrics[0]" in message and "partition_keys need device_plugin: sriov" in message


def test_ipoib_needs_the_hosts_ipoib_interface_named() -> None:
    def unnamed(estate: dict[str, Any]) -> None:
        del _ib(estate)["ipoib_interface"]  # there is no `ib0` to fall back on: DGX H100 has ibp24s0 ...

    message = problem(unnamed)
    assert "sites[0].fabrics[0].ipoib_interface: ipoib (on by default) needs the host IPoIB interface" in message
    assert "ibp24s0" in message and "ipoib: false" in message

    def no_ipoib(estate: dict[str, Any]) -> None:
        del _ib(estate)["ipoib_interface"]
        _ib(estate)["ipoib"] = False

    assert example_spec("onprem", no_ipoib).sites[0].fabrics[0].ipoib_interface is None  # type: ignore[union-attr]


def test_ipoib_interface_is_a_linux_interface_name() -> None:
    def bad(estate: dict[str, Any]) -> None:
        _ib(estate)["ipoib_interface"] = "ibp24s0; reboot"

    assert "sites[0].fabrics[0].ipoib_interface" in problem(bad)


def test_default_partition_key_is_not_a_tenant_partition() -> None:
    def default_pkey(estate: dict[str, Any]) -> None:
        _partitioned(estate, {"research": "0x7fff"})

    message = problem(default_pkey)
    assert "sites[0].fabrics[0].partition_keys" in message and "0x7fff" in message


def test_partition_key_of_an_unknown_tenant_is_rejected() -> None:
    def unknown(estate: dict[str, Any]) -> None:
        _partitioned(estate, {"ghost": "0x0010"})

    assert "sites[0].fabrics[0].partition_keys.ghost: ghost is not a tenant of the estate" in problem(unknown)


def test_two_tenants_sharing_a_partition_key_is_rejected() -> None:
    def shared(estate: dict[str, Any]) -> None:
        _partitioned(estate, {"research": "0x10", "product": "0x0010"})

    assert "share partition key" in problem(shared)


def test_partition_keys_need_the_ufm_ib_kubernetes_manages_them_through() -> None:
    def no_ufm(estate: dict[str, Any]) -> None:
        _partitioned(estate, {"research": "0x0010"})
        del _ib(estate)["ufm"]

    message = problem(no_ufm)
    assert "sites[0].fabrics[0]" in message and "partition_keys need ufm" in message
    assert "ufm: {address: <UFM host>" in message

    def ufm_without_partitions(estate: dict[str, Any]) -> None:
        _ib(estate)["ufm"] = dict(UFM)

    assert "ufm is used only to manage partition_keys" in problem(ufm_without_partitions)


def test_ufm_is_reached_over_verified_tls_unless_the_stack_opts_out() -> None:
    def unverified(estate: dict[str, Any]) -> None:
        _partitioned(estate, {"research": "0x0010"})
        del _ib(estate)["ufm"]["ca_certificate_config"]

    message = problem(unverified)
    assert "sites[0].fabrics[0].ufm" in message and "ufm needs ca_certificate_config" in message

    def opted_out(estate: dict[str, Any]) -> None:
        unverified(estate)
        _ib(estate)["ufm"]["insecure_skip_tls_verify"] = True

    assert example_spec("onprem", opted_out).sites[0].fabrics[0].ufm.ca_certificate_config is None  # type: ignore[union-attr]


def test_ufm_credentials_are_required_secrets() -> None:
    from model.secrets import required_secrets

    spec = example_spec("onprem", lambda e: _partitioned(e, {"research": "0x0010"}))
    assert required_secrets(spec)[-3:] == ["ufmUser", "ufmPassword", "ufmCa"]


def test_one_fabric_per_site_has_partitions_for_its_one_ib_kubernetes() -> None:
    def two(estate: dict[str, Any]) -> None:
        _partitioned(estate, {"research": "0x0010"})
        second = {**_ib(estate), "name": "ib2", "partition_keys": {"product": "0x0020"}}
        estate["sites"][0]["fabrics"].append(second)

    message = problem(two)
    assert "sites[0].fabrics: fabrics ib, ib2 all set partition_keys" in message and "one ib-kubernetes" in message


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


# -- SSH host keys (the join token travels over these connections) ----------------------------------------


def test_a_pool_server_without_a_host_key_is_refused() -> None:
    def drop(estate: dict[str, Any]) -> None:
        del estate["sites"][0]["inventory"][2]["host_key"]

    message = problem(drop)
    assert "sites[0].inventory[2].host_key: server gpu-r1-03 needs its SSH host key" in message
    assert "ssh-keyscan -t ed25519 10.10.1.13" in message and "insecure_skip_host_key_check" in message


def test_a_bastion_without_a_host_key_is_refused() -> None:
    def drop(estate: dict[str, Any]) -> None:
        del estate["sites"][0]["ssh"]["bastion_host_key"]

    assert "sites[0].ssh.bastion_host_key: bastion ops@bastion.dc1.example.com needs its SSH host key" in problem(drop)


def test_a_server_no_pool_selects_needs_no_host_key() -> None:
    def unpooled(estate: dict[str, Any]) -> None:
        spare = {**estate["sites"][0]["inventory"][0], "hostname": "spare-01", "labels": {"pool": "spare"}}
        del spare["host_key"]
        estate["sites"][0]["inventory"].append(spare)

    example_spec("onprem", unpooled)  # nothing connects to it


@pytest.mark.parametrize(
    ("key", "words"),
    [
        ("AAAAC3NzaC1lZDI1NTE5AAAAIILiO9g33J", "expected an OpenSSH public host key line"),
        ("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7", "RSA host keys are not accepted"),
        ("ssh-dss AAAAB3NzaC1kc3MAAACBAP", "host key type 'ssh-dss' is not one of"),
        ("ssh-ed25519 not-base64!", "not valid base64 key data"),
        # a valid blob of another type under the ed25519 label
        ("ssh-ed25519 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBA==", "does not hold a ssh-ed25519 key"),
    ],
)
def test_malformed_or_rsa_host_keys_are_refused(key: str, words: str) -> None:
    def bad(estate: dict[str, Any]) -> None:
        estate["sites"][0]["inventory"][0]["host_key"] = key

    message = problem(bad)
    assert "sites[0].inventory[0].host_key" in message and words in message, message


def test_opting_out_of_host_key_checks_is_explicit() -> None:
    def opt_out(estate: dict[str, Any]) -> None:
        estate["sites"][0]["ssh"]["insecure_skip_host_key_check"] = True
        del estate["sites"][0]["ssh"]["bastion_host_key"]
        for server in estate["sites"][0]["inventory"]:
            del server["host_key"]

    example_spec("onprem", opt_out)


def test_a_system_node_taint_needs_a_kubernetes_effect() -> None:
    def bad_effect(estate: dict[str, Any]) -> None:
        estate["sites"][0]["system_nodes"] = [{"name": "cp", "taints": [{"key": "k", "effect": "NO_SCHEDULE"}]}]

    message = problem(bad_effect)
    assert "sites[0].system_nodes[0].taints[0].effect" in message and "NoSchedule" in message
