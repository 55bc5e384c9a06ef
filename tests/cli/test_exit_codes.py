"""One rule for exit codes: a user mistake or an environment problem (a path, a permission, a missing tool, an
encoding) exits 2 with a message naming the file or option, never 70 (a bug). One test per way in that once
ended in an internal error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpufleet.charts.cache import ChartCache, ChartCacheError, pinned_charts
from model.load import ESTATE_KEY, SpecError, parse_state
from tests.cli.badinput import WORKLOADS, assert_bad_input, invoke, snapshot, stack_project
from tests.conftest import ROOT, example_config


def with_estate(stack: str, change: Any) -> dict[str, Any]:
    config = example_config(stack)
    change(config[ESTATE_KEY])
    return config


def test_a_misspelt_burst_cloud_site_is_named_by_every_reader(tmp_path: Path) -> None:
    # Before: StopIteration from a rule that looked the site up by name, exit 70 in every command.
    project = stack_project(tmp_path, with_estate("hybrid", lambda e: e["burst"].update(cloud_site="clod")))
    for args in (["validate", "-s", "test"], ["cost", "-s", "test"], ["preview", "-s", "test"]):
        assert_bad_input(invoke(args, project), "burst.cloud_site: clod must name an aws site")


def test_a_vpc_without_cidr_or_vpc_id_is_refused_by_validate(tmp_path: Path) -> None:
    project = stack_project(tmp_path, with_estate("aws-train", lambda e: e["sites"][0]["vpc"].update(cidr=None)))
    assert_bad_input(invoke(["validate", "-s", "test"], project), "sites[0].vpc: needs a cidr")


def workload_file(tmp: Path, text: str) -> Path:
    path = tmp / "w.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("key", ["1", "null", "true", "2026-01-01"])
def test_a_workload_class_key_that_is_no_string_is_named(tmp_path: Path, key: str) -> None:
    path = workload_file(tmp_path, WORKLOADS.read_text().replace("classes:\n", f"classes:\n  - {{{key}: 2}}\n", 1))
    assert_bad_input(invoke(["size", str(path), "-s", "aws-train"]), str(path), "classes[0]")


@pytest.mark.parametrize(
    ("old", "new", "where"),
    [
        ("utilisation_pct: [50, 60, 70]", "utilisation_pct: [5e-324]", "planning.utilisation_pct[0]"),
        ("hours_per_device: ", "hours_per_device: 5e-324 #", "planning.hours_per_device"),
    ],
)
def test_a_utilisation_or_device_hours_too_close_to_zero_is_refused(
    tmp_path: Path, old: str, new: str, where: str
) -> None:
    # Before: OverflowError dividing the demand by it.
    text = WORKLOADS.read_text()
    assert old in text
    path = workload_file(tmp_path, text.replace(old, new, 1))
    assert_bad_input(invoke(["size", str(path), "-s", "aws-train"]), str(path), where)


@pytest.mark.parametrize("hours", ["1e-300", "0.001"])
def test_burst_open_refuses_hours_below_a_minute_or_not_finite(tmp_path: Path, hours: str) -> None:
    project = stack_project(tmp_path, example_config("hybrid"))
    args = ["burst", "open", "-s", "test", "--gpus", "8", "--hours", hours, "--dry-run", "--offline"]
    assert_bad_input(invoke(args, project), "--hours")


def test_burst_extend_judges_hours_before_it_reads_anything(tmp_path: Path) -> None:
    # Before: nan passed `hours <= 0` and timedelta raised; now refused before the Pulumi CLI is looked for.
    assert_bad_input(invoke(["burst", "extend", "-s", "test", "--hours", "nan"], tmp_path), "--hours")


@pytest.mark.parametrize("fmt", [10**400, "x" * 10_000])
def test_a_state_stack_format_of_any_shape_is_a_spec_error(fmt: object) -> None:
    with pytest.raises(SpecError, match=r"state: outputs.format: .{1,60} is not a burst state"):
        parse_state({"format": fmt}, "state")


def test_export_onto_a_file_or_under_one_is_refused_before_synthesis(tmp_path: Path) -> None:
    a_file = tmp_path / "afile"
    a_file.write_text("")
    for out in (a_file, a_file / "sub"):
        before = snapshot(tmp_path)
        assert_bad_input(invoke(["export", "-s", "aws-train", "-o", str(out)], ROOT), "--out", str(out))
        assert snapshot(tmp_path) == before


def test_check_write_config_onto_a_file_is_refused(tmp_path: Path) -> None:
    a_file = tmp_path / "afile"
    a_file.write_text("")
    args = ["check", "-s", "aws-train", "--write-config", str(a_file)]
    assert_bad_input(invoke(args, ROOT), "--write-config", str(a_file))


def test_an_unwritable_path_is_exit_2_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # As root every directory is writable, so the refusal of the file system is simulated where init writes.
    stack_project(tmp_path, example_config("aws-train"))
    target = tmp_path / "stacks" / "Pulumi.aws.yaml"

    def refuse(self: Path, *args: object, **kwargs: object) -> int:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "write_text", refuse)
    answer = invoke(["init", "aws", "--gpu", "H100-80GB"], tmp_path)
    assert_bad_input(answer, f"{target}: Permission denied")


def test_diff_without_git_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no git there
    assert_bad_input(invoke(["diff", "-s", "aws-train", "--base", "HEAD"], ROOT), "git: not found")


def test_a_chart_cache_whose_chart_yaml_does_not_parse_is_a_cache_error(tmp_path: Path) -> None:
    chart = pinned_charts()[0]
    cache = ChartCache(tmp_path)
    cache.path(chart).mkdir(parents=True)
    for text in ("name: [", "- a list", "\xff"):
        (cache.path(chart) / "Chart.yaml").write_bytes(text.encode("latin-1"))
        with pytest.raises(ChartCacheError, match=r"Chart\.yaml"):
            cache.locate(chart)


def test_an_ascii_only_output_is_exit_2_saying_how_to_fix_it() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from gpufleet.cli.app import app; app()", "cost", "-s", "aws-train"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "ascii"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "PYTHONIOENCODING=utf-8" in done.stderr and "internal error" not in done.stderr


def test_charts_pull_of_an_unknown_chart_quotes_it_as_text() -> None:
    answer = invoke(["charts", "pull", "--chart", "[/]"])
    assert_bad_input(answer, "--chart: not pinned in versions.py: [/]")


# Every command judges a stack file as validate does (gpufleet.review.stack_file.judged): the same files refused.
JUDGES: dict[str, list[str]] = {
    "validate": ["validate", "-s", "test"],
    "cost": ["cost", "-s", "test"],
    "size": ["size", str(WORKLOADS), "-s", "test"],
    "verify --plan": ["verify", "-s", "test", "--plan"],
    "burst status": ["burst", "status", "-s", "test"],
    "check --write-config": ["check", "-s", "test", "--write-config", "{tmp}/out"],
}


def without_secret(config: dict[str, Any]) -> None:
    del config["gpufleet:kubeconfig"]


def unknown_rule(config: dict[str, Any]) -> None:
    config[ESTATE_KEY].setdefault("policies", {})["enforcement"] = {"no-such-rule": "advisory"}


def bad_window(config: dict[str, Any]) -> None:
    config["gpufleet:burstWindow"] = {"pool": "nope"}


@pytest.mark.parametrize("command", sorted(JUDGES))
@pytest.mark.parametrize(
    ("change", "says"),
    [
        (without_secret, "required secret(s) missing"),
        (unknown_rule, "policies.enforcement.no-such-rule: no policy rule has this id"),
        (bad_window, "config.gpufleet:burstWindow"),
    ],
)
def test_every_command_refuses_what_validate_refuses(tmp_path: Path, command: str, change: Any, says: str) -> None:
    # Before: cost and size took a missing secret, validate an unknown rule id, verify --plan both and a bad window.
    config = example_config("hybrid")
    change(config)
    project = stack_project(tmp_path, config)
    before = snapshot(project)
    assert_bad_input(invoke([a.replace("{tmp}", str(tmp_path)) for a in JUDGES[command]], project), says)
    assert snapshot(project) == before
