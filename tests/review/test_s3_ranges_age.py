"""preview and check note a copy of AWS's S3 ranges older than S3_RANGES_STALE_DAYS when tenants' S3 egress is
built from it, naming the command that refreshes it."""

from __future__ import annotations

import datetime as dt

from gpufleet.review.review import build, stale_s3_ranges
from model import catalog
from model.load import parse_estate
from model.spec import EstateSpec
from tests.conftest import ROOT, example_config

PUBLISHED = dt.datetime.strptime(catalog.s3_ranges_dated(), "%Y-%m-%d-%H-%M-%S").replace(tzinfo=dt.UTC)


def _spec(stack: str) -> EstateSpec:
    return parse_estate(example_config(stack)["gpufleet:estate"], stack)


def test_a_copy_older_than_the_bound_is_noted_with_the_refresh_command() -> None:
    spec = _spec("aws-train")
    assert stale_s3_ranges(spec, PUBLISHED + dt.timedelta(days=catalog.S3_RANGES_STALE_DAYS, hours=23)) is None
    note = stale_s3_ranges(spec, PUBLISHED + dt.timedelta(days=catalog.S3_RANGES_STALE_DAYS + 1))
    assert note is not None and f"published {catalog.S3_RANGES_STALE_DAYS + 1} days ago" in note
    assert "`gpufleet catalog s3-ranges`" in note and catalog.s3_ranges_dated() in note


def test_an_estate_whose_tenants_open_no_s3_range_gets_no_note() -> None:
    assert stale_s3_ranges(_spec("onprem"), PUBLISHED + dt.timedelta(days=400)) is None


def test_the_review_that_preview_and_check_show_carries_the_note() -> None:
    # Before: nothing said the copy was old; the shipped 2026-08-22 copy went into every `up`.
    review = build(ROOT, "aws-train", now=PUBLISHED + dt.timedelta(days=90))
    assert review.first_up is not None
    assert any(n.startswith("s3-ranges: ") and "90 days ago" in n for n in review.first_up.notes)
