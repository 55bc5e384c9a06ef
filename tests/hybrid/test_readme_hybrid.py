"""README's hybrid section: its Mermaid diagram parses (with Mermaid itself when GPUFLEET_MERMAID_DIR names a
directory whose node_modules holds mermaid and jsdom), and it tells the path the plan builds."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from model.burst import grace
from model.load import parse_estate
from tests.conftest import ROOT, example_estate
from tests.render.test_mermaid import MERMAID_DIR, PARSE_JS


def readme_diagrams() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```mermaid\n(.*?)```", text, flags=re.S)


def test_readme_shows_the_path_of_a_job_on_prem_first() -> None:
    (diagram,) = [d for d in readme_diagrams() if "MultiKueue" in d]
    assert diagram.index("round 1") < diagram.index("round 2")
    assert re.search(r'-->\|"round 1"\| onprem', diagram) and re.search(r'\|"round 2[^"]*"\| cloud', diagram)
    spec = parse_estate(example_estate("hybrid"), "hybrid")
    assert spec.burst is not None and grace(spec).total_seconds() == spec.burst.grace_minutes * 60
    assert "burst.grace_minutes" in (ROOT / "README.md").read_text()


@pytest.mark.skipif(
    not (MERMAID_DIR and shutil.which("node") and (Path(MERMAID_DIR) / "node_modules" / "mermaid").exists()),
    reason="set GPUFLEET_MERMAID_DIR to a directory with node_modules/{mermaid,jsdom} to parse with Mermaid",
)
def test_mermaid_parses_the_readme_diagrams() -> None:
    for text in readme_diagrams():
        done = subprocess.run(
            ["node", "--input-type=module", "-e", PARSE_JS], input=text, cwd=MERMAID_DIR, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stdout + done.stderr


def test_readme_says_where_the_window_lives_and_lists_every_burst_command() -> None:
    from gpufleet.cli.app import COMMANDS, burst_app
    from model.burst import STATE_STACK_SUFFIX

    text = (ROOT / "README.md").read_text()
    assert f"`<stack>{STATE_STACK_SUFFIX}`" in text and "pulumi.StackReference" in text and "`as_of`" in text
    burst = [name for typer_app, name, _ in COMMANDS if typer_app is burst_app]
    assert {"open", "close", "reconcile", "status", "migrate"} <= set(burst)
    for name in burst:
        assert f"| `gpufleet burst {name} -s S" in text, name
    assert "gpufleet:burstWindow` below" not in (ROOT / "stacks" / "Pulumi.hybrid.yaml").read_text()
