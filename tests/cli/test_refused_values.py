"""More values that mean something else, refused by `gpufleet validate` (exit 2, file and YAML path named, the
rule said): a CIDR prefix length with a leading zero, an NFS export path that is relative or not normalized, a
user tag under a key gpufleet sets itself. And `verify --egress-probe` refuses an IPv6 address without brackets.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.engine.synth import synth
from model.conventions import GPUFLEET_TAG_KEYS
from tests.cli.badinput import assert_bad_input
from tests.cli.test_bad_values import _tier, validate
from tests.conftest import ROOT, example_config


@pytest.mark.parametrize("cidr", ["10.30.0.0/016", "10.30.0.0/00", "10.30.0.0/024"])
def test_a_prefix_length_with_a_leading_zero_is_refused(tmp_path: Path, cidr: str) -> None:
    # Before: accepted, as Python's ipaddress reads /016 as /16 (Go's netip.ParsePrefix refuses it).
    answer, stack_file = validate(tmp_path, lambda e: _tier(e, "nfs").update(cidr=cidr))
    assert_bad_input(answer, stack_file, ".cidr", "without a leading zero")


def test_prefix_lengths_as_usually_written_are_accepted(tmp_path: Path) -> None:
    for i, cidr in enumerate(["10.30.0.0/16", "10.30.0.20/32", "10.30.0.0/8"]):
        answer, _ = validate(tmp_path / str(i), lambda e, c=cidr: _tier(e, "nfs").update(cidr=c))  # type: ignore[misc]
        assert answer.code == 0, (cidr, answer.stderr[-400:])


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        ("export/home", "absolute"),
        ("", "absolute"),
        ("/export/../etc", "normalized ('/etc')"),
        ("/export/./home", "normalized ('/export/home')"),
        ("/export//home", "normalized"),
        ("/export/home/", "normalized ('/export/home')"),
        ("/export/home\n/etc", "no control characters"),
    ],
)
def test_an_nfs_export_path_that_is_not_absolute_and_normalized_is_refused(
    tmp_path: Path, path: str, rule: str
) -> None:
    # Before: any text, handed to the NFS CSI driver's `share` as it was.
    answer, stack_file = validate(tmp_path, lambda e: _tier(e, "nfs").update(path=path))
    assert_bad_input(answer, stack_file, ".path", rule)


def test_usual_nfs_export_paths_are_accepted(tmp_path: Path) -> None:
    for i, path in enumerate(["/", "/export/home", "/srv/nfs/team a", "/data/v1.2_x-y"]):
        answer, _ = validate(tmp_path / str(i), lambda e, p=path: _tier(e, "nfs").update(path=p))  # type: ignore[misc]
        assert answer.code == 0, (path, answer.stderr[-400:])


@pytest.mark.parametrize("key", ["owner", "cost-center", "env", "cluster", "tenant", "managed-by", "Name", "pool"])
def test_a_user_tag_under_a_key_gpufleet_sets_is_refused_naming_the_key(tmp_path: Path, key: str) -> None:
    # Before: accepted, and Tags.from_spec silently replaced the user's value with gpufleet's.
    answer, stack_file = validate(tmp_path, lambda e: e["metadata"].update(tags={key: "mine"}), "aws-train")
    assert_bad_input(answer, stack_file, "metadata.tags", f"tag key {key!r}: gpufleet sets this tag itself")


def test_every_tag_key_the_plan_sets_beyond_the_users_is_one_gpufleet_owns() -> None:
    """GPUFLEET_TAG_KEYS is the list the refusal above reads: every key a component adds must be in it."""
    user = set(example_config("aws-train")["gpufleet:estate"]["metadata"].get("tags", {}))
    seen: set[str] = set()
    for stack in ("aws-train", "hybrid"):
        for r in synth(ROOT, stack).resources:
            if isinstance(tags := r.inputs.get("tags"), dict):
                seen |= set(tags)
    assert seen - user <= GPUFLEET_TAG_KEYS, sorted(seen - user - GPUFLEET_TAG_KEYS)
    assert {"owner", "Name", "pool", "fabric", "tier"} <= seen


@pytest.mark.parametrize(
    ("probe", "says"),
    [
        ("::1:443", "an IPv6 address goes in brackets, [addr]:PORT"),
        ("2606:4700::1111:443", "goes in brackets"),
        ("[2606:4700::1111]", "expected [IPv6 address]:PORT"),
        ("[1.1.1.1]:443", "brackets hold an IPv6 address"),
        ("1.1.1.1:0443", "no leading zero"),
    ],
)
def test_an_egress_probe_whose_port_cannot_be_told_from_its_address_is_refused(probe: str, says: str) -> None:
    r = CliRunner().invoke(app, ["verify", "-C", str(ROOT), "-s", "aws-train", "--plan", "--egress-probe", probe])
    assert r.exit_code == 2, r.output
    assert f"--egress-probe {probe}: " in r.stderr and says in r.stderr, r.stderr


def test_the_stack_file_reference_lists_every_tag_key_gpufleet_sets() -> None:
    text = (ROOT / "docs" / "stack-file.md").read_text()
    for key in GPUFLEET_TAG_KEYS:
        shown = "`kubernetes.io/role/*`" if key.startswith("kubernetes.io/role/") else f"`{key}`"
        assert shown in text, key
