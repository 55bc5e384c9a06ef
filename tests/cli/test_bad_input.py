"""Bad input never crashes: each input that once raised a traceback, hung or was silently accepted now ends in a
message naming the file (or argument) and YAML path, exit 2 and nothing written, for every command that reads it.

docs/cli.md promises this ("Exit codes" and "Input limits"); one test per reported way in, named after what it feeds.
"""

from __future__ import annotations

import datetime as dt
import gzip
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpufleet.engine.synth import engine_config
from model.load import ESTATE_KEY, LEDGER_KEY, WINDOW_KEY, StackFile
from tests.cli.badinput import (
    READERS,
    STACK,
    WORKLOADS,
    assert_bad_input,
    dump,
    invoke,
    snapshot,
    stack_project,
)
from tests.conftest import ROOT, example_config

HYBRID_TEXT = (ROOT / "stacks" / "Pulumi.hybrid.yaml").read_text()
Mutation = Callable[[dict[str, Any]], None]


def estate(mutate: Mutation, stack: str = "hybrid") -> dict[str, Any]:
    config = example_config(stack)
    mutate(config[ESTATE_KEY])
    return config


def refused_by_every_reader(project: Path, *names: str) -> None:
    before = snapshot(project)
    for command, args in READERS.items():
        answer = invoke(args, project)
        assert_bad_input(answer, *names)
        assert snapshot(project) == before, f"{command} wrote something"


def stack_name(project: Path) -> str:
    return str(project / "stacks" / f"Pulumi.{STACK}.yaml")


# -- 1: files that are not UTF-8 --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        HYBRID_TEXT.encode() + "# café\n".encode("latin-1"),
        gzip.compress(HYBRID_TEXT.encode()),
        bytes(range(256)),
    ],
    ids=["latin-1", "gzip", "binary"],
)
def test_a_stack_file_that_is_not_utf8_is_bad_input(tmp_path: Path, data: bytes) -> None:
    project = stack_project(tmp_path, text=data)
    refused_by_every_reader(project, stack_name(project), "not UTF-8")


def test_a_workload_file_that_is_not_utf8_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_bytes(WORKLOADS.read_bytes() + "# café\n".encode("latin-1"))
    assert_bad_input(invoke(["size", str(path)]), str(path), "not UTF-8")


def test_a_pulumi_yaml_that_is_not_utf8_is_bad_input(tmp_path: Path) -> None:
    project = stack_project(tmp_path, example_config("hybrid"))
    (project / "Pulumi.yaml").write_bytes(b"name: caf\xe9\n")
    refused_by_every_reader(project, str(project / "Pulumi.yaml"), "not UTF-8")


# -- 2: text that looks like Rich markup --------------------------------------------------------------------------


def test_markup_in_a_stack_name_is_quoted_not_interpreted() -> None:
    for args in READERS.values():
        answer = invoke([*args[:-1], "[/]"] if args[-1] == STACK else [*args[:-3], "[/]", *args[-2:]], ROOT)
        assert_bad_input(answer, "--stack '[/]'")


def test_markup_in_at_is_quoted_not_interpreted() -> None:
    assert_bad_input(invoke(["cost", "-s", "hybrid", "--at", "[/]"], ROOT), "--at: '[/]'")


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda e: e["sites"][0].update(kind="[/]"), "config.gpufleet:estate.sites[0]"),
        (lambda e: e["sites"][1]["node_pools"][0].update(instance_type="[/x]"), "sites[1].node_pools[0]"),
    ],
    ids=["site-kind", "instance-type"],
)
def test_markup_in_a_stack_value_is_quoted_not_interpreted(tmp_path: Path, mutate: Mutation, path: str) -> None:
    project = stack_project(tmp_path, estate(mutate))
    refused_by_every_reader(project, stack_name(project), path, "[/")


def test_markup_in_an_enforcement_key_is_quoted_not_interpreted(tmp_path: Path) -> None:
    config = estate(lambda e: e.setdefault("policies", {}).update(enforcement={"[/]": "advisory"}))
    project = stack_project(tmp_path, config)
    assert_bad_input(invoke(READERS["check"], project), stack_name(project), "[/]")


