"""The time the estate program judges a burst window at, besides the state's `as_of`.

A real `up` runs now, by the machine's clock. The offline engine runs the same program at a moment it chooses
(`frozen`), so a synthesis is deterministic and tests give the time.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator

_frozen: list[dt.datetime] = []  # innermost `frozen` moment last


def now() -> dt.datetime:
    """The frozen moment inside `frozen`, else the machine's clock (UTC)."""
    return _frozen[-1] if _frozen else dt.datetime.now(dt.UTC)


@contextlib.contextmanager
def frozen(at: dt.datetime) -> Iterator[None]:
    """Inside the block, `now()` is `at`."""
    _frozen.append(at)
    try:
        yield
    finally:
        _frozen.pop()
