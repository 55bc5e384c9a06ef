"""A small PromQL evaluator for gpufleet's own rules, over series a test writes, on promql-parser's syntax tree.

It covers what the rules use: selectors, `sum`/`max`/`avg`/`count by`, arithmetic with `on` and `group_left`, `and`, `or`,
`unless`, comparisons with a number (filters, no `bool`), `avg_over_time`, `sum_over_time`, `max_over_time`,
`label_replace` and `clamp_min`. Semantics as Prometheus documents them
(https://prometheus.io/docs/prometheus/latest/querying/basics/ and .../operators/): an instant selector takes a
series' newest sample of the last 5 minutes unless the series went stale since; a range selector takes the samples
in (t - range, t], left-open; staleness markers are never samples. Anything else raises, so a rule that outgrows
this evaluator fails its test instead of passing on a guess.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass, field
from typing import Any

import promql_parser as pp

LOOKBACK = 300.0  # seconds: Prometheus' default --query.lookback-delta
Labels = dict[str, str]
Vector = list[tuple[Labels, float]]


@dataclass
class Series:
    labels: Labels  # with __name__
    samples: list[tuple[float, float]] = field(default_factory=list)  # (unix seconds, value), in time order
    stale_at: float | None = None  # when a staleness marker was written: the series was gone from its scrape


def _matches(s: Series, name: str | None, matchers: list[Any]) -> bool:
    if name is not None and s.labels.get("__name__") != name:
        return False
    for m in matchers:
        value, op = s.labels.get(m.name, ""), str(m.op)
        if op.endswith("Equal") and (value == m.value) != (op == "MatchOp.Equal"):
            return False
        if op.endswith("Re") and (re.fullmatch(m.value, value) is not None) != (op == "MatchOp.Re"):
            return False
    return True


def _signature(labels: Labels, modifier: Any) -> tuple[tuple[str, str], ...]:
    matching = None if modifier is None else modifier.matching
    keep = {k: v for k, v in labels.items() if k != "__name__"}
    if matching is not None:
        listed = set(matching.labels)
        include = str(matching.type) == "LabelModifierType.Include"
        keep = {k: v for k, v in keep.items() if (k in listed) == include}
    return tuple(sorted(keep.items()))


def _unique(v: Vector, what: str) -> Vector:
    seen = [tuple(sorted(labels.items())) for labels, _ in v]
    if len(set(seen)) != len(seen):
        raise ValueError(f"{what}: duplicate series in the result (Prometheus refuses this)")
    return v


COMPARISONS = {
    ">": operator.gt,
    "<": operator.lt,
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
}


def _arith(op: str, a: float, b: float) -> float:
    match op:
        case "+":
            return a + b
        case "-":
            return a - b
        case "*":
            return a * b
        case "/":
            return a / b if b else float("nan")
    raise NotImplementedError(op)


class Evaluator:
    def __init__(self, series: list[Series]) -> None:
        self.series = series

    def query(self, expr: str, t: float) -> Vector:
        result = self._eval(pp.parse(expr), t)
        if not isinstance(result, list):
            raise TypeError(f"{expr}: not a vector")
        return result

    def _selected(self, node: Any) -> list[Series]:
        return [s for s in self.series if _matches(s, node.name, node.matchers.matchers)]

    def _eval(self, node: Any, t: float) -> Any:
        kind = type(node).__name__
        if kind == "ParenExpr":
            return self._eval(node.expr, t)
        if kind == "NumberLiteral":
            return float(node.val)
        if kind == "StringLiteral":
            return node.val
        if kind == "VectorSelector":
            out: Vector = []
            for s in self._selected(node):
                recent = [(ts, v) for ts, v in s.samples if t - LOOKBACK < ts <= t]
                if recent and not (s.stale_at is not None and recent[-1][0] < s.stale_at <= t):
                    out.append((dict(s.labels), recent[-1][1]))
            return out
        if kind == "Call":
            return self._call(node, t)
        if kind == "AggregateExpr":
            return self._aggregate(node, t)
        if kind == "BinaryExpr":
            return self._binary(node, t)
        raise NotImplementedError(kind)

    def _call(self, node: Any, t: float) -> Vector:
        name = node.func.name
        if name in ("avg_over_time", "sum_over_time", "max_over_time"):
            (matrix,) = node.args
            span = matrix.range.total_seconds()
            out: Vector = []
            for s in self._selected(matrix.vector_selector):
                values = [v for ts, v in s.samples if t - span < ts <= t]
                if values:
                    labels = {k: v for k, v in s.labels.items() if k != "__name__"}
                    folded = max(values) if name == "max_over_time" else sum(values)
                    out.append((labels, folded / (len(values) if name == "avg_over_time" else 1)))
            return out
        args = [self._eval(a, t) for a in node.args]
        if name == "label_replace":
            vector, dst, replacement, src, regex = args
            out = []
            for labels, value in vector:
                found = re.fullmatch(regex, labels.get(src, ""))
                new = dict(labels)
                if found is not None:
                    text = re.sub(r"\$(\d+)", lambda g, f=found: f.group(int(g.group(1))) or "", replacement)
                    new.pop(dst, None) if text == "" else new.__setitem__(dst, text)
                out.append((new, value))
            return _unique(out, name)
        if name == "clamp_min":
            vector, low = args
            return [({k: v for k, v in labels.items() if k != "__name__"}, max(value, low)) for labels, value in vector]
        raise NotImplementedError(name)

    def _aggregate(self, node: Any, t: float) -> Vector:
        op = str(node.op)
        if node.modifier is None or str(node.modifier.type) != "AggModifierType.By":
            raise NotImplementedError(f"{op} without `by`")
        groups: dict[tuple[tuple[str, str], ...], list[float]] = {}
        for labels, value in self._eval(node.expr, t):
            key = tuple(sorted((k, labels[k]) for k in node.modifier.labels if k in labels))
            groups.setdefault(key, []).append(value)
        fold = {"sum": sum, "max": max, "avg": lambda vs: sum(vs) / len(vs), "count": len}[op]
        return [(dict(key), float(fold(values))) for key, values in groups.items()]

    def _binary(self, node: Any, t: float) -> Any:
        op, mod = str(node.op), node.modifier
        lhs, rhs = self._eval(node.lhs, t), self._eval(node.rhs, t)
        if op in ("and", "or", "unless"):
            right = {_signature(labels, mod) for labels, _ in rhs}
            if op == "and":
                return [(labels, v) for labels, v in lhs if _signature(labels, mod) in right]
            if op == "unless":
                return [(labels, v) for labels, v in lhs if _signature(labels, mod) not in right]
            left = {_signature(labels, mod) for labels, _ in lhs}
            return lhs + [(labels, v) for labels, v in rhs if _signature(labels, mod) not in left]
        if op in COMPARISONS:
            if mod is not None and mod.return_bool:
                raise NotImplementedError("bool")
            if isinstance(rhs, float) and isinstance(lhs, list):  # a filter: the samples that compare true
                return [(labels, v) for labels, v in lhs if COMPARISONS[op](v, rhs)]
            raise NotImplementedError(f"{op} of these operands")
        if isinstance(lhs, float) and isinstance(rhs, float):
            return _arith(op, lhs, rhs)
        if isinstance(rhs, float):
            return [(_unnamed(labels), _arith(op, v, rhs)) for labels, v in lhs]
        if isinstance(lhs, float):
            return [(_unnamed(labels), _arith(op, lhs, v)) for labels, v in rhs]
        card = "OneToOne" if mod is None else str(mod.card).split(".")[-1]
        if card not in ("OneToOne", "ManyToOne"):
            raise NotImplementedError(card)
        one: dict[tuple[tuple[str, str], ...], tuple[Labels, float]] = {}
        for labels, v in rhs:
            sig = _signature(labels, mod)
            if sig in one:
                raise ValueError(f"{op}: many series on the one side for {dict(sig)}")
            one[sig] = (labels, v)
        out: Vector = []
        for labels, v in lhs:
            match = one.get(_signature(labels, mod))
            if match is None:
                continue
            result = _unnamed(labels)
            if card == "OneToOne" and mod is not None and mod.matching is not None:
                result = dict(_signature(labels, mod))
            for k in mod.group_labels if card == "ManyToOne" else []:
                if k in match[0]:
                    result[k] = match[0][k]
            out.append((result, _arith(op, v, match[1])))
        return _unique(out, op)


def _unnamed(labels: Labels) -> Labels:
    return {k: v for k, v in labels.items() if k != "__name__"}


def record(series: list[Series], rules: list[dict[str, str]], start: float, end: float, step: float) -> list[Series]:
    """`series` and what the recording `rules` write when evaluated every `step` seconds in [start, end], in order;
    a recorded series an evaluation no longer yields gets a staleness marker, as Prometheus writes one."""
    db = list(series)
    recorded: dict[tuple[str, tuple[tuple[str, str], ...]], Series] = {}
    t = start
    while t <= end:
        for rule in rules:
            yielded = set()
            for labels, value in Evaluator(db).query(rule["expr"], t):
                key = (rule["record"], tuple(sorted(_unnamed(labels).items())))
                if key not in recorded:
                    recorded[key] = Series({**_unnamed(labels), "__name__": rule["record"]})
                    db.append(recorded[key])
                recorded[key].samples.append((t, value))
                recorded[key].stale_at = None
                yielded.add(key)
            for key, s in recorded.items():
                if key[0] == rule["record"] and key not in yielded and s.stale_at is None:
                    s.stale_at = t
        t += step
    return db