def test_a_name_pattern_error_shows_the_real_pattern(tmp_path: Path) -> None:
    """Printed as markup, `[-a-z0-9]` vanished from the pattern; users saw `'^([-a-z0-9]*)?$'`."""
    project = stack_project(tmp_path, estate(lambda e: e["sites"][0].update(name="Not_A_Label")))
    answer = invoke(READERS["cost"], project)
    assert_bad_input(answer, "sites[0].name", "'^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'")


# -- 3, 4, 5, 12: what the YAML loader refuses before anything else runs ----------------------------------------

ALIAS_BOMB = "\n".join(
    ["    a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    + [f"    a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("  gpufleet:x: " + "9" * 5000, "integer longer than 30 digits"),
        ("  gpufleet:x: 2027-02-30", "'2027-02-30' is not a date or time"),
        ("  gpufleet:x: " + "[" * 1000 + "]" * 1000, "nested deeper than 64 levels"),
        ("  gpufleet:anything:\n" + ALIAS_BOMB, "once aliases are expanded"),
        (f"  {LEDGER_KEY}:\n" + ALIAS_BOMB, "once aliases are expanded"),
        ("  gpufleet:x: &a [*a]", "an alias refers to the value that contains it"),
    ],
    ids=["huge-int", "not-a-date", "deep-nesting", "alias-bomb", "alias-bomb-ledger", "recursive-alias"],
)
def test_the_loader_refuses_what_would_exhaust_time_or_memory(tmp_path: Path, extra: str, message: str) -> None:
    project = stack_project(tmp_path, text=HYBRID_TEXT + extra + "\n")
    refused_by_every_reader(project, stack_name(project), "not valid YAML (line", message)


def test_a_control_character_is_named_with_its_line_and_yaml_path(tmp_path: Path) -> None:
    text = HYBRID_TEXT.replace("name: hyb", "name: h\x01yb", 1)
    project = stack_project(tmp_path, text=text)
    answer = invoke(READERS["cost"], project)
    assert_bad_input(answer, "character U+0001 is not allowed (in config.gpufleet:estate.metadata.name)")
    assert len(answer.stderr.splitlines()) == 1


# -- 6: times near the ends of the calendar ------------------------------------------------------------------------


@pytest.mark.parametrize("when", ["0001-01-01T00:30:00+05:00", "9999-12-31T23:30:00-05:00"])
def test_a_burst_window_near_year_1_or_9999_is_refused(tmp_path: Path, when: str) -> None:
    config = example_config("hybrid")
    config[WINDOW_KEY] = {
        "pool": "burst-h100", "nodes": 1, "instance_type": "p5.48xlarge", "availability_zone": "us-east-1a",
        "start": when, "expires": "2026-11-20T12:00:00Z",
    }  # fmt: skip
    project = stack_project(tmp_path, config)
    refused_by_every_reader(project, f"config.{WINDOW_KEY}.start", "outside the years 2000..2200")


def test_a_ledger_time_near_year_9999_is_refused(tmp_path: Path) -> None:
    config = example_config("hybrid")
    config[LEDGER_KEY] = [
        {"pool": "burst-h100", "instance_type": "p5.48xlarge", "nodes": 1, "usd": 1.0,
         "start": "2026-11-01T00:00:00Z", "end": "9999-12-31T23:59:00-05:00"}
    ]  # fmt: skip
    project = stack_project(tmp_path, config)
    refused_by_every_reader(project, f"config.{LEDGER_KEY}[0].end", "outside the years")


# -- 7: config outside the estate is handed to the engine as the Pulumi CLI would ----------------------------------


def test_a_date_key_outside_the_estate_reaches_the_engine_as_text() -> None:
    stack_file = StackFile(Path("s.yaml"), "p", {"gpufleet:notes": {dt.date(2024, 1, 1): "x", 3: [True]}})
    config, _ = engine_config(stack_file)
    assert config["gpufleet:notes"] == '{"2024-01-01": "x", "3": [true]}'


# -- 8, 11, 14: numbers and ranges no real estate reaches ------------------------------------------------------------


