"""AWS's published S3 IPv4 ranges per region, the copy tenants' S3 egress is built from (ip-ranges.json, dated by its
createDate). `gpufleet catalog s3-ranges` writes the file; this module is its only reader."""

from __future__ import annotations

import datetime as dt
import json
from functools import cache
from pathlib import Path
from typing import Any

S3_RANGES_FILE = Path(__file__).parent / "aws_s3_ranges.json"


@cache
def _s3_ranges_doc() -> dict[str, Any]:
    return json.loads(S3_RANGES_FILE.read_text())


def s3_ranges(region: str) -> list[str]:
    """AWS's published S3 IPv4 ranges in `region` (empty for a region the file does not hold)."""
    return list(_s3_ranges_doc()["regions"].get(region, []))


def s3_ranges_dated() -> str:
    """When the S3 ranges were published (ip-ranges.json createDate)."""
    return str(_s3_ranges_doc()["createDate"])


# AWS changes its ranges several times a month and asks users to check ip-ranges.json regularly
# (docs.aws.amazon.com/vpc/latest/userguide/subscribe-notifications.html). A copy older than a month likely lacks
# a range S3 now answers from, so preview and check say so: the deploy workflow refreshes it before every `up`.
S3_RANGES_STALE_DAYS = 30


def s3_ranges_age_days(now: dt.datetime) -> int:
    """Whole days from the S3 ranges' publication (createDate, UTC) to `now`."""
    published = dt.datetime.strptime(s3_ranges_dated(), "%Y-%m-%d-%H-%M-%S").replace(tzinfo=dt.UTC)
    return (now - published).days
