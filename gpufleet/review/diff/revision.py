"""`gpufleet diff` across git revisions: each side's review from its own code, then `diff_plans`.

`diff_revision(project_dir, stack, base)` reviews the stack at `base` and in the working tree. Each side runs
`python -m gpufleet.review.document` with its own tree first on the path. So each side is judged by its own
components, catalog and policy packs.

- When the stack file is all that differs, nothing is checked out (`_same_code`). This is the common pull request.
- Any other difference, in code, the catalog, a policy pack or another file, checks `base` out into a temporary
  worktree (`_checkout`).
- A stack file absent at `base` means every resource is new.
- gpufleet has never been released, so a base must print the review document this code reads. A base too old for
  that is a DiffError naming it (exit 2), never read another way.
"""

from __future__ import annotations

import contextlib
import importlib.util
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

import yaml

from gpufleet.engine.plan import Plan
from gpufleet.review.diff.plans import DiffError, PlanDiff, diff_plans, too_old
from gpufleet.review.findings import Finding
from model import kinds
from model.load import ESTATE_KEY, StackFile, load_yaml, read_stack, stack_path
from model.rules.upgrade import addon_step_problems, minor_step_problems, ultraserver_upgrade_problems
from model.spec import EstateSpec

# How a revision's own code prints the review of its stack (`python -m`); a revision without it is too old to review.
ENTRY_FILE = "gpufleet/review/document.py"
ENTRY_MODULE = "gpufleet.review.document"


