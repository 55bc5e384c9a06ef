"""Prices as the cost envelope carries them: a value per unit with its date and source."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from components.model.pricing import HOURS_PER_MONTH

HOURS = HOURS_PER_MONTH
LEVELS: tuple[str, ...] = ("min", "desired", "max")


@dataclass(frozen=True)
class PriceRef:
    """One price the envelope uses: value per unit, with its date and source."""

    usd: float
    unit: str  # "node-hour", "server-hour", "GB-month"
    date: str
    source: str
    verified: bool = True


def rounded(v: float | None) -> float | None:
    """A figure as JSON carries it: 4 decimals."""
    return None if v is None else round(v, 4)


def price_dict(p: PriceRef | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {"usd": p.usd, "unit": p.unit, "date": p.date, "source": p.source, "verified": p.verified}
