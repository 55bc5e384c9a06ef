"""The README's CLI reference stays true: a row for every command the app registers, none for a command it does
not, and every option of `gpufleet` itself documented."""

from __future__ import annotations

import inspect
import re

from gpufleet.cli.app import app
from tests.conftest import ROOT


def registered() -> set[str]:
    """`init`, `burst open`, ...: every command path of the app."""
    paths = {str(c.name) for c in app.registered_commands}
    for group in app.registered_groups:
        assert group.typer_instance is not None
        paths |= {f"{group.name} {c.name}" for c in group.typer_instance.registered_commands}
    return paths


def readme_rows() -> set[str]:
    """The command path of every row of the README's command table (`| \\`gpufleet burst open -s S ...\\` |`)."""
    text = (ROOT / "README.md").read_text()
    rows = set()
    for words in re.findall(r"^\| `gpufleet ([a-z][a-z0-9 -]*)", text, flags=re.MULTILINE):
        words = words.split()
        groups = {g.name for g in app.registered_groups}
        rows.add(" ".join(words[:2]) if words[0] in groups else words[0])
    return rows


def test_readme_has_a_row_for_every_command_and_none_for_a_missing_one() -> None:
    assert readme_rows() == registered()


def test_readme_documents_every_option_of_gpufleet_itself() -> None:
    text = (ROOT / "README.md").read_text()
    callback = app.registered_callback
    assert callback is not None and callback.callback is not None
    for name in inspect.signature(callback.callback).parameters:
        assert f"| `gpufleet --{name}" in text, name
