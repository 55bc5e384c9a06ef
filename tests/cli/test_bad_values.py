"""Values that mean something else are refused by `gpufleet validate`: exit 2, the file and YAML path named, the rule
said. Hostile text in any value that reaches a server's root scripts, and the classes of wrong values issue 29
lists (netmask CIDRs, numeric host names, special-purpose addresses, AWS tag limits, non-strings as secrets, a
boolean GPU count, an instance type EC2 does not have, a key written twice).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from model.load import ESTATE_KEY
from model.secrets import PLACEHOLDER
from tests.cli.badinput import STACK, assert_bad_input, invoke, stack_project
from tests.conftest import example_config

Mutation = Callable[[dict[str, Any]], None]
HOSTILE = ["$(touch /tmp/gpufleet-pwned)", "a\nb", "x'; touch y; '", "`id`", "a b", "*"]


def _site(e: dict[str, Any]) -> dict[str, Any]:
    return e["sites"][0]  # type: ignore[no-any-return]


def _server(e: dict[str, Any]) -> dict[str, Any]:
    return _site(e)["inventory"][0]  # type: ignore[no-any-return]


def _tier(e: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(t for t in _site(e)["storage"] if t["kind"] == kind)  # type: ignore[no-any-return]


def _eks_hybrid(e: dict[str, Any], **join: str) -> None:
    _site(e)["join"] = {
        "method": "eks-hybrid",
        "api_server": "api.example.com:443",
        "cluster_name": "c",
        "region": "us-east-1",
        **join,
    }


def _host_driver(e: dict[str, Any]) -> None:
    _site(e)["kubernetes"].update(driver_managed_by="host", gpudirect_rdma="off")


# Every onprem stack value a bootstrap script or a node's configuration carries, as a setter and its YAML path.
SCRIPT_VALUES: dict[str, tuple[Callable[[dict[str, Any], str], None], str]] = {
    "api_server": (lambda e, v: _site(e)["join"].update(api_server=v), "sites[0].join.api_server"),
    "site-driver": (lambda e, v: _site(e)["kubernetes"].update(driver_version=v), "kubernetes.driver_version"),
    "server-driver": (
        lambda e, v: _host_driver(e) or _server(e).update(driver_version=v),
        "inventory[0].driver_version",
    ),
    "ib_port": (lambda e, v: _server(e).update(ib_ports=[v]), "inventory[0].ib_ports[0]"),
    "nvme_device": (lambda e, v: _server(e).update(nvme_devices=[v]), "inventory[0].nvme_devices[0]"),
    "hostname": (lambda e, v: _server(e).update(hostname=v), "inventory[0].hostname"),
    "address": (lambda e, v: _server(e).update(address=v), "inventory[0].address"),
    "rack": (lambda e, v: _server(e).update(rack=v), "inventory[0].rack"),
    "rail": (lambda e, v: _server(e).update(rail=v), "inventory[0].rail"),
    "mount_path": (lambda e, v: _tier(e, "scratch").update(mount_path=v), ".mount_path"),
    "pool-label": (lambda e, v: _site(e)["node_pools"][0].update(labels={"team": v}), "node_pools[0].labels.team"),
    "ssh-user": (lambda e, v: _site(e)["ssh"].update(user=v), "ssh.user"),
    "bastion": (lambda e, v: _site(e)["ssh"].update(bastion=v), "ssh.bastion"),
    "ipoib_interface": (lambda e, v: _site(e)["fabrics"][0].update(ipoib_interface=v), "fabrics[0].ipoib_interface"),
    "cluster_name": (lambda e, v: _eks_hybrid(e, cluster_name=v), "join.cluster_name"),
    "region": (lambda e, v: _eks_hybrid(e, region=v), "join.region"),
}


def validate(tmp: Path, mutate: Mutation, stack: str = "onprem") -> Any:
    config = example_config(stack)
    for key in ("joinToken", "ssmActivationId"):  # what an eks-hybrid join reads; unused otherwise
        config[f"gpufleet:{key}"] = {"secure": PLACEHOLDER}
    mutate(config[ESTATE_KEY])
    tmp.mkdir(parents=True, exist_ok=True)
    project = stack_project(tmp, config)
    return invoke(["validate", "-s", STACK], project), str(project / "stacks" / f"Pulumi.{STACK}.yaml")


@pytest.mark.parametrize("field", sorted(SCRIPT_VALUES))
def test_hostile_text_in_any_value_a_script_carries_is_refused(tmp_path: Path, field: str) -> None:
    setter, path = SCRIPT_VALUES[field]
    for i, value in enumerate(HOSTILE):
        answer, stack_file = validate(tmp_path / str(i), lambda e, v=value: setter(e, v))  # type: ignore[misc]
        assert_bad_input(answer, stack_file, path)


def test_the_example_values_of_every_script_field_are_accepted(tmp_path: Path) -> None:
    """The types refuse what is wrong, not what is usual: a field set to a value like the examples' still passes."""
    usual = {
        "api_server": "10.0.0.10:6443", "site-driver": "550.54.15", "server-driver": "580.126.20", "ib_port": "ibp23s0",
        "nvme_device": "/dev/nvme10n1", "hostname": "gpu-r1-01", "address": "gpu-r1-01.dc1.example.com",
        "rack": "R1.a_2", "rail": "3", "mount_path": "/mnt/scratch-0", "pool-label": "ml.platform",
        "ssh-user": "svc_gpufleet", "bastion": "bastion.example.com", "ipoib_interface": "ib0.8001",
        "cluster_name": "dc1_Hybrid-2", "region": "us-gov-west-1",
    }  # fmt: skip
    for i, (field, value) in enumerate(sorted(usual.items())):
        setter = SCRIPT_VALUES[field][0]
        answer, _ = validate(tmp_path / str(i), lambda e, s=setter, v=value: s(e, v))  # type: ignore[misc]
        assert answer.code == 0, (field, value, answer.stderr[-400:])


