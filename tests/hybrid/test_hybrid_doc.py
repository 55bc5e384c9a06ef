"""docs/hybrid-and-burst.md: its Mermaid diagram tells the path the plan builds, and every Mermaid diagram of the
README and docs/ parses (with Mermaid itself when GPUFLEET_MERMAID_DIR names a directory whose node_modules holds
mermaid and jsdom)."""

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

HYBRID_DOC = ROOT / "docs" / "hybrid-and-burst.md"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def diagrams(path: Path) -> list[str]:
    return re.findall(r"```mermaid\n(.*?)```", path.read_text(), flags=re.S)


def test_hybrid_doc_shows_the_path_of_a_job_on_prem_first() -> None:
    (diagram,) = [d for d in diagrams(HYBRID_DOC) if "MultiKueue" in d]
    assert diagram.index("round 1") < diagram.index("round 2")
    assert re.search(r'-->\|"round 1"\| onprem', diagram) and re.search(r'\|"round 2[^"]*"\| cloud', diagram)
    spec = parse_estate(example_estate("hybrid"), "hybrid")
    assert spec.burst is not None and grace(spec).total_seconds() == spec.burst.grace_minutes * 60
    assert "burst.grace_minutes" in HYBRID_DOC.read_text()


@pytest.mark.skipif(
    not (MERMAID_DIR and shutil.which("node") and (Path(MERMAID_DIR) / "node_modules" / "mermaid").exists()),
    reason="set GPUFLEET_MERMAID_DIR to a directory with node_modules/{mermaid,jsdom} to parse with Mermaid",
)
def test_mermaid_parses_every_diagram_of_the_docs() -> None:
    found = [text for page in PAGES for text in diagrams(page)]
    assert found
    for text in found:
        done = subprocess.run(
            ["node", "--input-type=module", "-e", PARSE_JS], input=text, cwd=MERMAID_DIR, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stdout + done.stderr


def test_hybrid_doc_says_where_the_window_lives_and_names_every_burst_command() -> None:
    from gpufleet.cli.app import COMMANDS, burst_app
    from model.burst_state import STATE_STACK_SUFFIX

    text = HYBRID_DOC.read_text()
    assert f"`<stack>{STATE_STACK_SUFFIX}`" in text and "pulumi.StackReference" in text and "`as_of`" in text
    burst = [name for typer_app, name, _ in COMMANDS if typer_app is burst_app]
    assert {"open", "close", "reconcile", "status", "migrate"} <= set(burst)
    for name in burst:
        assert f"`gpufleet burst {name}`" in text, name
    assert "gpufleet:burstWindow` below" not in (ROOT / "stacks" / "Pulumi.hybrid.yaml").read_text()
