"""A stack file written for an earlier schema is told what changed and what to write (the newcomer issue: files
from before 2026-11-30 no longer validated, "deployer and other keys are now required", and nothing said what to
write). The changes are data (model/schema_changes.py) and CHANGELOG.md records each of them."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from gpufleet.cli.app import app
from model.schema_changes import CHANGELOG, CHANGES
from tests.conftest import ROOT, example_config, write_project


def _one_line(text: str) -> str:
    return " ".join(text.split())


def test_a_file_for_the_earlier_schema_is_told_what_to_write_for_each_changed_key(tmp_path: Path) -> None:
    # The hybrid example as a file of 2026-11-29 had it: no deployer, no burst manager, `prometheus: true`.
    config = example_config("hybrid")
    estate = config["gpufleet:estate"]
    del estate["deployer"], estate["burst"]["manager"]
    cloud = next(i for i, s in enumerate(estate["sites"]) if s["kind"] == "aws")
    estate["sites"][cloud].setdefault("kubernetes", {})["prometheus"] = True
    project = write_project(tmp_path, config)
    result = CliRunner().invoke(app, ["validate", "-s", "test", "-C", str(project)])
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    where = f"error: {project / 'stacks' / 'Pulumi.test.yaml'}: config.gpufleet:estate."
    expected = {
        "deployer": "required key is missing (since 2026-11-30; see CHANGELOG.md): where `pulumi up` runs; write "
        "`deployer: {network: <site>, cidrs: [<the runner's addresses>]}`",
        "burst.manager": "required key is missing (since 2026-11-30; see CHANGELOG.md): the MultiKueue manager "
        "tenants submit to; write `manager: {name: <its cluster, not a site>",
        f"sites[{cloud}].kubernetes.prometheus": "no longer a key (since 2026-11-30; see CHANGELOG.md): replaced by "
        "`kubernetes.monitoring`: where a Prometheus Operator runs (what `prometheus: true` meant) write "
        "`monitoring: {prometheus_operator: existing",
    }
    assert len(lines) == len(expected), lines
    for key, message in expected.items():
        assert any(line.startswith(f"{where}{key}: {message}") for line in lines), (key, lines)


def test_every_schema_change_is_in_the_changelog_with_what_to_write() -> None:
    text = _one_line((ROOT / CHANGELOG).read_text())
    for change in CHANGES:
        assert f"## {change.since}" in text, change.since
        assert f"`{change.key}`" in text, change.key
        for snippet in re.findall(r"`([^`]+)`", change.write):  # every key and value it tells to write
            assert f"`{snippet}`" in text, (change.key, snippet)
