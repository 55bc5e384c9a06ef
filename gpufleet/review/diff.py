"""Plan diff between a git revision and the working tree: resources, cost and policy findings.

`diff_revision(project_dir, stack, base)` checks out `base` into a temporary `git worktree add --detach`,
synthesizes the stack there in a separate interpreter (`python -m gpufleet.engine.synth --review`, with the worktree
first on the path so the base revision's own components run), synthesizes the working tree in-process, and
compares the two. The worktree is removed afterwards, whatever happens.

`diff_plans(base, head)` is the pure comparison: resources added, removed and changed (inputs as dotted-path
property changes; secrets are already masked in plans), resources that would be REPLACED because they were
renamed without an alias (a removed and an added resource of one type whose inputs match once the name change
is accounted for), the cost delta at desired and max size, and policy findings new and fixed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.model.load import read_stack, stack_path
from components.model.spec import EstateSpec
from gpufleet.engine.plan import Plan, PlanResource
from gpufleet.review.cost import LEVELS, estate_cost
from gpufleet.review.findings import Finding, mandatory

RENAME_SIMILARITY = 0.8  # share of input properties equal once the name change is accounted for


class DiffError(Exception):
    """The base revision could not be read or synthesized (names the revision and what went wrong)."""


class _Missing:
    def __repr__(self) -> str:
        return "(absent)"


MISSING: Any = _Missing()


# --------------------------------------------------------------------------------------------- results


@dataclass(frozen=True)
class PropertyChange:
    path: str  # dotted path, e.g. `scalingConfig.maxSize` or `tags["kubernetes.io/role"]`
    before: Any  # MISSING when added
    after: Any  # MISSING when removed


@dataclass(frozen=True)
class ResourceChange:
    resource: PlanResource  # the head side
    changes: tuple[PropertyChange, ...]
    renamed_from: str | None = None  # a removed key this resource aliases (renamed with an alias: no replace)


@dataclass(frozen=True)
class Replacement:
    """A removed and an added resource that are one resource renamed without an alias: the engine replaces it."""

    removed: PlanResource
    added: PlanResource
    similarity: float

    @property
    def protected(self) -> bool:
        return self.removed.protect or self.removed.retain_on_delete


@dataclass(frozen=True)
class CostLine:
    name: str  # pool name, or "total"
    base: dict[str, float | None]  # $/h by level
    head: dict[str, float | None]

    def delta(self, level: str) -> float | None:
        b, h = self.base.get(level), self.head.get(level)
        if b is None and h is None:
            return None
        return (h or 0.0) - (b or 0.0)


@dataclass
class PlanDiff:
    project: str
    stack: str
    base_label: str
    head_label: str
    added: list[PlanResource]
    removed: list[PlanResource]
    changed: list[ResourceChange]
    replaced: list[Replacement]
    base_missing: bool = False  # the stack did not exist at the base revision: everything is added
    cost_total: CostLine | None = None
    cost_pools: list[CostLine] = field(default_factory=list)
    cost_unpriced: list[str] = field(default_factory=list)
    findings: list[Finding] | None = None  # head findings (None: no policy evaluation available)
    findings_new: list[Finding] = field(default_factory=list)
    findings_fixed: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    spec: EstateSpec | None = None  # head spec (diagram)
    plan: Plan | None = None  # head plan (diagram queue names)

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed or self.replaced)

    def mandatory(self) -> list[Finding]:
        return mandatory(self.findings or [])

    def to_dict(self) -> dict[str, Any]:
        def fd(f: Finding) -> dict[str, Any]:
            return {
                "pack": f.pack, "rule": f.rule, "enforcement": f.enforcement, "message": f.message,
                "resource": f.resource, "remediation": f.remediation,
            }  # fmt: skip

        def cl(c: CostLine) -> dict[str, Any]:
            delta = {lv: None if (v := c.delta(lv)) is None else round(v, 4) for lv in LEVELS}
            return {"name": c.name, "base": c.base, "head": c.head, "delta": delta}

        return {
            "project": self.project,
            "stack": self.stack,
            "base": self.base_label,
            "head": self.head_label,
            "base_missing": self.base_missing,
            "added": [r.key for r in self.added],
            "removed": [r.key for r in self.removed],
            "changed": [
                {
                    "key": c.resource.key,
                    "renamed_from": c.renamed_from,
                    "changes": [
                        {"path": p.path, "before": _jsonable(p.before), "after": _jsonable(p.after)} for p in c.changes
                    ],
                }
                for c in self.changed
            ],
            "replaced": [
                {
                    "removed": r.removed.key,
                    "added": r.added.key,
                    "similarity": round(r.similarity, 3),
                    "protected": r.protected,
                }
                for r in self.replaced
            ],
            "cost": {
                "total": cl(self.cost_total) if self.cost_total else None,
                "pools": [cl(c) for c in self.cost_pools],
                "unpriced": self.cost_unpriced,
            },
            "findings": None if self.findings is None else [fd(f) for f in self.findings],
            "findings_new": [fd(f) for f in self.findings_new],
            "findings_fixed": [fd(f) for f in self.findings_fixed],
            "notes": self.notes,
        }


def _jsonable(v: Any) -> Any:
    return None if v is MISSING else v


# ---------------------------------------------------------------------------------------- comparison


def _seg(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_\-]+", key) else json.dumps(key)


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Leaves of a JSON value by dotted path; keys with dots or slashes are quoted (`tags["a.b/c"]`)."""
    if isinstance(value, dict):
        if not value:
            return {prefix: {}} if prefix else {}
        out: dict[str, Any] = {}
        for k in sorted(value):
            seg = _seg(str(k))
            path = (f"{prefix}.{seg}" if seg[0] != '"' else f"{prefix}[{seg}]") if prefix else seg
            out.update(flatten(value[k], path))
        return out
    if isinstance(value, list):
        if not value:
            return {prefix: []}
        out = {}
        for i, v in enumerate(value):
            out.update(flatten(v, f"{prefix}[{i}]"))
        return out
    return {prefix: value}