@pytest.mark.parametrize(
    ("mutate", "path", "limit"),
    [
        (lambda e: e["sites"][1]["node_pools"][0]["scaling"].update(max=10**20), "scaling.max", "10000"),
        (lambda e: e["tenants"][0].update(borrowing_limit=10**20), "tenants[0].borrowing_limit", "160000"),
        (lambda e: e["sites"][1]["vpc"].update(cidr="0.0.0.0/0"), "sites[1].vpc.cidr", "between /16 and /28"),
        (lambda e: e["sites"][1]["vpc"].update(cidr="10.0.0.0/40"), "sites[1].vpc.cidr", "not a CIDR"),
        (lambda e: e["sites"][1]["vpc"].update(cidr="fd00::/16"), "sites[1].vpc.cidr", "must be IPv4"),
        (lambda e: e["sites"][1]["vpc"].update(cidr="10.50.0.0/24"), "sites[1].vpc.cidr", "too small"),
    ],
    ids=["scaling-max", "borrowing-limit", "vpc-everything", "vpc-invalid", "vpc-ipv6", "vpc-too-small"],
)
def test_numbers_and_ranges_out_of_bounds_name_the_limit(
    tmp_path: Path, mutate: Mutation, path: str, limit: str
) -> None:
    project = stack_project(tmp_path, estate(mutate))
    refused_by_every_reader(project, stack_name(project), path, limit)


def test_an_invalid_vpc_cidr_without_a_fabric_is_blamed_on_the_vpc(tmp_path: Path) -> None:
    def mutate(e: dict[str, Any]) -> None:
        site = e["sites"][1]
        site["vpc"]["cidr"] = "10.50.0.0/26"
        site["fabrics"] = []
        for pool in site["node_pools"]:
            pool.pop("fabric", None)
            pool["availability_zone"] = "us-east-1a"
        for tier in site.get("storage", []):
            tier.pop("fabric", None)

    project = stack_project(tmp_path, estate(mutate))
    answer = invoke(READERS["cost"], project)
    assert_bad_input(answer, "sites[1].vpc.cidr")
    assert "subnet_cidr" not in answer.stderr


def test_a_huge_integer_in_scaling_max_is_refused_by_the_loader(tmp_path: Path) -> None:
    text = HYBRID_TEXT.replace("scaling: {min: 0, max: 4}", f"scaling: {{min: 0, max: {10**400}}}", 1)
    assert text != HYBRID_TEXT
    project = stack_project(tmp_path, text=text)
    refused_by_every_reader(project, stack_name(project), "integer longer than 30 digits")


@pytest.mark.parametrize("hours", [".inf", ".nan", "1e308"])
def test_size_refuses_infinite_nan_or_absurd_hours(tmp_path: Path, hours: str) -> None:
    path = tmp_path / "w.yaml"
    text = WORKLOADS.read_text()
    assert "hours_per_device: 168" in text
    path.write_text(text.replace("hours_per_device: 168", f"hours_per_device: {hours}", 1))
    assert_bad_input(invoke(["size", str(path)]), str(path), "planning.hours_per_device")


# -- 9: URLs -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("endpoint", ["https://s3.dc1.example.com:99999", "https://s3:https", "https://fe80::1%eth0"])
def test_an_onprem_s3_endpoint_with_a_bad_port_or_host_is_refused(tmp_path: Path, endpoint: str) -> None:
    def mutate(e: dict[str, Any]) -> None:
        tiers = e["sites"][0]["storage"]
        s3 = next(t for t in tiers if t["kind"] == "s3-onprem")
        s3["endpoint"] = endpoint

    project = stack_project(tmp_path, estate(mutate, "onprem"))
    refused_by_every_reader_but_burst(project, ".endpoint")


def refused_by_every_reader_but_burst(project: Path, *names: str) -> None:
    """An estate without a burst policy: burst status refuses it for that (exit 2) before anything else."""
    before = snapshot(project)
    for command, args in READERS.items():
        answer = invoke(args, project)
        assert_bad_input(answer, stack_name(project), *(() if command == "burst status" else names))
        assert snapshot(project) == before


# -- 13: paths and arguments ------------------------------------------------------------------------------------


