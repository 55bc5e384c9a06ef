"""The storage tiers a site of a kind may hold."""

from __future__ import annotations

from collections.abc import Iterator

from model.spec.base import Problem


def storage_kinds(path: str, kind: str, tiers: list[str], allowed: frozenset[str]) -> Iterator[Problem]:
    for j, tier_kind in enumerate(tiers):
        if tier_kind not in allowed:
            yield Problem(
                f"{path}.storage[{j}].kind",
                f"a {kind} site cannot have a {tier_kind} tier; allowed: {', '.join(sorted(allowed))}",
            )
