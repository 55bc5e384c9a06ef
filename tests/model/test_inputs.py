"""The one bounded reader (model/inputs.py): regular files only, a size limit, UTF-8; JSON within depth and number
limits. Every surface a user hands gpufleet reads through it, so a FIFO in any of their places is refused at once
instead of blocking the command for ever."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from model.inputs import MAX_DEPTH, JsonLimitError, SpecError, load_json, read_bytes, read_json
from tests.cli.badinput import WORKLOADS, assert_bad_input, invoke, stack_project
from tests.conftest import example_config


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result: list[BaseException | bytes] = []
    reader = threading.Thread(target=lambda: result.append(_read(fifo)), daemon=True)
    reader.start()
    reader.join(timeout=5)
    assert not reader.is_alive(), "the reader blocked on a FIFO"
    (error,) = result
    assert isinstance(error, SpecError) and "not a regular file" in str(error)


def _read(path: Path) -> BaseException | bytes:
    try:
        return read_bytes(path, "missing")
    except SpecError as e:
        return e


def test_a_device_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="not a regular file"):
        read_bytes(Path("/dev/zero"), "missing")


def test_a_file_over_the_limit_is_refused_naming_it(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 2049)
    with pytest.raises(SpecError, match=r"big\.json: larger than 2048 bytes"):
        read_json(big, "missing", limit=2048)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("1" * 4300, "integer longer than 30 digits"),
        ("1e999", "too large for a number"),
        ("-1e400", "too large for a number"),
        ("[NaN]", "NaN is not a JSON number"),
        ('{"a": Infinity}', "Infinity is not a JSON number"),
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nested deeper than 64"),
        ("[" * 200_000, "nested deeper than 64"),
        ("0." + "1" * 500, "more than 400 characters"),
        ('{"a": 1', "not valid JSON"),
        ('{"a": 1, "a": 2}', "the key 'a' appears twice in one object"),
        ('[{"b": {"c": 1, "c": 1}}]', "the key 'c' appears twice"),
    ],
)
def test_json_beyond_the_limits_is_a_value_error_saying_which(text: str, says: str) -> None:
    with pytest.raises(JsonLimitError, match=says):
        load_json(text)


def test_json_within_the_limits_parses_as_json_does() -> None:
    text = '{"a": [1, 2.5, -3e2, "x", null, true], "b": {"c": 123456789012345678901234567890}}'
    assert load_json(text) == {"a": [1, 2.5, -300.0, "x", None, True], "b": {"c": 123456789012345678901234567890}}
    assert load_json("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None


def fifo_at(path: Path) -> None:
    if path.exists():
        path.unlink()
    os.mkfifo(path)


SURFACES = ["stack file", "Pulumi.yaml", "workload file", "usage profile", "kubeconfig", "offer file"]


@pytest.mark.parametrize("surface", SURFACES)
def test_a_fifo_in_place_of_any_input_is_exit_2_naming_it(tmp_path: Path, surface: str) -> None:
    project = stack_project(tmp_path, example_config("onprem"))
    stacks = project / "stacks"
    args = ["validate", "-s", "test"]
    match surface:
        case "stack file":
            target = stacks / "Pulumi.test.yaml"
        case "Pulumi.yaml":
            target = project / "Pulumi.yaml"
        case "workload file":
            target = tmp_path / "w.yaml"
            shutil.copy(WORKLOADS, target)
            args = ["size", str(target)]
        case "usage profile":
            target = stacks / "usage.test.yaml"
            args = ["cost", "-s", "test"]
        case "kubeconfig":
            target = tmp_path / "kubeconfig"
            args = ["verify", "-s", "test", "--kubeconfig", f"dc1={target}"]
        case _:
            target = tmp_path / "index.json"
            args = ["catalog", "refresh", "-r", "us-east-1", "--prices", "--from", str(target)]
    fifo_at(target)
    answer = invoke(args, None if surface in ("workload file", "offer file") else project)
    assert_bad_input(answer, f"{target}: not a regular file")


def _members_file(tmp: Path, count: int) -> Path:
    """A project whose onprem stack's first tenant lists `count` members, one a line as a user would write them."""
    import yaml

    config = example_config("onprem")
    config["gpufleet:estate"]["tenants"][0]["members"] = ["MEMBERS"]
    text = yaml.safe_dump({"config": config}, sort_keys=False)
    line = next(ln for ln in text.splitlines() if ln.strip() == "- MEMBERS")
    indent = line[: len(line) - len(line.lstrip())]
    members = "\n".join(f"{indent}- oidc:g{i}" for i in range(count))
    return stack_project(tmp, text=text.replace(line, members))


def test_a_tenant_far_over_its_member_limit_is_refused_before_the_file_is_parsed(tmp_path: Path) -> None:
    # Before: the whole 4 MB file was parsed (about 5 s of CPU, 13 to 20 s on a busy machine) before the
    # schema said the same.
    import time

    from model.load import read_stack
    from model.spec.tenancy import MAX_MEMBERS

    project = _members_file(tmp_path, 190_000)
    start = time.process_time()
    with pytest.raises(SpecError) as refused:
        read_stack(project, "test")
    assert time.process_time() - start < 1.0
    assert refused.value.problems == [
        f"{project / 'stacks' / 'Pulumi.test.yaml'}: config.gpufleet:estate.tenants[0].members: "
        f"List should have at most {MAX_MEMBERS} items"
    ]
    answer = invoke(["validate", "-s", "test"], project)
    assert_bad_input(answer, "Pulumi.test.yaml", "tenants[0].members", f"at most {MAX_MEMBERS} items")


def test_the_un_namespaced_estate_key_is_bounded_too(tmp_path: Path) -> None:
    """Issue 29: `estate:` is `gpufleet:estate` to Pulumi and read_stack, so its members list has the same bound."""
    from model.load import read_stack
    from model.spec.tenancy import MAX_MEMBERS

    project = _members_file(tmp_path, MAX_MEMBERS + 1)
    stack = project / "stacks" / "Pulumi.test.yaml"
    stack.write_text(stack.read_text().replace("\n  gpufleet:estate:", "\n  estate:", 1))
    with pytest.raises(SpecError, match=f"tenants\\[0\\].members: List should have at most {MAX_MEMBERS} items"):
        read_stack(project, "test")


def test_a_tenant_at_its_member_limit_is_read() -> None:
    import tempfile

    from model.load import read_stack
    from model.spec.tenancy import MAX_MEMBERS

    with tempfile.TemporaryDirectory() as tmp:
        spec = read_stack(_members_file(Path(tmp), MAX_MEMBERS), "test").estate()
    assert len(spec.tenants[0].members) == MAX_MEMBERS