@pytest.mark.parametrize(
    ("api_server", "rule"),
    [
        ("k8s-api.dc1.example.com", "exactly one port"),
        ("k8s-api.dc1.example.com:6443:6443", "exactly one port"),
        ("", "exactly one port"),
        ("k8s-api.dc1.example.com:99999", "1..65535"),
        ("k8s-api.dc1.example.com:0", "1..65535"),
        ("k8s-api.dc1.example.com:+80", "1..65535"),
        ("[fd00::1]", "[IPv6 address]:port"),
        ("127.0.0.1:6443", "loopback"),
        ("localhost:6443", "loopback host (RFC 6761"),
        ("api.localhost:6443", "loopback host (RFC 6761"),
    ],
)
def test_an_api_server_without_exactly_one_port_in_range_is_refused(tmp_path: Path, api_server: str, rule: str) -> None:
    answer, stack_file = validate(tmp_path, lambda e: _site(e)["join"].update(api_server=api_server))
    assert_bad_input(answer, stack_file, "join.api_server", rule)


def test_an_ipv6_api_server_in_brackets_is_accepted(tmp_path: Path) -> None:
    answer, _ = validate(tmp_path, lambda e: _site(e)["join"].update(api_server="[fd00::10]:6443"))
    assert answer.code == 0, answer.stderr[-400:]


@pytest.mark.parametrize("cidr", ["10.40.0.0/255.255.0.0", "10.40.0.0/0.0.255.255", "10.40.0.0/١٦"])
def test_a_netmask_where_a_prefix_length_belongs_is_refused(tmp_path: Path, cidr: str) -> None:
    answer, stack_file = validate(tmp_path, lambda e: _tier(e, "nfs").update(cidr=cidr))
    assert_bad_input(answer, stack_file, ".cidr", "not a netmask")


@pytest.mark.parametrize("name", ["10.10.1", "010.0.0.1", "0x0a000001", "nfs.10", "4294967295"])
def test_a_host_name_that_reads_as_a_number_is_refused(tmp_path: Path, name: str) -> None:
    answer, stack_file = validate(tmp_path, lambda e: _tier(e, "nfs").update(server=name))
    assert_bad_input(answer, stack_file, ".server", "RFC 1123")


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("255.255.255.255", "broadcast"),
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("169.254.10.1", "link-local"),
        ("fe80::1", "link-local"),
        ("0.0.0.0", "unspecified"),
    ],
)
def test_a_server_address_no_server_can_have_is_refused(tmp_path: Path, address: str, why: str) -> None:
    answer, stack_file = validate(tmp_path, lambda e: _server(e).update(address=address))
    assert_bad_input(answer, stack_file, "inventory[0].address", why)
    answer, stack_file = validate(tmp_path / "nfs", lambda e: _tier(e, "nfs").update(server=address))
    assert_bad_input(answer, stack_file, ".server", why)


