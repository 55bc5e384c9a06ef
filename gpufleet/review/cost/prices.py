"""Prices as the cost envelope carries them: a value per unit with its date and source."""

from __future__ import annotations

from dataclasses import dataclass, field
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
    """$/h at min, desired and max size; None where a price is missing. `month`: $ a month at each level when it
    is not 730 h of the hourly figure (a capacity block billed for fewer hours, or a sum holding one)."""

    min: float | None
    desired: float | None
    max: float | None
    month: tuple[float | None, float | None, float | None] | None = field(default=None, kw_only=True)

    def at(self, level: str) -> float | None:
        return float(getattr(self, level)) if getattr(self, level) is not None else None

    def monthly(self, level: str) -> float | None:
        if self.month is not None:
            return self.month[LEVELS.index(level)]
        v = self.at(level)
        return None if v is None else v * HOURS

    def billed_for(self, hours: float) -> Figures:
        """The same $/h, billed `hours` a month."""
        if hours == HOURS:
            return self
        months = tuple(None if (v := self.at(lv)) is None else v * hours for lv in LEVELS)
        return Figures(self.min, self.desired, self.max, month=(months[0], months[1], months[2]))

    def scaled(self, share: float) -> Figures:
        def times(v: float | None) -> float | None:
            return None if v is None else v * share

        month = None if self.month is None else (times(self.month[0]), times(self.month[1]), times(self.month[2]))
        return Figures(times(self.min), times(self.desired), times(self.max), month=month)

    def to_dict(self) -> dict[str, Any]:
        return {
            "hourly": {lv: rounded(self.at(lv)) for lv in LEVELS},
            "monthly": {lv: rounded(self.monthly(lv)) for lv in LEVELS},
        }
