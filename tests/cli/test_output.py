"""Output that reads well in CI and pipes: full width when stdout is not a terminal, `--width N` and `COLUMNS`
honoured, `gpufleet preview --summary` (newcomer issue: "Output in CI and pipes is cut at 80 columns (tables
wrap instance names)").

Rich falls back to 80 columns when its output is not a terminal and COLUMNS is unset (`Console.size` in
https://github.com/Textualize/rich/blob/v14.3.4/rich/console.py: "width = width or 80"), and squeezes table cells
to fit. COLUMNS is "a decimal integer > 0 ... the user's preferred width in column positions" (POSIX, Environment
Variables: https://pubs.opengroup.org/onlinepubs/9699919799/basedefs/V1_chap08.html).
"""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.cli.options import PIPE_WIDTH, output_width
from gpufleet.engine.plan import Plan
from gpufleet.review import review as review_module
from gpufleet.review.review import Review, build
from model import catalog
from tests.conftest import ROOT

runner = CliRunner()
CATALOG_HEADERS = ("instance", "GPU", "GPUs", "vCPU", "EFA", "NVMe", "$/h", "$/GPU-h")


def gpufleet_through_a_pipe(*args: str, columns: str | None = None) -> str:
    """Run the real CLI in a fresh interpreter with stdout a pipe (as in CI), COLUMNS unset unless given."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["PYTHONPATH"] = str(ROOT)
    if columns is not None:
        env["COLUMNS"] = columns
    done = subprocess.run(
        [sys.executable, "-c", "from gpufleet.cli.app import app; app()", *args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def catalog_rows(output: str) -> dict[str, list[str]]:
    """The cells of each `catalog show` row, by instance type."""
    rows = {}
    for line in output.splitlines():
        cells = re.split(r"\s{2,}", line.strip())  # columns are set apart by spaces, no rules
        if cells and cells[0] in catalog.instance_types():
            rows[cells[0]] = cells
    return rows


def test_width_is_the_option_then_columns_then_the_terminal_and_unlimited_into_a_pipe() -> None:
    assert output_width(120, "90", tty=True, terminal=100) == 120
    assert output_width(None, "90", tty=False, terminal=80) == 90
    assert output_width(None, None, tty=True, terminal=100) == 100
    assert output_width(None, "", tty=True, terminal=100) == 100  # an empty or non-numeric COLUMNS is ignored
    assert output_width(None, None, tty=False, terminal=80) == PIPE_WIDTH


def test_catalog_show_into_a_pipe_keeps_every_header_and_cell_whole() -> None:
    output = gpufleet_through_a_pipe("catalog", "show")
    assert "…" not in output
    header = next(line for line in output.splitlines() if line.startswith("instance"))
    assert re.split(r"\s{2,}", header.strip()) == list(CATALOG_HEADERS)
    rows = catalog_rows(output)
    assert set(rows) == set(catalog.instance_types())  # every instance name whole, on one line
    assert all(len(cells) == len(CATALOG_HEADERS) for cells in rows.values())
    assert rows["p5.48xlarge"][:3] == ["p5.48xlarge", "H100-80GB", "8"]


def test_catalog_show_fits_80_columns_without_cutting_a_name_or_a_figure() -> None:
    # A standard terminal: the table used to need 87 columns, so Rich cut "p6-b300.48xlarge" and the headers.
    result = runner.invoke(app, ["--width", "80", "catalog", "show", "-r", "us-east-1"])
    assert result.exit_code == 0, result.output
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    assert "…" not in result.stdout
    rows = catalog_rows(result.stdout)
    assert set(rows) == set(catalog.instance_types())  # every instance name whole, one row each
    for name, cells in rows.items():
        it = catalog.instance_type(name)
        facts = [it.gpu.id, str(it.gpu_count), str(it.vcpus), str(it.max_efa_interfaces), str(it.local_nvme_gb)]
        assert cells[1:6] == facts, name


def test_columns_and_width_option_are_honoured_where_a_narrow_table_is_wanted() -> None:
    # The same table at 60 columns is squeezed (headers cut with "…").
    assert "…" in gpufleet_through_a_pipe("catalog", "show", columns="60")
    narrow = runner.invoke(app, ["--width", "60", "catalog", "show"])
    assert narrow.exit_code == 0 and "…" in narrow.stdout
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 60


def test_a_width_too_small_is_bad_input() -> None:
    result = runner.invoke(app, ["--width", "10", "catalog", "show"])
    assert result.exit_code == 2 and "--width" in result.output and "Traceback" not in result.output


# ----------------------------------------------------------------------------------------------- preview


@pytest.fixture(scope="module")
def hybrid_review(example_plans: dict[str, Plan]) -> Iterator[Review]:
    """The hybrid example's review (its plan synthesized once per session), without the first-up simulation."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(review_module, "synth_stack", lambda project, stack, stack_file, **_: example_plans["hybrid"])
        yield build(ROOT, "hybrid", simulate=False)


