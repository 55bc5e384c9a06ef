"""docs/cli.md stays true: a section for every command `gpufleet --help` lists (and every subcommand of a group),
none for a command that does not exist, every option of a command named in its section, and every `gpufleet`
command line in the README's and the docs' shell blocks naming a real command with options it takes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.main

from gpufleet.cli.app import app
from tests.conftest import ROOT

CLI_DOC = ROOT / "docs" / "cli.md"
HEADING = re.compile(r"^(#{1,6}) `gpufleet ([a-z0-9 -]+)`$", flags=re.MULTILINE)


def is_group(command: Any) -> bool:
    return hasattr(command, "list_commands")


def commands() -> dict[str, Any]:
    """Every command path as `gpufleet --help` and each group's --help list it: `init`, `burst`, `burst open`, ..."""
    root = typer.main.get_command(app)
    ctx = typer.Context(root)
    paths: dict[str, Any] = {}
    for name in root.list_commands(ctx):  # type: ignore[attr-defined]
        command = root.get_command(ctx, name)  # type: ignore[attr-defined]
        assert command is not None
        paths[name] = command
        if is_group(command):
            for sub in command.list_commands(ctx):
                subcommand = command.get_command(ctx, sub)
                assert subcommand is not None
                paths[f"{name} {sub}"] = subcommand
    return paths


def sections(text: str) -> dict[str, str]:
    """Each "## `gpufleet X`" heading's path and its text up to the next heading of any level."""
    starts = list(HEADING.finditer(text))
    out = {}
    for m in starts:
        rest = text[m.end() :]
        following = re.search(r"^#{1,6} ", rest, flags=re.MULTILINE)
        out[m.group(2)] = rest[: following.start()] if following else rest
    return out


def option_names(command: Any) -> list[list[str]]:
    """Each option's spellings (`--stack`, `-s`); arguments have none."""
    return [list(p.opts) for p in command.params if p.param_type_name == "option"]


def mentions(text: str, spelling: str) -> bool:
    """`--chart` is not mentioned by `--chart-cache`, nor `-s` by `-sx` or `a-s`."""
    return re.search(rf"(?<![\w-]){re.escape(spelling)}(?![\w-])", text) is not None


def test_cli_reference_has_a_section_for_every_command_and_none_for_a_missing_one() -> None:
    documented = sections(CLI_DOC.read_text())
    assert {"init", "burst", "burst open", "catalog s3-ranges"} <= set(commands())
    assert set(documented) == set(commands())


def test_each_section_names_every_option_of_its_command() -> None:
    documented = sections(CLI_DOC.read_text())
    missing = {
        path: [names[0] for names in option_names(command) if not any(mentions(documented[path], n) for n in names)]
        for path, command in commands().items()
    }
    assert {path: names for path, names in missing.items() if names} == {}


def test_cli_reference_documents_every_option_of_gpufleet_itself() -> None:
    text = CLI_DOC.read_text()
    root = typer.main.get_command(app)
    spellings = [o for p in root.params for o in p.opts if o.startswith("--")]
    assert {"--version", "--width"} <= set(spellings)
    assert [s for s in spellings if not mentions(text, s)] == []


def shell_command_lines(path: Path) -> list[str]:
    """Every `gpufleet ...` command in the file's ```sh blocks: continuation lines joined, comments dropped."""
    found = []
    for block in re.findall(r"^```sh\n(.*?)^```", path.read_text(), flags=re.MULTILINE | re.DOTALL):
        joined = re.sub(r"\\?\n[ \t]+", " ", block)
        for line in joined.splitlines():
            for part in re.split(r"&&|;", line.split(" #")[0]):
                part = re.sub(r"^\s*(\S*/)?gpufleet\b", "gpufleet", part)
                if part.startswith("gpufleet"):
                    found.append(part.strip())
    return found


def check_command_line(line: str, paths: dict[str, Any], own: set[str]) -> str | None:
    """Why `line` is not a real gpufleet command line, or None."""
    words = line.split()[1:]
    while words and words[0] in own:  # `gpufleet --width 100 preview ...`
        words = words[2:] if words[0] == "--width" else words[1:]
    if not words or words[0] not in paths:
        return f"{line}: no such command"
    path = words[0]
    if is_group(paths[path]) and len(words) > 1 and not words[1].startswith("-"):
        path = f"{path} {words[1]}"
        if path not in paths:
            return f"{line}: no such command"
    accepted = {n for names in option_names(paths[path]) for n in names} | {"--help"}
    used = re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", line.split(path, 1)[1])
    unknown = [o for o in used if o not in accepted]
    return f"{line}: {path} takes no {', '.join(unknown)}" if unknown else None


DOCS = [ROOT / "README.md", ROOT / "benchmarks" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_gpufleet_command_line_in_the_docs_is_a_real_command(path: Path) -> None:
    paths = commands()
    root = typer.main.get_command(app)
    own = {o for p in root.params for o in p.opts}
    wrong = [why for line in shell_command_lines(path) if (why := check_command_line(line, paths, own))]
    assert wrong == []


def test_the_command_line_check_refuses_a_missing_command_and_a_wrong_option() -> None:
    paths = commands()
    assert check_command_line("gpufleet teleport -s hybrid job.yaml", paths, set()) is not None
    assert check_command_line("gpufleet burst open -s hybrid --nodes 2", paths, set()) is not None
    assert check_command_line("gpufleet burst open -s hybrid --gpus 2 --hours 1", paths, set()) is None
