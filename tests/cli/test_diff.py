"""`gpufleet diff` on the command line: an unknown revision and one too old to review are bad input; the Markdown
comment a reviewer reads."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app
from tests.review import repos
from tests.review.estates import small


@pytest.fixture
def two_revisions(tmp_path: Path) -> Path:
    return repos.two_revisions(tmp_path)


def test_unknown_base_revision_is_an_error_naming_it(two_revisions: Path) -> None:
    result = CliRunner().invoke(app, ["diff", "-s", "review", "--base", "no-such-rev", "-C", str(two_revisions)])
    assert result.exit_code == 2
    assert "no-such-rev" in result.stderr


def test_a_base_too_old_to_review_is_an_error_naming_it(tmp_path: Path) -> None:
    repo = repos.init_repo(tmp_path, repos.PROGRAM)
    repos.write_stack(repo, "review", repos.stack_config(small()))
    entry = repo / "gpufleet" / "review" / "document.py"
    kept = entry.read_text()
    entry.unlink()
    repos.commit(repo, "base: no review entry point")
    entry.write_text(kept)
    result = CliRunner().invoke(app, ["diff", "-s", "review", "--base", "main", "-C", str(repo)])
    assert result.exit_code == 2, result.output
    assert "main is too old to review: it has no gpufleet/review/document.py" in result.stderr
    assert "Traceback" not in result.output
    assert repos.git(repo, "worktree", "list").count("\n") == 0  # the base's checkout is removed


def test_diff_cli_markdown_is_a_comment_a_reviewer_can_act_on(two_revisions: Path) -> None:
    result = CliRunner().invoke(
        app, ["diff", "-s", "review", "--base", "main", "-C", str(two_revisions), "-f", "markdown"]
    )
    assert result.exit_code == 0, result.output
    md = result.stdout
    assert md.startswith("<!-- gpufleet:plan:gpufleet/review -->\n")
    assert "**1 to add · 1 to change · 0 to delete · 1 to replace**" in md
    assert "**1 resource would be REPLACED (rename without alias)**" in md
    assert "`use1-lustre` → `use1-hot` — **protected: `pulumi up` will stop with an error" in md
    assert "<code>scalingConfig.maxSize</code> | <code>3</code> | <code>4</code>" in md
    # pools +91.14528 / +20.57264 plus the new nodes' gp3 roots (+0.06575 / +0.02192): tests/review/diff/test_revision.py
    assert "+$91.21/h" in md and "+$20.59/h" in md
    assert "❌ **1 mandatory policy violation(s)** (0 advisory). New: 1 (1 mandatory); fixed: 0." in md
