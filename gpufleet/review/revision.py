"""`gpufleet diff` across git revisions: each side's review from its own code, then `diff_plans`.

`diff_revision(project_dir, stack, base)` checks out `base` into a temporary `git worktree add --detach` and runs
the review of the stack there and in the working tree, each in its own interpreter with its own tree first on
the path (`python -m gpufleet.review.document`), so each side is judged by its own components, catalog and policy
packs; the two run at the same time. The worktree is removed afterwards, whatever happens.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.model.load import read_stack, stack_path
from gpufleet.engine.plan import Plan
from gpufleet.review.diff import DiffError, PlanDiff, diff_plans
from gpufleet.review.findings import Finding


@dataclass(frozen=True)
class EntryPoint:
    """How a revision's own code prints the review of a stack."""

    file: str  # must exist in the revision's tree
    module: str
    args: tuple[str, ...]


# Newest first. Revisions from before gpufleet/review/document.py printed the review from the engine
# (`synth --review`); older ones print only the plan (they answer `--review` with their usage line).
ENTRY_POINTS: tuple[EntryPoint, ...] = (
    EntryPoint("gpufleet/review/document.py", "gpufleet.review.document", ()),
    EntryPoint("gpufleet/engine/synth.py", "gpufleet.engine.synth", ("--review",)),
    EntryPoint("gpufleet/synth.py", "gpufleet.synth", ("--review",)),
)


def entry_point(tree: Path) -> EntryPoint:
    return next((e for e in ENTRY_POINTS if (tree / e.file).exists()), ENTRY_POINTS[0])


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise DiffError(f"git {' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout.strip()


@dataclass
class _Side:
    plan: Plan | None
    cost: dict[str, Any] | None
    findings: list[Finding] | None
    notes: list[str]


@contextlib.contextmanager
def _worktree(repo: Path, rev: str) -> Iterator[Path]:
    tmp = Path(tempfile.mkdtemp(prefix="gpufleet-diff-"))
    wt = tmp / "base"
    try:
        _git(repo, "worktree", "add", "--detach", "--quiet", str(wt), rev)
        yield wt
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(wt)], cwd=repo, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run(["git", "worktree", "prune"], cwd=repo, capture_output=True)


# Run a module with the revision's directory first on the path and without the editable-install finder of the
# working tree's package (it would serve modules the revision lacks from the working tree). Like the `gpufleet`
# console script (gpufleet/cli/app.py), the child runs without automatic garbage collection and freezes what it
# left before it exits: one synthesis, then the process ends.
_ISOLATED = "\n".join(
    (
        "import gc, runpy, sys",
        "gc.disable()",
        "sys.meta_path[:] = [f for f in sys.meta_path if '__editable__' not in getattr(f, '__module__', '')]",
        "module = sys.argv.pop(1); sys.argv[0] = module",
        "try:",
        "    runpy.run_module(module, run_name='__main__', alter_sys=True)",
        "finally:",
        "    gc.freeze()",
    )
)


def _start(project: Path, stack: str, module: str, args: tuple[str, ...]) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(project) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd = [sys.executable, "-c", _ISOLATED, module, *args, str(project), stack]
    return subprocess.Popen(cmd, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _start_review(project: Path, stack: str) -> tuple[EntryPoint, subprocess.Popen[str]]:
    entry = entry_point(project)
    return entry, _start(project, stack, entry.module, entry.args)


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate()
    return proc.returncode, out, err


def _missing(project: Path, stack: str, label: str) -> _Side | None:
    """A side with no resources when the project or the stack file does not exist at `label`."""
    if not (project / "Pulumi.yaml").exists():
        return _Side(None, None, None, [f"{label} has no Pulumi.yaml here: every resource is new"])
    try:
        exists = stack_path(project, stack).exists()
    except Exception:
        exists = False
    if not exists:
        return _Side(None, None, [], [f"stack {stack} does not exist at {label}: every resource is new"])
    return None


def _side(project: Path, stack: str, label: str, entry: EntryPoint, result: tuple[int, str, str]) -> _Side:
    """Plan, cost and findings of `stack` in `project` from its own code (the review document it printed)."""
    code, out, err = result
    if code == 0:
        doc = json.loads(out)
        findings = doc.get("findings")
        return _Side(
            Plan.from_dict(doc["plan"]),
            doc.get("cost"),
            None if findings is None else [Finding(**f) for f in findings],
            [],
        )
    if not (entry.args and "usage:" in err):
        raise DiffError(f"stack {stack} at {label} does not synthesize: {err.strip()[-2000:]}")
    # The revision predates `synth --review`: take its plan, and judge it with this code's catalog and packs.
    code, out, err = _finish(_start(project, stack, entry.module, ()))
    if code != 0:
        raise DiffError(f"stack {stack} at {label} does not synthesize: {err.strip()[-2000:]}")
    plan = Plan.from_dict(json.loads(out))
    # Imported here: the review (and with it Pulumi) is needed only for such an old revision, and the parent
    # process starts both sides sooner without it.
    from gpufleet.review.cost import estate_cost
    from gpufleet.review.review import policy_check

    notes = [f"{label} predates `synth --review`: its cost and findings come from this revision's code"]
    cost: dict[str, Any] | None
    findings_now: list[Finding] | None
    try:
        sf = read_stack(project, stack)
        spec = sf.estate()
        cost = estate_cost(spec, sf.window()).to_dict()
        check = policy_check()
        findings_now = None if check is None else list(check.evaluate(plan, spec))
    except Exception as e:  # the stack may not parse under today's schema
        cost, findings_now = None, None
        notes.append(f"cost at {label} not available: {e}")
    return _Side(plan, cost, findings_now, notes)


def diff_revision(project_dir: Path | str, stack: str, base: str) -> PlanDiff:
    """Diff `stack` between git revision `base` and the working tree of `project_dir`."""
    project_dir = Path(project_dir).resolve()
    repo = Path(_git(project_dir, "rev-parse", "--show-toplevel"))
    rel = project_dir.relative_to(repo)
    short = _git(repo, "rev-parse", "--short", f"{base}^{{commit}}")
    sf = read_stack(project_dir, stack)  # bad input in the working tree fails first, before any checkout
    spec = sf.estate()
    sf.window()
    head_entry, head_proc = _start_review(project_dir, stack)
    try:
        with _worktree(repo, base) as wt:
            base_dir = wt / rel
            side = _missing(base_dir, stack, base)
            if side is None:
                base_entry, base_proc = _start_review(base_dir, stack)
                side = _side(base_dir, stack, base, base_entry, _finish(base_proc))
        head = _side(project_dir, stack, "the working tree", head_entry, _finish(head_proc))
    finally:
        if head_proc.poll() is None:
            head_proc.kill()
            head_proc.communicate()
    assert head.plan is not None
    out = diff_plans(
        side.plan,
        head.plan,
        base_label=f"{base} ({short})",
        head_label="working tree",
        base_cost=side.cost,
        head_cost=head.cost,
        base_findings=side.findings,
        head_findings=head.findings,
        spec=spec,
    )
    out.notes += side.notes + head.notes
    if head.findings is None:
        out.notes.append("policy findings not evaluated: gpufleet.review.check is not available in the working tree")
    return out
