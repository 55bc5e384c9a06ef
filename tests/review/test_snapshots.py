"""The pull-request comments of a review match reviewed snapshots (preview and diff of the small estate).

Snapshots live in tests/review/snapshots/; regenerate them with `UPDATE_SNAPSHOTS=1 pytest tests/review`.
"""

from __future__ import annotations

import os
from pathlib import Path

from gpufleet.render.diff import diff_markdown
from gpufleet.render.preview import preview_markdown
from model.load import parse_estate
from tests.review.estates import BUDGET, TAGS, changed, review_of, small_diff

SNAPSHOTS = Path(__file__).parent / "snapshots"


def check_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("UPDATE_SNAPSHOTS") == "1" or not path.exists():
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"{name} changed; review it and run with UPDATE_SNAPSHOTS=1 to accept"


def test_diff_comment_matches_the_reviewed_snapshot() -> None:
    check_snapshot("diff-small.md", diff_markdown(small_diff()))


def test_preview_comment_matches_the_reviewed_snapshot() -> None:
    md = preview_markdown(review_of(parse_estate(changed(), "head"), [BUDGET, TAGS]))
    check_snapshot("preview-small.md", md)