@pytest.mark.parametrize(
    ("tags", "where", "rule"),
    [
        ({f"t{i}": "x" for i in range(43)}, "metadata.tags", "at most 42"),
        ({"k" * 129: "x"}, "metadata.tags", "1..128"),
        ({"team": "v" * 257}, "metadata.tags.team", "256"),
        ({"aws:createdBy": "me"}, "metadata.tags", "reserved"),
        ({"AWS:Team": "me"}, "metadata.tags", "reserved"),
    ],
)
def test_tags_aws_would_refuse_are_refused(tmp_path: Path, tags: dict[str, str], where: str, rule: str) -> None:
    answer, stack_file = validate(tmp_path, lambda e: e["metadata"].update(tags=tags), "aws-train")
    assert_bad_input(answer, stack_file, where, rule)


def test_an_owner_longer_than_a_tag_value_is_refused(tmp_path: Path) -> None:
    answer, stack_file = validate(tmp_path, lambda e: e["metadata"].update(owner="o" * 257), "aws-train")
    assert_bad_input(answer, stack_file, "metadata.owner", "256")


@pytest.mark.parametrize("value", [None, [], 1, {"secure": 1}, {"secure": ""}, {"secure": None}, "", {}])
def test_a_secret_whose_value_is_no_secret_is_refused(tmp_path: Path, value: object) -> None:
    config = example_config("onprem")
    config["gpufleet:kubeconfig"] = value
    answer = invoke(["validate", "-s", STACK], stack_project(tmp_path, config))
    assert_bad_input(
        answer,
        "config.gpufleet:kubeconfig",
        "secure: <ciphertext>" if not isinstance(value, dict) or set(value) != {"secure"} else "`secure:` must hold",
    )


@pytest.mark.parametrize("count", [True, "8", 8.0])
def test_a_gpu_count_that_is_not_an_integer_is_refused(tmp_path: Path, count: object) -> None:
    answer, stack_file = validate(tmp_path, lambda e: _server(e).update(gpu_count=count))
    assert_bad_input(answer, stack_file, "inventory[0].gpu_count")


def test_a_system_instance_type_ec2_does_not_have_is_refused_with_the_closest(tmp_path: Path) -> None:
    answer, stack_file = validate(tmp_path, lambda e: _site(e).update(system_instance_type="m7i.xlarg"), "aws-train")
    assert_bad_input(answer, stack_file, "sites[0].system_instance_type", "not an EC2 instance type", "m7i.xlarge")


def test_a_system_instance_type_outside_the_gpu_catalog_is_accepted(tmp_path: Path) -> None:
    price = {"instance_type": "m6i.large", "usd_per_hour": 0.096, "date": "2026-11-30", "source": "AWS on-demand page"}

    def m6i(e: dict[str, Any]) -> None:
        _site(e).update(system_instance_type="m6i.large", prices=[*_site(e).get("prices", []), price])

    answer, _ = validate(tmp_path, m6i, "aws-train")
    assert answer.code == 0, answer.stderr[-400:]


def test_a_key_written_twice_is_refused_with_both_lines(tmp_path: Path) -> None:
    text = (Path(__file__).parents[2] / "stacks" / "Pulumi.onprem.yaml").read_text()
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("api_server:"))
    indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    lines.insert(at + 1, f"{indent}api_server: 10.66.6.6:6443")
    project = stack_project(tmp_path, text="\n".join(lines) + "\n")
    answer = invoke(["validate", "-s", STACK], project)
    assert_bad_input(answer, f"Pulumi.{STACK}.yaml", f"line {at + 2}", "duplicate key 'api_server'", f"line {at + 1}")
