"""`gpufleet diff` when the stack file is all that differs: both sides from the working tree's code, no checkout.

gpufleet/review/diff/revision.py states the rule; these tests hold it to the checkout path's result (each side from its
own revision's code), and show that any other difference (a component, the catalog, a policy, an untracked file)
still takes the checkout.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpufleet.render.diff import diff_json
from gpufleet.review.diff import revision
from gpufleet.review.diff.plans import DiffError
from gpufleet.review.diff.revision import diff_revision, only_stack_differs
from tests.conftest import ROOT
from tests.review.estates import NODE_GROUP, small
from tests.review.repos import PROGRAM, commit, git, init_repo, set_price, stack_config, write_stack

STACK = Path("stacks/Pulumi.review.yaml")


def stack_change(tmp_path: Path) -> Path:
    """Base: the small estate. Working tree: the h100 pool's max 3 -> 4 and a new l40s pool, nothing else."""
    repo = init_repo(tmp_path, PROGRAM)
    write_stack(repo, "review", stack_config(small()))
    commit(repo, "base")
    estate = small()
    pools = estate["sites"][0]["node_pools"]
    pools[0]["scaling"]["max"] = 4
    pools.append(
        {"name": "l40s", "role": "inference", "instance_type": "g6e.12xlarge", "scaling": {"min": 1, "max": 2}}
    )
    write_stack(repo, "review", stack_config(estate))
    return repo