def _git(cwd: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    except FileNotFoundError:
        raise DiffError(
            "git: not found; `gpufleet diff` reads the base revision with git, so put git on PATH"
        ) from None
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
        with contextlib.suppress(OSError):  # no git: the DiffError above says so
            subprocess.run(["git", "worktree", "remove", "--force", str(wt)], cwd=repo, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
        with contextlib.suppress(OSError):
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


def _start(project: Path, stack: str, files: tuple[Path, ...] = ()) -> subprocess.Popen[str]:
    """`python -m gpufleet.review.document` of `project`'s own code: `stack` from its own file, or from `files`."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(project) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd = [sys.executable, "-c", _ISOLATED, ENTRY_MODULE, str(project), stack, *map(str, files)]
    return subprocess.Popen(cmd, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


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


def _side(stack: str, label: str, result: tuple[int, str, str]) -> _Side:
    """Plan, cost and findings of `stack` at `label` from the review document its own code printed."""
    code, out, err = result
    if code != 0:
        raise DiffError(f"stack {stack} at {label} does not synthesize: {err.strip()[-2000:]}")
    doc = json.loads(out)
    try:
        findings = doc["findings"]
        return _Side(
            Plan.from_dict(doc["plan"]),
            doc["cost"],
            None if findings is None else [Finding(**f) for f in findings],
            [],
        )
    except KeyError as e:
        raise too_old(label, f"its review document has no field {e}") from None


# The same-code path reviews both sides in one interpreter (imports once, then two syntheses) when the estate has at
# most this many servers, node pools and tenants together, else in two interpreters at once (each imports all of
# it, then they synthesize on two cores). The imports the first synthesis triggers (the provider SDK's modules)
# cost the same at every size, while a second synthesis grows with the estate: a small estate gains most from
# paying the imports once, a large one from the second core (timings in benchmarks/README.md).
ONE_INTERPRETER_UNITS = 40


def size_units(spec: EstateSpec) -> int:
    """Servers, node pools and tenants of an estate: what its number of resources grows with."""
    servers = sum(len(kinds.of(s).servers) for s in spec.sites)
    return servers + sum(len(s.node_pools) for s in spec.sites) + len(spec.tenants)


def only_stack_differs(repo: Path, base: str, stack_file: Path) -> bool:
    """True when the working tree of `repo` and revision `base` hold the same content in every file but
    `stack_file` (tracked files compared by content, `git diff`; any untracked file that is not ignored counts as
    a difference, but for Python's bytecode caches)."""
    rel = stack_file.relative_to(repo).as_posix()
    changed = _git(repo, "diff", "--name-only", "--no-renames", "-z", base).split("\0")
    # Python's bytecode caches are no input: a `__pycache__` file is used only for the source beside it, and only
    # while it matches that source (https://peps.python.org/pep-3147/); unignored, they are in every tree run.
    untracked = _git(repo, "ls-files", "--others", "--exclude-standard", "--exclude=__pycache__/", "-z").split("\0")
    return {p for p in changed + untracked if p} <= {rel}


def runs_tree_code(tree: Path) -> bool:
    """True when this interpreter's own `components`, `gpufleet`, `model` and `policies` packages are the files of `tree`
    (the tree first on PYTHONPATH, or installed from it in editable mode)."""
    for name in ("components", "gpufleet", "model", "policies"):
        found = importlib.util.find_spec(name)
        origin = None if found is None else found.origin
        if origin is None or not Path(origin).resolve().is_relative_to(tree / name):
            return False
    return True


def _in_process(project_dir: Path, stack: str, files: tuple[Path, ...]) -> tuple[int, str, str]:
    """What `python -m gpufleet.review.document` would answer, from this interpreter (whose code is the tree's)."""
    from gpufleet.review.document import FAILURES, documents

    lines: list[str] = []
    try:
        lines.extend(documents(project_dir, stack, files))
    except FAILURES as err:
        return 2, "\n".join(lines), str(err)
    return 0, "\n".join(lines), ""


def _one_interpreter(project_dir: Path, stack: str, files: tuple[Path, ...]) -> tuple[int, str, str]:
    if runs_tree_code(project_dir):  # no second interpreter, no second import of it all
        return _in_process(project_dir, stack, files)
    return _finish(_start(project_dir, stack, files))


def _same_code(repo: Path, project_dir: Path, stack: str, base: str, spec: EstateSpec) -> tuple[_Side, _Side] | None:
    """Both sides from the working tree's code when the stack file is all that differs; None when the checkout
    must run.

    What counts as a difference is `only_stack_differs`: ignored files, which a checkout would not hold, are not
    compared. The base's stack file is taken from git (`git show <base>:<path>`) into a temporary file. Both
    versions are reviewed with the working tree's other files, which are byte for byte those of `base`, so the
    result is the one a checkout would give. A small estate (`ONE_INTERPRETER_UNITS`) is reviewed in one
    interpreter, one version after the other; where this interpreter runs the tree's code (`runs_tree_code`), it
    reviews both itself. A larger estate is reviewed in two interpreters at once, one per version."""
    head_file = stack_path(project_dir, stack).resolve()
    if not head_file.is_relative_to(repo):
        return None
    if not only_stack_differs(repo, base, head_file):
        return None
    rel = head_file.relative_to(repo).as_posix()
    shown = subprocess.run(["git", "show", f"{base}:{rel}"], cwd=repo, capture_output=True)
    with tempfile.TemporaryDirectory(prefix="gpufleet-diff-") as tmp:
        if shown.returncode != 0:  # not in the base revision (the repository and its Pulumi.yaml are)
            base_side = _Side(None, None, [], [f"stack {stack} does not exist at {base}: every resource is new"])
            result = _one_interpreter(project_dir, stack, (head_file,))
            return base_side, _side(stack, "the working tree", result)
        base_file = Path(tmp) / head_file.name
        base_file.write_bytes(shown.stdout)
        if size_units(spec) <= ONE_INTERPRETER_UNITS:
            code, out, err = _one_interpreter(project_dir, stack, (base_file, head_file))
            lines = out.splitlines()
            base_result = (0, lines[0], "") if lines else (code, "", err)
            head_result = (0, lines[1], "") if len(lines) > 1 else (code, "", err)
        else:
            head_proc = _start(project_dir, stack, (head_file,))
            try:
                base_result = _finish(_start(project_dir, stack, (base_file,)))
                head_result = _finish(head_proc)
            finally:
                if head_proc.poll() is None:
                    head_proc.kill()
                    head_proc.communicate()
    return (
        _side(stack, base, base_result),
        _side(stack, "the working tree", head_result),
    )


def _checkout(repo: Path, project_dir: Path, stack: str, base: str) -> tuple[_Side, _Side]:
    """Each side from its own revision's code: `base` checked out into a temporary worktree
    (`git worktree add --detach`), reviewed at the same time as the working tree. The worktree is removed
    afterwards, whatever happens."""
    rel = project_dir.relative_to(repo)
    head_proc = _start(project_dir, stack)
    try:
        with _worktree(repo, base) as wt:
            base_dir = wt / rel
            side = _missing(base_dir, stack, base)
            if side is None:
                if not (base_dir / ENTRY_FILE).exists():
                    raise too_old(base, f"it has no {ENTRY_FILE}")
                side = _side(stack, base, _finish(_start(base_dir, stack)))
        head = _side(stack, "the working tree", _finish(head_proc))
    finally:
        if head_proc.poll() is None:
            head_proc.kill()
            head_proc.communicate()
    return side, head


def _check_minor_steps(repo: Path, base: str, sf: StackFile) -> None:
    """Refuse a head whose EKS clusters skip a Kubernetes minor from `base`, or that replaces the nodes of an
    UltraServer group the stack keeps above desired 0 (model.rules.upgrade): before either side is reviewed, so
    the rule is named even where the head's minor is one gpufleet pins nothing for."""
    head_file = sf.path.resolve()
    if not head_file.is_relative_to(repo):
        return
    shown = subprocess.run(
        ["git", "show", f"{base}:{head_file.relative_to(repo).as_posix()}"], cwd=repo, capture_output=True, text=True
    )
    if shown.returncode != 0:  # no stack file at the base: nothing to upgrade from
        return
    try:
        base_doc = load_yaml(shown.stdout, f"{base}:{sf.path.name}")
    except yaml.YAMLError:
        return  # the base side's own review reports a broken base file
    base_config = base_doc.get("config") if isinstance(base_doc, dict) else None
    if not isinstance(base_config, dict):
        return  # likewise
    base_estate, head_estate = base_config.get(ESTATE_KEY), sf.config.get(ESTATE_KEY)
    problems = minor_step_problems(base_estate, head_estate, str(sf.path))
    problems += ultraserver_upgrade_problems(base_estate, head_estate, str(sf.path))
    if problems:
        raise DiffError("\n".join(problems))


def addon_versions(plan: Plan) -> dict[tuple[str, str], str]:
    """(cluster, add-on) -> the EKS add-on version the plan pins."""
    return {
        (str(r.inputs.get("clusterName")), str(r.inputs["addonName"])): str(r.inputs["addonVersion"])
        for r in plan.find("aws:eks/addon:Addon")
        if r.inputs.get("addonVersion")
    }


def diff_revision(project_dir: Path | str, stack: str, base: str) -> PlanDiff:
    """Diff `stack` between git revision `base` and the working tree of `project_dir`."""
    project_dir = Path(project_dir).resolve()
    repo = Path(_git(project_dir, "rev-parse", "--show-toplevel"))
    short = _git(repo, "rev-parse", "--short", f"{base}^{{commit}}")
    sf = read_stack(project_dir, stack)  # bad input in the working tree fails first, before any checkout
    _check_minor_steps(repo, base, sf)
    spec = sf.estate()
    sf.window()
    sides = _same_code(repo, project_dir, stack, base, spec) or _checkout(repo, project_dir, stack, base)
    side, head = sides
    assert head.plan is not None
    if side.plan is not None and (steps := addon_step_problems(addon_versions(side.plan), addon_versions(head.plan))):
        raise DiffError("\n".join(steps))
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
