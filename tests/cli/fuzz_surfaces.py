"""Mutations of every input surface besides the stack and workload files (tests/cli/fuzz.py): usage profiles,
ip-ranges documents, state-stack outputs and Pulumi.yaml, with what each answer must be. The quick seeded test is
tests/cli/test_fuzz_surfaces.py; benchmarks/fuzz_inputs.py --surfaces runs many more.
"""

from __future__ import annotations

import copy
import ipaddress
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from gpufleet.catalog.s3_ranges import NOT_PUBLIC, WIDEST_S3_PREFIX
from model.burst_state import STATE_FORMAT
from model.load import SpecError, parse_state
from tests.cli.badinput import Answer, invoke, snapshot, stack_project
from tests.cli.fuzz import ODD_VALUES, TEXT_DAMAGE, mutate, paths
from tests.conftest import ROOT, example_config

USAGE: dict[str, Any] = {"sites": {"use1": {"nat_gb_processed": 1000, "data_transfer_out_gb": 50}}}
IP_RANGES: dict[str, Any] = {
    "syncToken": "1787411825",
    "createDate": "2026-08-22-15-17-05",
    "prefixes": [
        {"ip_prefix": "52.216.0.0/15", "region": "us-east-1", "service": "AMAZON", "network_border_group": "us-east-1"},
        {"ip_prefix": "52.216.0.0/15", "region": "us-east-1", "service": "S3", "network_border_group": "us-east-1"},
        {"ip_prefix": "3.5.0.0/19", "region": "us-east-1", "service": "AMAZON", "network_border_group": "us-east-1"},
        {"ip_prefix": "3.5.0.0/20", "region": "us-east-1", "service": "S3", "network_border_group": "us-east-1"},
        {"ip_prefix": "3.5.64.0/21", "region": "eu-west-1", "service": "AMAZON", "network_border_group": "eu-west-1"},
        {"ip_prefix": "3.5.64.0/21", "region": "eu-west-1", "service": "S3", "network_border_group": "eu-west-1"},
    ],
}
# The catalog a refresh must not leave worse: the document's regions and date. A mutation that moves or deletes
# eu-west-1's one prefix drops a region.
CATALOG: dict[str, Any] = {
    "syncToken": IP_RANGES["syncToken"],
    "createDate": IP_RANGES["createDate"],
    "regions": {"us-east-1": ["3.5.0.0/20", "52.216.0.0/15"], "eu-west-1": ["3.5.64.0/21"]},
}
# Values a forged or damaged document would carry where the mutation lands: wide public ranges, older dates.
ODD_IP_RANGES: list[Any] = ["3.0.0.0/8", "52.0.0.0/9", "52.216.0.0/14", "2026-08-01-00-00-00", "us-east-2", "S3"]
STATE: dict[str, Any] = {
    "format": STATE_FORMAT,
    "as_of": "2026-11-20T12:00:00Z",
    "window": None,
    "ledger": [],
    "settled": True,
}


def _key_twice(text: str) -> str:
    return text[:-1] + ', "createDate": "2027-01-01-00-00-00"}'


_TEXT = json.dumps(IP_RANGES)
# Damage a mutation of the parsed document cannot express: a key written twice, at the top and inside a prefix.
IP_RANGES_DAMAGE = {
    "createDate twice": _key_twice(_TEXT),
    "ip_prefix twice": _TEXT.replace(
        '"ip_prefix": "3.5.0.0/20"', '"ip_prefix": "3.5.0.0/20", "ip_prefix": "3.0.0.0/8"'
    ),
}


SURFACES = ("usage", "ip-ranges", "state", "Pulumi.yaml")