@contextlib.contextmanager
def no_checkout(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def refuse(repo: Path, rev: str) -> Iterator[Path]:
        raise AssertionError("checked out a worktree")

    monkeypatch.setattr(revision, "_worktree", refuse)
    yield


def checkout_result(monkeypatch: pytest.MonkeyPatch, repo: Path) -> str:
    with monkeypatch.context() as m:
        m.setattr(revision, "only_stack_differs", lambda *a: False)
        return diff_json(diff_revision(repo, "review", "main"))


def test_a_stack_only_change_is_diffed_without_a_checkout_and_equals_the_checkout_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = stack_change(tmp_path)
    full = checkout_result(monkeypatch, repo)
    with no_checkout(monkeypatch):
        fast = diff_revision(repo, "review", "main")
    assert [r.name for r in fast.added] == ["use1-l40s"]
    assert [c.resource.name for c in fast.changed] == ["use1-h100"]
    assert diff_json(fast) == full
    assert git(repo, "worktree", "list").count("\n") == 0


def test_one_interpreter_and_two_interpreters_give_the_same_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = stack_change(tmp_path)
    with no_checkout(monkeypatch):
        monkeypatch.setattr(revision, "ONE_INTERPRETER_UNITS", 10**6)
        one = diff_json(diff_revision(repo, "review", "main"))
        monkeypatch.setattr(revision, "ONE_INTERPRETER_UNITS", -1)
        two = diff_json(diff_revision(repo, "review", "main"))
    assert one == two
    assert json.loads(one)["changed"]


def test_an_interpreter_running_the_trees_own_code_reviews_both_versions_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the repository holds this interpreter's code byte for byte (the policy check included), so reviewing in this
    # process must give what the tree's own interpreter gives
    repo = stack_change(tmp_path)
    shutil.copy(ROOT / "gpufleet" / "review" / "check.py", repo / "gpufleet" / "review" / "check.py")
    shutil.copytree(ROOT / "policies", repo / "policies", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the policy check too")
    write_stack(repo, "review", stack_config(small()))
    commit(repo, "base")
    estate = small()
    estate["sites"][0]["node_pools"][0]["scaling"]["max"] = 4
    write_stack(repo, "review", stack_config(estate))
    assert revision.runs_tree_code(ROOT) and not revision.runs_tree_code(repo)
    started: list[tuple[Path, ...]] = []
    start = revision._start

    def recording(*args: object, **kwargs: object) -> object:
        started.append(args)
        return start(*args, **kwargs)  # type: ignore[arg-type]

    with no_checkout(monkeypatch):
        monkeypatch.setattr(revision, "_start", recording)
        own = diff_json(diff_revision(repo, "review", "main"))
        assert len(started) == 1  # one interpreter of the tree's code, both versions in it
        monkeypatch.setattr(revision, "runs_tree_code", lambda tree: True)
        mine = diff_json(diff_revision(repo, "review", "main"))
        assert len(started) == 1  # none more: this process reviewed both
    assert mine == own
    assert json.loads(mine)["changed"] and json.loads(mine)["findings"] is not None


def test_a_code_change_is_judged_by_the_base_revisions_own_code(tmp_path: Path) -> None:
    # the catalog (code and data of the tree) differs as well as the stack: the base side must price with $50/h
    repo = init_repo(tmp_path, PROGRAM)
    write_stack(repo, "review", stack_config(small()))
    set_price(repo, "p5.48xlarge", 50.0)
    commit(repo, "base")
    set_price(repo, "p5.48xlarge", 60.0)
    d = diff_revision(repo, "review", "main")
    assert d.cost_pools and {c.name for c in d.cost_pools} == {"h100"}
    h100 = d.cost_pools[0]
    # small(): h100 is 2 p5.48xlarge at desired
    assert h100.delta("desired") == pytest.approx(2 * 10.0, abs=1e-6)


@pytest.mark.parametrize(
    "change",
    [
        "model/catalog/aws_prices.json",  # the catalog the cost comes from
        "model/capacity.py",  # a component's model
        "gpufleet/review/cost/envelope.py",  # the review
        "__main__.py",  # the program
        "Pulumi.yaml",  # the project file
        "stacks/Pulumi.other.yaml",  # another stack's file (a burst state stack is read beside it)
    ],
)
def test_any_other_changed_file_takes_the_checkout(tmp_path: Path, change: str) -> None:
    repo = stack_change(tmp_path)
    assert only_stack_differs(repo, "main", repo / STACK)
    path = repo / change
    path.write_text(path.read_text() + "\n" if path.exists() else "config: {}\n")
    assert not only_stack_differs(repo, "main", repo / STACK)


def test_untracked_files_count_and_ignored_ones_and_bytecode_do_not(tmp_path: Path) -> None:
    repo = stack_change(tmp_path)
    (repo / ".gitignore").write_text("build/\n")
    commit(repo, "ignore build/")
    write_stack(repo, "review", stack_config(small()))  # the base's own stack again: no difference at all
    assert only_stack_differs(repo, "main", repo / STACK)
    (repo / "build").mkdir()
    (repo / "build" / "x.py").write_text("")
    assert only_stack_differs(repo, "main", repo / STACK)
    # nor are bytecode caches, ignored or not (Python uses one only for the source beside it)
    (repo / "components" / "__pycache__").mkdir(exist_ok=True)
    (repo / "components" / "__pycache__" / "capacity.cpython-311.pyc").write_bytes(b"")
    assert only_stack_differs(repo, "main", repo / STACK)
    (repo / "policies").mkdir(exist_ok=True)
    (repo / "policies" / "new_pack.py").write_text("")
    assert not only_stack_differs(repo, "main", repo / STACK)
    # touched but identical content is no difference (compared by content, not modification time)
    (repo / "policies" / "new_pack.py").unlink()
    (repo / "__main__.py").write_text((repo / "__main__.py").read_text())
    assert only_stack_differs(repo, "main", repo / STACK)


def test_bad_input_in_the_base_stack_file_names_the_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = init_repo(tmp_path, PROGRAM)
    (repo / STACK).write_text("config: [not, a, mapping]\n")
    commit(repo, "broken")
    write_stack(repo, "review", stack_config(small()))
    with no_checkout(monkeypatch), pytest.raises(DiffError, match=r"at main does not synthesize: .*config: must be"):
        diff_revision(repo, "review", "main")


def test_document_prints_one_review_per_stack_file_in_order(tmp_path: Path) -> None:
    repo = stack_change(tmp_path)
    base = tmp_path / "Pulumi.review.yaml"
    base.write_text(git(repo, "show", f"main:{STACK.as_posix()}") + "\n")
    env = {"PYTHONPATH": str(repo), "PATH": ""}
    cmd = [sys.executable, "-m", "gpufleet.review.document", str(repo), "review", str(base), str(repo / STACK)]
    done = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    docs = [json.loads(line) for line in done.stdout.splitlines()]
    pools = [
        sorted(r["name"] for r in d["plan"]["resources"] if r["type"] == NODE_GROUP and r["name"].startswith("use1"))
        for d in docs
    ]
    assert pools == [["use1-agents-g6e", "use1-h100"], ["use1-agents-g6e", "use1-h100", "use1-l40s"]]
    # no file: the stack's own file, as the checkout path reviews each side
    own = subprocess.run(cmd[:-2], cwd=repo, env=env, capture_output=True, text=True)
    assert own.returncode == 0, own.stderr
    assert [json.loads(line)["plan"] for line in own.stdout.splitlines()] == [docs[1]["plan"]]
    # bad input in the second file: the first's line, then its message, exit 2
    broken = tmp_path / "broken.yaml"
    broken.write_text("config: 3\n")
    done = subprocess.run([*cmd[:-1], str(broken)], cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 2 and len(done.stdout.splitlines()) == 1
    assert "broken.yaml: config: must be a mapping" in done.stderr