def _attributes(r: PlanResource) -> dict[str, Any]:
    """What an update can change: inputs, plus the options the engine compares (in parentheses)."""
    out = flatten(r.inputs)
    out["(protect)"] = r.protect
    out["(retainOnDelete)"] = r.retain_on_delete
    out["(parent)"] = r.parent
    out["(provider)"] = r.provider
    if r.ignore_changes:
        out["(ignoreChanges)"] = sorted(r.ignore_changes)
    return out


def property_changes(before: PlanResource, after: PlanResource) -> list[PropertyChange]:
    a, b = _attributes(before), _attributes(after)
    out = []
    for path in sorted(set(a) | set(b)):
        va, vb = a.get(path, MISSING), b.get(path, MISSING)
        if va != vb:
            out.append(PropertyChange(path, va, vb))
    return out


def _name_change(old: str, new: str) -> tuple[str, str]:
    """The differing middle of two names (`train-lustre-fs` -> `train-hot-fs` gives `lustre`, `hot`)."""
    i = 0
    while i < min(len(old), len(new)) and old[i] == new[i]:
        i += 1
    j = 0
    while j < min(len(old), len(new)) - i and old[len(old) - 1 - j] == new[len(new) - 1 - j]:
        j += 1
    return old[i : len(old) - j], new[i : len(new) - j]


def _renamed(value: Any, old: str, new: str) -> Any:
    if not old or len(old) < 2:
        return value
    return value.replace(old, new) if isinstance(value, str) else value


def similarity(removed: PlanResource, added: PlanResource) -> float:
    """Share of input properties equal once the removed resource's name change is applied to its strings."""
    old, new = _name_change(removed.name, added.name)
    a = {_renamed(k, old, new): _renamed(v, old, new) for k, v in flatten(removed.inputs).items()}
    b = flatten(added.inputs)
    paths = set(a) | set(b)
    if not paths:
        return 1.0
    return sum(1 for p in paths if p in a and p in b and a[p] == b[p]) / len(paths)


def _aliases(added: PlanResource, removed: PlanResource) -> bool:
    return any(removed.key in a or (f"::{removed.name}" in a and removed.type in a) for a in added.aliases)


