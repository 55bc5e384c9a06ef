"""Plan diff: what changes between two reviews of one stack (resources, cost and policy findings).

`diff_plans(base, head)` is the pure comparison: resources added, removed and changed (inputs as dotted-path
property changes; secrets are already masked in plans), resources that would be REPLACED because they were
renamed without an alias (a removed and an added resource of one type whose inputs match once the name change
is accounted for), the cost delta at desired and max size, and policy findings new and fixed.
gpufleet/review/diff/revision.py gets the two sides from git revisions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gpufleet.engine.plan import Plan, PlanResource
from gpufleet.review.cost.prices import LEVELS
from gpufleet.review.findings import Finding, Findings
from model.pricing import HOURS_PER_MONTH
from model.spec import EstateSpec

RENAME_SIMILARITY = 0.8  # share of input properties equal once the name change is accounted for


class DiffError(Exception):
    """The base revision could not be read or synthesized (names the revision and what went wrong)."""


def too_old(label: str, why: str) -> DiffError:
    """The error for a revision whose review document is not the one this code reads: gpufleet has never been
    released, so no older format is read."""
    return DiffError(f"{label} is too old to review: {why}; `gpufleet diff` needs a base that prints this review")


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
    unpriced: bool = False  # a side holds the pool without a price: its change is unknown, not the other side's
    # $/month by level as each side's own cost reports it (burst pools count their month ceiling, capacity blocks
    # their own hours, not 730 h). None: the month is 730 h of the hourly change.
    base_month: dict[str, float | None] | None = None
    head_month: dict[str, float | None] | None = None

    def delta(self, level: str) -> float | None:
        if self.unpriced:
            return None
        b, h = self.base.get(level), self.head.get(level)
        if b is None and h is None:
            return None
        return (h or 0.0) - (b or 0.0)

    def month_delta(self, level: str) -> float | None:
        """The change in $/month at `level`: the difference of the two sides' months where the line has them."""
        if self.unpriced:
            return None
        if self.base_month is None or self.head_month is None:
            hourly = self.delta(level)
            return None if hourly is None else hourly * HOURS_PER_MONTH
        b, h = self.base_month.get(level), self.head_month.get(level)
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
    cost_no_price: list[str] = field(default_factory=list)  # items with no price at all on either side
    cost_complete: tuple[bool, bool] = (True, True)  # base, head: whether each total leaves nothing out
    budget_hour: float | None = None  # the head's hour the hourly budget judges (burst pools at their max)
    base_budget_hour: float | None = None  # the same hour on the base side
    bursts: bool = False  # either side has burst pools under a burst policy (its cost has a burst ceiling)
    findings: Findings | None = None  # head findings (None: no policy evaluation available)
    findings_new: Findings = field(default_factory=Findings)
    findings_fixed: Findings = field(default_factory=Findings)
    notes: list[str] = field(default_factory=list)
    spec: EstateSpec | None = None  # head spec (diagram)
    plan: Plan | None = None  # head plan (diagram queue names)

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed or self.replaced)

    @property
    def findings_persisting(self) -> Findings:
        """Head findings that were already present at the base."""
        return Findings(f for f in self.findings or [] if f not in self.findings_new)


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


def diff_findings(base: Sequence[Finding], head: Sequence[Finding]) -> tuple[Findings, Findings]:
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
    return Findings(new), Findings(rest_base)


@dataclass(frozen=True)
class _SideCost:
    """What the comparison reads of one side's cost document (`EstateCost.to_dict`)."""

    hourly: dict[str, float | None]  # the total's $/h by level
    monthly: dict[str, float | None]  # the total's $/month by level
    pools: dict[str, dict[str, float | None]]  # $/h by level of each pool name, the first pool of a name
    pool_months: dict[str, dict[str, float | None]]  # $/month by level of the same pools, as the side priced them
    unpriced_pools: frozenset[str]
    unpriced: tuple[str, ...]
    no_price: tuple[str, ...]
    complete: bool
    budget_hour: float | None
    bursts: bool = False


def _side_cost(doc: dict[str, Any] | None, label: str) -> _SideCost | None:
    """One side's cost document read; raises DiffError naming `label` when a field this code reads is absent (a
    review printed by a revision too old to review)."""
    if doc is None:
        return None
    try:
        total = doc["total"]
        pools: dict[str, dict[str, float | None]] = {}
        months: dict[str, dict[str, float | None]] = {}
        for p in doc["pools"]:
            pools.setdefault(p["pool"], dict(p["hourly"]))
            months.setdefault(p["pool"], dict(p["monthly"]))
        return _SideCost(
            hourly=dict(total["hourly"]),
            monthly=dict(total["monthly"]),
            pools=pools,
            pool_months=months,
            unpriced_pools=frozenset(p["pool"] for p in doc["pools"] if not p["priced"]),
            unpriced=tuple(total["unpriced"]),
            no_price=tuple(total["no_price"]),
            complete=bool(total["complete"]),
            budget_hour=doc["budget_hour_usd"],
            bursts=doc.get("burst") is not None,
        )
    except KeyError as e:
        raise too_old(label, f"its cost has no field {e}") from None