def preview(monkeypatch: pytest.MonkeyPatch, review: Review, *args: str, env: dict[str, str] | None = None) -> str:
    monkeypatch.setattr(review_module, "build", lambda *a, **k: review)
    monkeypatch.delenv("COLUMNS", raising=False)
    result = runner.invoke(app, ["preview", "-s", "hybrid", "-C", str(ROOT), *args], env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


def tree_types(output: str) -> list[str]:
    """The resource type of every `N × type` line of the component tree."""
    return [line.split(" × ", 1)[1] for line in output.splitlines() if " × " in line and "─ " in line]


def test_preview_into_a_pipe_keeps_every_tree_line_whole(
    monkeypatch: pytest.MonkeyPatch, hybrid_review: Review
) -> None:
    output = preview(monkeypatch, hybrid_review, "-ftext")
    types = set(hybrid_review.plan.type_counts())
    shown = tree_types(output)
    assert shown and set(shown) <= types  # no type name cut, e.g. "...:ValidatingAdm"
    assert "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding" in shown
    assert max(len(line) for line in output.splitlines()) > 80 and "…" not in output
    assert max(len(line) for line in output.splitlines()) < 1_000  # nothing padded out to the unlimited width
    # COLUMNS=80, as a narrow terminal: rich crops the deepest tree lines (the test can tell the difference)
    narrow = preview(monkeypatch, hybrid_review, "-ftext", env={"COLUMNS": "80"})
    assert not set(tree_types(narrow)) <= types


def test_preview_summary_prints_the_verdicts_and_cost_headline_only(
    monkeypatch: pytest.MonkeyPatch, hybrid_review: Review
) -> None:
    full = preview(monkeypatch, hybrid_review, "-ftext")
    short = preview(monkeypatch, hybrid_review, "--summary")
    assert full.startswith(short)
    count = sum(hybrid_review.plan.type_counts().values())
    assert short.splitlines()[0].startswith(f"gpufleet/hybrid: {count} resources")
    assert "Policy (" in short and "Estate: min " in short and "per month:" in short
    assert "Resources by type" not in short and "Cost envelope" not in short and " × " not in short
    assert len(short.splitlines()) < 20 < len(full.splitlines())
    md = preview(monkeypatch, hybrid_review, "-fmarkdown", "--summary")
    assert "**No mandatory policy violations**" in md and "| $/hour |" in md and "<details" not in md


def test_preview_summary_as_json_is_refused_as_bad_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(review_module, "build", lambda *a, **k: pytest.fail("nothing is built for bad input"))
    result = runner.invoke(app, ["preview", "-s", "hybrid", "-C", str(ROOT), "-f", "json", "--summary"])
    assert result.exit_code == 2 and result.stdout == ""
    assert "--summary: only for text and markdown" in result.stderr and "Traceback" not in result.output


def test_diff_summary_prints_the_summary_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpufleet.review.diff import revision
    from tests.review.estates import small_diff

    monkeypatch.setattr(revision, "diff_revision", lambda project, stack, base: small_diff())
    args = ["diff", "-s", "hybrid", "-C", str(ROOT), "--base", "HEAD"]
    full, short = runner.invoke(app, args), runner.invoke(app, [*args, "--summary"])
    assert full.exit_code == short.exit_code == 0, short.output
    assert full.stdout.startswith(short.stdout) and "~ aws:" in full.stdout and "~ aws:" not in short.stdout
    refused = runner.invoke(app, [*args, "--summary", "-f", "json"])
    assert refused.exit_code == 2 and "--summary: only for text and markdown" in refused.stderr


def test_cost_summary_prints_the_estate_totals_and_budget_verdict_only() -> None:
    full = runner.invoke(app, ["cost", "-s", "aws-train", "-C", str(ROOT)])
    short = runner.invoke(app, ["cost", "-s", "aws-train", "-C", str(ROOT), "--summary"])
    assert full.exit_code == short.exit_code == 0, short.output
    assert full.stdout.startswith(short.stdout) and short.stdout.startswith("Estate: min ")
    assert "Budget: " in short.stdout and "Prices used" in full.stdout and "Prices used" not in short.stdout
    refused = runner.invoke(app, ["cost", "-s", "aws-train", "-C", str(ROOT), "--summary", "-f", "json"])
    assert refused.exit_code == 2 and "--summary: only for text and markdown" in refused.stderr


def test_check_summary_leaves_out_the_advisory_findings(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.render.test_summary_first import review as small_review

    monkeypatch.setattr(review_module, "build", lambda *a, **k: small_review())
    args = ["check", "-s", "hybrid", "-C", str(ROOT)]
    full, short = runner.invoke(app, args), runner.invoke(app, [*args, "--summary"])
    assert full.exit_code == short.exit_code == 1  # the mandatory finding and the first-up problem
    assert full.stdout.startswith(short.stdout) and "budget-at-max-size" in short.stdout
    assert "required-tags" in full.stdout and "required-tags" not in short.stdout


def test_burst_status_into_a_pipe_keeps_each_row_on_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpufleet.cli import burst as burst_cli
    from tests.burst.helpers import NOW, STACK, FakeDriver, hybrid_config, project, window

    monkeypatch.setattr(burst_cli, "clock", lambda region: NOW)
    monkeypatch.setattr(burst_cli, "make_driver", FakeDriver)  # the window is in the (fake) state stack
    monkeypatch.delenv("COLUMNS", raising=False)
    proj = project(tmp_path, hybrid_config(window(NOW - dt.timedelta(hours=10), 8, nodes=1, usd_per_hour=55.04)))
    args = ["burst", "status", "--stack", STACK, "--project", str(proj)]
    note = "expired: `gpufleet burst reconcile` stops admission, empties the pool, books it"
    wide = runner.invoke(app, args)
    assert wide.exit_code == 0, wide.output
    assert any(note in line and "note" in line for line in wide.stdout.splitlines())
    narrow = runner.invoke(app, ["--width", "60", *args])  # a narrow terminal folds the cell (the test can fail)
    assert narrow.exit_code == 0 and note not in narrow.stdout


def test_cost_table_into_a_pipe_keeps_instance_names_whole_beside_a_long_pool_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    long = "h100-training-pool-for-research-tenants"  # the schema allows 40 characters
    text = (ROOT / "stacks" / "Pulumi.aws-train.yaml").read_text().replace("h100", long)
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "Pulumi.long.yaml").write_text(text)
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    assert long in yaml.safe_load(text)["config"]["gpufleet:estate"]["sites"][0]["node_pools"][0]["name"]
    args = ["cost", "-s", "long", "-C", str(tmp_path)]

    def row(output: str) -> list[str]:
        return next(line.split() for line in output.splitlines() if line.strip().startswith(f"use1/{long[:20]}"))

    monkeypatch.delenv("COLUMNS", raising=False)
    wide = runner.invoke(app, args)
    assert wide.exit_code == 0, wide.output
    assert row(wide.stdout)[:3] == [f"use1/{long}", "p5.48xlarge", "0/2/4"] and "…" not in wide.stdout
    narrow = runner.invoke(app, ["--width", "80", *args])  # what rich's 80-column fallback did to it
    assert narrow.exit_code == 0 and "p5.48xlarge" not in narrow.stdout.split("Storage")[0]