def _match_renames(
    removed: list[PlanResource], added: list[PlanResource]
) -> tuple[list[Replacement], list[tuple[PlanResource, PlanResource]]]:
    """Pair removed and added resources of one type: aliased pairs move, near-identical pairs are replaced."""
    moved: list[tuple[PlanResource, PlanResource]] = []
    candidates: list[tuple[float, int, int]] = []
    for i, r in enumerate(removed):
        for j, a in enumerate(added):
            if r.type != a.type or not (r.custom and a.custom):
                continue
            if _aliases(a, r):
                candidates.append((2.0, i, j))  # an alias beats any similarity
                continue
            s = similarity(r, a)
            if s >= RENAME_SIMILARITY:
                candidates.append((s, i, j))
    used_r: set[int] = set()
    used_a: set[int] = set()
    replaced = []
    for s, i, j in sorted(candidates, key=lambda c: (-c[0], removed[c[1]].key, added[c[2]].key)):
        if i in used_r or j in used_a:
            continue
        used_r.add(i)
        used_a.add(j)
        if s > 1.0:
            moved.append((removed[i], added[j]))
        else:
            replaced.append(Replacement(removed[i], added[j], s))
    return replaced, moved


def _finding_keys(f: Finding) -> tuple[tuple[str, str, str | None, str], tuple[str, str, str | None]]:
    return (f.pack, f.rule, f.resource, f.message), (f.pack, f.rule, f.resource)


def diff_findings(base: list[Finding], head: list[Finding]) -> tuple[list[Finding], list[Finding]]:
    """(new, fixed): matched exactly first, then by pack, rule and resource (a reworded message persists)."""
    rest_base = list(base)
    unmatched_head = []
    for f in head:
        exact = next((b for b in rest_base if _finding_keys(b)[0] == _finding_keys(f)[0]), None)
        if exact is not None:
            rest_base.remove(exact)
        else:
            unmatched_head.append(f)
    new = []
    for f in unmatched_head:
        loose = next((b for b in rest_base if _finding_keys(b)[1] == _finding_keys(f)[1]), None)
        if loose is not None:
            rest_base.remove(loose)
        else:
            new.append(f)
    return new, rest_base


def _cost_lines(base: dict[str, Any] | None, head: dict[str, Any] | None) -> tuple[CostLine | None, list[CostLine]]:
    if head is None and base is None:
        return None, []

    def hourly(doc: dict[str, Any] | None, pool: str | None) -> dict[str, float | None]:
        if doc is None:
            return dict.fromkeys(LEVELS, 0.0) if pool is None else dict.fromkeys(LEVELS)
        if pool is None:
            return dict(doc["total"]["hourly"])
        p = next((x for x in doc["pools"] if x["pool"] == pool), None)
        return dict(p["hourly"]) if p else dict.fromkeys(LEVELS)

    total = CostLine("total", hourly(base, None), hourly(head, None))
    names = list(
        dict.fromkeys(
            [p["pool"] for p in (base or {}).get("pools", [])] + [p["pool"] for p in (head or {}).get("pools", [])]
        )
    )
    lines = [CostLine(n, hourly(base, n), hourly(head, n)) for n in names]
    return total, [c for c in lines if c.base != c.head]


def diff_plans(
    base: Plan | None,
    head: Plan,
    *,
    base_label: str = "base",
    head_label: str = "working tree",
    base_cost: dict[str, Any] | None = None,
    head_cost: dict[str, Any] | None = None,
    base_findings: list[Finding] | None = None,
    head_findings: list[Finding] | None = None,
    spec: EstateSpec | None = None,
) -> PlanDiff:
    """Compare two plans of one stack (`base` None: the stack is new, everything is added)."""
    base_res = {r.key: r for r in (base.resources if base else []) if r.custom}
    head_res = {r.key: r for r in head.resources if r.custom}
    added = [head_res[k] for k in sorted(set(head_res) - set(base_res))]
    removed = [base_res[k] for k in sorted(set(base_res) - set(head_res))]
    replaced, moved = _match_renames(removed, added)
    paired = {id(r.removed) for r in replaced} | {id(r.added) for r in replaced}
    paired |= {id(x) for pair in moved for x in pair}
    changed = []
    for k in sorted(set(base_res) & set(head_res)):
        pcs = property_changes(base_res[k], head_res[k])
        if pcs:
            changed.append(ResourceChange(head_res[k], tuple(pcs)))
    for old, new in moved:
        changed.append(ResourceChange(new, tuple(property_changes(old, new)), renamed_from=old.key))
    total, pools = _cost_lines(base_cost, head_cost)
    unpriced = sorted({u for doc in (base_cost, head_cost) if doc for u in doc["total"].get("unpriced", [])})
    out = PlanDiff(
        project=head.project,
        stack=head.stack,
        base_label=base_label,
        head_label=head_label,
        added=[r for r in added if id(r) not in paired],
        removed=[r for r in removed if id(r) not in paired],
        changed=changed,
        replaced=replaced,
        base_missing=base is None,
        cost_total=total,
        cost_pools=pools,
        cost_unpriced=unpriced,
        spec=spec,
        plan=head,
    )
    if head_findings is not None:
        out.findings = list(head_findings)
        out.findings_new, out.findings_fixed = diff_findings(base_findings or [], head_findings)
    return out