def surfaces(only: str | None = None) -> st.SearchStrategy[tuple[str, Any]]:
    """(surface, mutated document or damaged text), over every surface or `only` one of SURFACES."""

    def mutated(doc: dict[str, Any], odd: list[Any] = ODD_VALUES) -> st.SearchStrategy[Any]:
        return st.tuples(
            st.sampled_from(paths(doc)),
            st.sampled_from(["set", "set", "delete", "typo", "duplicate"]),
            st.sampled_from(odd) | st.text(max_size=12) | st.integers() | st.floats(),
        ).map(lambda c: mutate(doc, *c))

    each = {
        "usage": mutated(USAGE),
        "ip-ranges": mutated(IP_RANGES, [*ODD_VALUES, *ODD_IP_RANGES]).map(json.dumps)
        | st.sampled_from(sorted(IP_RANGES_DAMAGE)).map(IP_RANGES_DAMAGE.__getitem__),
        "state": mutated(STATE),
        "Pulumi.yaml": st.sampled_from(sorted(TEXT_DAMAGE)),
    }
    return st.one_of(
        [value.map(lambda v, name=name: (name, v)) for name, value in each.items() if only in (None, name)]
    )


def _no_bug(a: Answer) -> None:
    text = a.stdout + a.stderr
    assert a.exception is None, repr(a.exception)
    assert "Traceback" not in text and "internal error" not in text, text[-800:]


def check_usage(doc: Any, tmp: Path) -> None:
    project = stack_project(tmp, example_config("aws-train"))
    (project / "stacks" / "usage.test.yaml").write_text(yaml.safe_dump(doc, allow_unicode=True))
    before = snapshot(project)
    a = invoke(["cost", "-s", "test"], project)
    _no_bug(a)
    assert a.code in (0, 2), a.stderr[-800:]
    assert a.code == 0 or "usage.test.yaml" in a.stderr
    assert snapshot(project) == before


def check_ip_ranges(text: str, tmp: Path, monkeypatch: Callable[[str, Any], None]) -> None:
    target = tmp / "aws_s3_ranges.json"
    target.write_text(json.dumps(CATALOG))
    before = target.read_text()
    monkeypatch("gpufleet.catalog.s3_ranges.S3_RANGES_FILE", target)
    source = tmp / "ip-ranges.json"
    source.write_text(text)
    a = invoke(["catalog", "s3-ranges", "--from", str(source)])
    _no_bug(a)
    assert a.code in (0, 2), a.stderr[-800:]
    if a.code == 2:
        assert str(source) in a.stderr and target.read_text() == before
        assert sorted(p.name for p in tmp.iterdir()) == sorted([target.name, source.name])
        return
    written = json.loads(target.read_text())  # never worse: no region lost, no older copy, nothing not S3's
    assert written["regions"].keys() >= CATALOG["regions"].keys() and written["createDate"] >= CATALOG["createDate"]
    assert "2027-01-01" not in written["createDate"]  # the second of a key written twice is never taken
    for nets in written["regions"].values():
        for net in map(ipaddress.IPv4Network, nets):
            assert not any(net.overlaps(b) for b in NOT_PUBLIC) and net.prefixlen >= WIDEST_S3_PREFIX, net


def check_state(doc: Any) -> None:
    try:
        parse_state(copy.deepcopy(doc), "state stack")
    except SpecError as e:
        assert all(p.startswith("state stack: outputs") for p in e.problems), e.problems


def check_pulumi_yaml(damage: str, tmp: Path) -> None:
    project = stack_project(tmp, example_config("onprem"))
    (project / "Pulumi.yaml").write_bytes(TEXT_DAMAGE[damage]((ROOT / "Pulumi.yaml").read_text()))
    a = invoke(["validate", "-s", "test"], project)
    _no_bug(a)
    assert a.code in (0, 2), a.stderr[-800:]


def run_surface(surface: str, value: Any, monkeypatch: Callable[[str, Any], None]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        match surface:
            case "usage":
                check_usage(value, Path(tmp))
            case "ip-ranges":
                check_ip_ranges(value, Path(tmp), monkeypatch)
            case "state":
                check_state(value)
            case _:
                check_pulumi_yaml(value, Path(tmp))