def _cost_lines(base: _SideCost | None, head: _SideCost | None) -> tuple[CostLine | None, list[CostLine]]:
    if head is None and base is None:
        return None, []

    def hourly(side: _SideCost | None, pool: str | None) -> dict[str, float | None]:
        if side is None:
            return dict.fromkeys(LEVELS, 0.0) if pool is None else dict.fromkeys(LEVELS)
        if pool is None:
            return dict(side.hourly)
        return dict(side.pools[pool]) if pool in side.pools else dict.fromkeys(LEVELS)

    def monthly(side: _SideCost | None) -> dict[str, float | None]:
        return dict.fromkeys(LEVELS, 0.0) if side is None else dict(side.monthly)

    total = CostLine("total", hourly(base, None), hourly(head, None), False, monthly(base), monthly(head))
    names = list(dict.fromkeys([*(base.pools if base else {}), *(head.pools if head else {})]))

    def unpriced(side: _SideCost | None, pool: str) -> bool:
        return side is not None and pool in side.unpriced_pools

    def month(side: _SideCost | None, pool: str) -> dict[str, float | None]:
        """A pool's own months: its hourly figures are rounded to 4 decimals, and 730 h of their difference can be
        cents off the difference of the months."""
        return dict(side.pool_months[pool]) if side is not None and pool in side.pool_months else dict.fromkeys(LEVELS)

    lines = [
        CostLine(
            n, hourly(base, n), hourly(head, n), unpriced(base, n) or unpriced(head, n), month(base, n), month(head, n)
        )
        for n in names
    ]
    # A block's month can change while its rate does not (days 7 to 14 at twice the fee): keep the line then.
    return total, [c for c in lines if c.base != c.head or c.base_month != c.head_month]


def dependency_order(plan: Plan) -> dict[str, int]:
    """Each resource's place in the order the engine applies the plan: after every resource it depends on, ties
    broken by key. So a Kubernetes bump reads control plane, add-ons, node groups, autoscaler, as an `up` moves
    them."""
    keys = {r.key for r in plan.resources}
    deps = {r.key: {d for d in r.dependencies if d in keys and d != r.key} for r in plan.resources}
    order: dict[str, int] = {}
    ready = sorted(k for k, d in deps.items() if not d)
    waiting = {k: set(d) for k, d in deps.items() if d}
    dependents: dict[str, list[str]] = {}
    for k, d in waiting.items():
        for dep in d:
            dependents.setdefault(dep, []).append(k)
    while ready:
        key = ready.pop(0)
        order[key] = len(order)
        freed = []
        for k in dependents.get(key, []):
            waiting[k].discard(key)
            if not waiting[k]:
                del waiting[k]
                freed.append(k)
        ready = sorted([*ready, *freed])
    for key in sorted(waiting):  # a cycle the engine would refuse: kept, after the rest
        order[key] = len(order)
    return order


def diff_plans(
    base: Plan | None,
    head: Plan,
    *,
    base_label: str = "base",
    head_label: str = "working tree",
    base_cost: dict[str, Any] | None = None,
    head_cost: dict[str, Any] | None = None,
    base_findings: Sequence[Finding] | None = None,
    head_findings: Sequence[Finding] | None = None,
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
    rank = dependency_order(head)
    changed.sort(key=lambda c: rank.get(c.resource.key, len(rank)))
    base_side, head_side = _side_cost(base_cost, base_label), _side_cost(head_cost, head_label)
    total, pools = _cost_lines(base_side, head_side)
    unpriced = sorted({u for side in (base_side, head_side) if side for u in side.unpriced})
    no_price = sorted({u for side in (base_side, head_side) if side for u in side.no_price})
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
        cost_no_price=no_price,
        cost_complete=(base_side.complete if base_side else True, head_side.complete if head_side else True),
        budget_hour=head_side.budget_hour if head_side else None,
        base_budget_hour=base_side.budget_hour if base_side else None,
        bursts=any(side.bursts for side in (base_side, head_side) if side),
        spec=spec,
        plan=head,
    )
    if head_findings is not None:
        out.findings = Findings(head_findings)
        out.findings_new, out.findings_fixed = diff_findings(base_findings or [], head_findings)
    return out
