"""Stage `placement`: a pass-through in this branch; engineer J2's stage replaces this module at merge."""

from __future__ import annotations

from gpufleet.review.reality.journeys.core import Stage, Walk


def check(walk: Walk) -> Stage:
    return Stage("placement", True, "not walked in this branch")
