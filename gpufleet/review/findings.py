"""Policy findings: one finding, and the collection every command and renderer uses.

`Findings` keeps its findings in the one order every renderer shows them in (mandatory first, then pack, rule
and resource) and is the one place that counts what is mandatory.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, overload

Enforcement = Literal["mandatory", "advisory"]


@dataclass(frozen=True)
class Finding:
    pack: str  # e.g. "tenancy"
    rule: str  # rule id, e.g. "tenant-quota-requests-only"
    enforcement: Enforcement
    message: str
    resource: str | None = None  # logical key of the resource; None for stack-level findings
    remediation: str = ""  # what to change in the stack file

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _order(f: Finding) -> tuple[int, str, str, str]:
    return (0 if f.enforcement == "mandatory" else 1, f.pack, f.rule, f.resource or "")


class Findings(Sequence[Finding]):
    """Findings in display order: mandatory first, then by pack, rule and resource."""

    __slots__ = ("_items",)

    def __init__(self, findings: Iterable[Finding] = ()) -> None:
        self._items = tuple(sorted(findings, key=_order))

    @overload
    def __getitem__(self, index: int) -> Finding: ...

    @overload
    def __getitem__(self, index: slice) -> Findings: ...

    def __getitem__(self, index: int | slice) -> Finding | Findings:
        if isinstance(index, slice):
            return Findings(self._items[index])
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Finding]:
        return iter(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Findings | list | tuple):
            return list(self._items) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Findings({list(self._items)!r})"

    @property
    def mandatory(self) -> Findings:
        """The findings that fail a check (exit 1)."""
        return Findings(f for f in self._items if f.enforcement == "mandatory")

    @property
    def advisory(self) -> Findings:
        return Findings(f for f in self._items if f.enforcement != "mandatory")

    @property
    def passed(self) -> bool:
        return not self.mandatory