def test_a_stack_file_that_is_a_directory_is_bad_input(tmp_path: Path) -> None:
    project = stack_project(tmp_path, example_config("hybrid"))
    path = project / "stacks" / f"Pulumi.{STACK}.yaml"
    path.unlink()
    path.mkdir()
    refused_by_every_reader(project, str(path), "is a directory")


def test_a_stack_file_that_is_a_symlink_loop_is_bad_input(tmp_path: Path) -> None:
    project = stack_project(tmp_path, example_config("hybrid"))
    path = project / "stacks" / f"Pulumi.{STACK}.yaml"
    path.unlink()
    os.symlink(path, path)
    refused_by_every_reader(project, str(path), "cannot be read")


@pytest.mark.parametrize("name", ["a\x00b", "x" * 5000, "../etc/passwd"])
def test_a_stack_name_pulumi_would_refuse_is_bad_input(name: str) -> None:
    for args in READERS.values():
        argv = [("" if a != STACK else name) or a for a in args]
        assert_bad_input(invoke(argv, ROOT), "--stack", "not a stack name")


def test_a_project_option_pointing_at_a_file_is_bad_input(tmp_path: Path) -> None:
    file = tmp_path / "f"
    file.write_text("")
    for args in READERS.values():
        assert_bad_input(invoke(args, file), str(file), "must be a directory")


# -- values once accepted silently ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stack", "mutate", "path"),
    [
        ("aws-train", lambda e: e["tenants"][0].update(egress_cidrs=["300.1.1.1/8"]), "tenants[0].egress_cidrs[0]"),
        ("onprem", lambda e: _tier(e, "nfs").update(cidr="10.0.0.0/33"), ".cidr"),
        ("onprem", lambda e: e["sites"][0]["fabrics"][0].update(ipoib_cidr="0.0.0.0/0"), "fabrics[0].ipoib_cidr"),
        ("onprem", lambda e: _tier(e, "nfs").update(server=""), ".server"),
        ("onprem", lambda e: e["sites"][0]["inventory"][0].update(address=""), "inventory[0].address"),
        ("aws-train", lambda e: e["sites"][0].update(system_instance_type=""), "sites[0].system_instance_type"),
        ("onprem", lambda e: e["sites"][0]["cost"].update(server_price_usd=float("inf")), "cost.server_price_usd"),
    ],
    ids=["egress-300", "nfs-slash-33", "ipoib-everything", "nfs-server-empty", "address-empty", "system-type-empty",
         "price-inf"],
)  # fmt: skip
def test_values_once_accepted_silently_are_refused(tmp_path: Path, stack: str, mutate: Mutation, path: str) -> None:
    project = stack_project(tmp_path, estate(mutate, stack))
    refused_by_every_reader_but_burst(project, path)


def _tier(e: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(t for t in e["sites"][0]["storage"] if t["kind"] == kind)  # type: ignore[no-any-return]


def test_a_burst_window_without_a_burst_policy_is_refused_by_cost_too(tmp_path: Path) -> None:
    config = example_config("hybrid")
    config[ESTATE_KEY].pop("burst")
    config[WINDOW_KEY] = {
        "pool": "burst-h100", "nodes": 1, "instance_type": "p5.48xlarge", "availability_zone": "us-east-1a",
        "start": "2026-11-20T10:00:00Z", "expires": "2026-11-20T14:00:00Z",
    }  # fmt: skip
    project = stack_project(tmp_path, config)
    for command in ("preview", "check", "cost", "burst status"):
        assert_bad_input(invoke(READERS[command], project), stack_name(project))


def test_the_stack_text_is_what_the_tests_write() -> None:
    assert dump({"a": 1}) == "config:\n  a: 1\n"


def test_a_project_with_another_name_still_reads_gpufleet_keys(tmp_path: Path) -> None:
    """The estate lives under `gpufleet:estate` whatever Pulumi.yaml names the project (it used to read as null)."""
    from gpufleet.engine.synth import synth

    project = stack_project(tmp_path, example_config("aws-train"))
    (project / "Pulumi.yaml").write_text("name: other\nruntime: python\nstackConfigDir: stacks\n")
    plan = synth(project, STACK)
    assert plan.project == "other"
    assert plan.outputs["estate"] == example_config("aws-train")[ESTATE_KEY]["metadata"]["name"]
