"""Prices as the cost envelope carries them: a value per unit with its date and source."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from model.pricing import HOURS_PER_MONTH

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


@dataclass(frozen=True)
class Figures:
    """$/h at min, desired and max size; None where a price is missing."""

    min: float | None
    desired: float | None
    max: float | None

    def at(self, level: str) -> float | None:
        return float(getattr(self, level)) if getattr(self, level) is not None else None

    def monthly(self, level: str) -> float | None:
        v = self.at(level)
        return None if v is None else v * HOURS

    def scaled(self, share: float) -> Figures:
        return Figures(*(None if v is None else v * share for v in (self.min, self.desired, self.max)))

    def to_dict(self) -> dict[str, Any]:
        return {
            "hourly": {lv: rounded(self.at(lv)) for lv in LEVELS},
            "monthly": {lv: rounded(self.monthly(lv)) for lv in LEVELS},
        }