# -------------------------------------------------------------------------------------- review document


def evaluate_findings(plan: Plan, spec: EstateSpec) -> list[Finding] | None:
    """Policy findings from `gpufleet.review.check.evaluate(plan, spec)`, or None when that module is not there."""
    try:
        check = importlib.import_module("gpufleet.review.check")
    except ImportError:
        return None
    evaluate = getattr(check, "evaluate", None)
    if evaluate is None:
        return None
    return list(evaluate(plan, spec))


def review_document(project_dir: Path, stack: str, plan: Plan, now: dt.datetime | None = None) -> dict[str, Any]:
    """Plan, cost envelope and findings of one stack as JSON-able data (`python -m gpufleet.engine.synth --review`)."""
    stack_file = read_stack(project_dir, stack)
    spec, window = stack_file.estate(), stack_file.window()
    findings = evaluate_findings(plan, spec)
    return {
        "plan": plan.to_dict(),
        "cost": estate_cost(spec, window, now).to_dict(),
        "findings": None if findings is None else [dataclasses.asdict(f) for f in findings],
    }


# --------------------------------------------------------------------------------------------- git side


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


# `python -m gpufleet.engine.synth` with the revision's directory first on the path and without the editable-install
# finder of the working tree's package (it would serve modules the revision lacks from the working tree).
_ISOLATED_SYNTH = (
    "import runpy, sys; "
    "sys.meta_path[:] = [f for f in sys.meta_path if '__editable__' not in getattr(f, '__module__', '')]; "
    "sys.argv[0] = 'gpufleet.engine.synth'; "
    "runpy.run_module('gpufleet.engine.synth', run_name='__main__', alter_sys=True)"
)


def _start_synth(project: Path, stack: str, review: bool) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(project) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd = [sys.executable, "-c", _ISOLATED_SYNTH, *(["--review"] if review else []), str(project), stack]
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


def _side(project: Path, stack: str, label: str, result: tuple[int, str, str]) -> _Side:
    """Plan, cost and findings of `stack` in `project` from its own code (`synth --review` output)."""
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
    if "usage:" not in err:
        raise DiffError(f"stack {stack} at {label} does not synthesize: {err.strip()[-2000:]}")
    # The revision predates `synth --review`: take its plan, and cost it with this code's catalog.
    code, out, err = _finish(_start_synth(project, stack, review=False))
    if code != 0:
        raise DiffError(f"stack {stack} at {label} does not synthesize: {err.strip()[-2000:]}")
    plan = Plan.from_dict(json.loads(out))
    notes = [f"{label} predates `synth --review`: its cost and findings come from this revision's code"]
    try:
        sf = read_stack(project, stack)
        spec = sf.estate()
        cost: dict[str, Any] | None = estate_cost(spec, sf.window()).to_dict()
        findings = evaluate_findings(plan, spec)
    except Exception as e:  # the stack may not parse under today's schema
        cost, findings = None, None
        notes.append(f"cost at {label} not available: {e}")
    return _Side(plan, cost, findings, notes)


def diff_revision(project_dir: Path | str, stack: str, base: str) -> PlanDiff:
    """Diff `stack` between git revision `base` and the working tree of `project_dir`.

    Both sides are synthesized in their own interpreter with their own tree first on the path, so each runs
    its own components, catalog and policy packs; the two run at the same time.
    """
    project_dir = Path(project_dir).resolve()
    repo = Path(_git(project_dir, "rev-parse", "--show-toplevel"))
    rel = project_dir.relative_to(repo)
    short = _git(repo, "rev-parse", "--short", f"{base}^{{commit}}")
    sf = read_stack(project_dir, stack)  # bad input in the working tree fails first, before any checkout
    spec = sf.estate()
    sf.window()
    head_proc = _start_synth(project_dir, stack, review=True)
    try:
        with _worktree(repo, base) as wt:
            base_dir = wt / rel
            side = _missing(base_dir, stack, base)
            if side is None:
                side = _side(base_dir, stack, base, _finish(_start_synth(base_dir, stack, review=True)))
        head = _side(project_dir, stack, "the working tree", _finish(head_proc))
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
