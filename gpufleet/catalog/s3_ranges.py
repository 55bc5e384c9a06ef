"""Regenerate the S3 address ranges of the catalog from AWS's published ip-ranges.json (`gpufleet catalog s3-ranges`).

Tenant `allow-s3` NetworkPolicies open 443 to the S3 ranges of the site's region (`model.tenant_s3`, through
`model.catalog.s3_ranges`). AWS publishes its ranges at https://ip-ranges.amazonaws.com/ip-ranges.json, in the
format of the VPC user guide's "AWS IP address ranges" (docs.aws.amazon.com/vpc/latest/userguide/aws-ip-ranges.html):
`syncToken`, `createDate` (the publication time) and `prefixes`, each with `ip_prefix`, `region` and `service`.
The ranges change several times a month, so the shipped file carries its `createDate`.

A refresh never leaves the catalog worse. A document is refused whole when it is older than the catalog's copy,
dated later than tomorrow, lacks a region the catalog has, names one it does not know, or holds an S3 range wider
than any AWS publishes. Regions are not merged: a
document without a region is a filtered or cut copy, and mixing two publications under one date hides that.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import os
import re
import urllib.request
from pathlib import Path
from typing import Any

from model.catalog import S3_RANGES_FILE
from model.inputs import JsonLimitError, load_json, read_json

URL = "https://ip-ranges.amazonaws.com/ip-ranges.json"
SOURCE = (
    "https://ip-ranges.amazonaws.com/ip-ranges.json (AWS General Reference, aws-ip-ranges), IPv4 prefixes with "
    "service S3 by region, as published on createDate; traffic to them from a VPC with an S3 gateway endpoint "
    "takes the endpoint's route"
)


class IpRangesError(ValueError):
    """The document is not AWS's ip-ranges.json (or holds no S3 range)."""


MAX_BYTES = 32 * 1024 * 1024  # the published file is a few MB
# The IPv4 special-purpose blocks (IANA IPv4 Special-Purpose Address Registry, RFC 6890 and its updates) and
# multicast and reserved space (RFC 5771, RFC 1112): no public range overlaps one. AWS publishes public ranges only
# (aws-ip-syntax.html: "ip_prefix: The public IPv4 address range").
NOT_PUBLIC = tuple(
    ipaddress.IPv4Network(n)
    for n in (
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
        "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
        "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
    )
)  # fmt: skip
# The widest S3 prefix in ip-ranges.json is a /15 (52.216.0.0/15, us-east-1, in the copy of createDate
# 2026-08-22-15-17-05 the catalog ships). A wider one is a forged or broken document, whose range the tenants'
# `allow-s3` policies would open; should AWS ever publish one, the refresh says so and this bound is raised by hand.
WIDEST_S3_PREFIX = 15
# ASCII digits only: `\d` also matches other scripts' digits, which strptime and the catalog's readers refuse.
_CREATE_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}-[0-9]{2}-[0-9]{2}-[0-9]{2}")  # aws-ip-syntax.html: createDate
_REGION = re.compile(r"[a-z]+(-[a-z]+)+-[0-9]{1,2}|GLOBAL")  # aws-ip-syntax.html: region, "an AWS Region or GLOBAL"
# A date more than a day ahead of this clock is no publication: accepted, it would outdate every real one (no_worse).
FUTURE_SLACK = dt.timedelta(days=1)


def _create_date_error(value: Any, now: dt.datetime | None = None) -> str | None:
    """Why `value` is not a createDate, "YYYY-MM-DD-hh-mm-ss" (aws-ip-syntax.html, UTC), no later than now + 1 day;
    None when it is one. model.catalog.s3_ranges_age_days parses it with the same format."""
    if not isinstance(value, str) or not _CREATE_DATE.fullmatch(value):
        return "not a publication date (YYYY-MM-DD-hh-mm-ss)"
    try:
        published = dt.datetime.strptime(value, "%Y-%m-%d-%H-%M-%S").replace(tzinfo=dt.UTC)
    except ValueError:
        return f"{value} is not a date (YYYY-MM-DD-hh-mm-ss)"
    if published > (now or dt.datetime.now(dt.UTC)) + FUTURE_SLACK:
        return f"{value} is later than now; not a publication date"
    return None


def _known_regions() -> frozenset[str]:
    """The regions an S3 prefix may name: the catalog's AWS regions (aws_regions.json) and those the shipped S3
    ranges already hold (AWS's other partitions, and regions AWS published before botocore listed them)."""
    from model import catalog

    held = _current(catalog.S3_RANGES_FILE)
    regions = held.get("regions") if isinstance(held, dict) else None
    return frozenset(catalog.aws_regions()) | frozenset(regions if isinstance(regions, dict) else ())


def s3_prefixes(doc: dict[str, Any]) -> dict[str, list[str]]:
    """S3's IPv4 prefixes by region, each region's list in address order, regions by name.

    Each S3 prefix must be public and lie inside a prefix the same document lists under AMAZON: AWS documents
    that every subset is also in the AMAZON subset (aws-ip-syntax.html, `service`). So a range that is not AWS's
    (0.0.0.0/0, a private block, a typo) is refused, never opened by a tenant's `allow-s3` policy."""
    if not isinstance(doc, dict) or not {"syncToken", "createDate", "prefixes"} <= doc.keys():
        raise IpRangesError("not AWS's ip-ranges.json: it needs syncToken, createDate and prefixes")
    if not isinstance(doc["syncToken"], str) or not doc["syncToken"].isdigit() or len(doc["syncToken"]) > 12:
        raise IpRangesError("syncToken: not a publication time (Unix seconds as a string)")
    if (why := _create_date_error(doc["createDate"])) is not None:
        raise IpRangesError(f"createDate: {why}")
    if not isinstance(doc["prefixes"], list):
        raise IpRangesError("prefixes: must be a list")
    by_region: dict[str, set[ipaddress.IPv4Network]] = {}
    amazon: set[ipaddress.IPv4Network] = set()
    known = _known_regions()
    for k, p in enumerate(doc["prefixes"]):
        try:
            if p["service"] not in ("S3", "AMAZON"):
                continue
            net = ipaddress.IPv4Network(p["ip_prefix"])
            region = p["region"]
        except (KeyError, TypeError, ValueError) as e:
            raise IpRangesError(f"prefixes[{k}]: not an ip-ranges entry ({e})") from None
        if not isinstance(region, str) or not _REGION.fullmatch(region):
            raise IpRangesError(f"prefixes[{k}].region: {str(region)[:40]!r} is not an AWS region or GLOBAL")
        if p["service"] == "S3" and region not in known:
            # Kept, a made-up region would be one every later document must carry (no_worse) and none does.
            raise IpRangesError(
                f"prefixes[{k}].region: {region} is neither in the catalog's aws_regions.json nor in its S3 ranges; "
                "if AWS has opened it, refresh aws_regions.json (`gpufleet catalog refresh --prices`) first"
            )
        if any(net.overlaps(block) for block in NOT_PUBLIC):
            raise IpRangesError(f"prefixes[{k}]: {net} is not a public IPv4 range (RFC 6890 special-purpose space)")
        if p["service"] == "S3" and net.prefixlen < WIDEST_S3_PREFIX:
            raise IpRangesError(
                f"prefixes[{k}].ip_prefix: {net} is wider than any S3 range AWS publishes (/{WIDEST_S3_PREFIX} at "
                "most); this is not AWS's file"
            )
        (amazon.add(net) if p["service"] == "AMAZON" else by_region.setdefault(region, set()).add(net))
    if not by_region:
        raise IpRangesError("the document holds no S3 prefix")
    for region, nets in sorted(by_region.items()):
        for net in sorted(nets):
            if not any(net.supernet(new_prefix=n) in amazon for n in range(net.prefixlen + 1)):
                raise IpRangesError(
                    f"S3 prefix {net} ({region}) is in no AMAZON prefix of the document; AWS lists every range "
                    "under AMAZON too, so this is not AWS's file"
                )
    return {r: [str(n) for n in sorted(nets)] for r, nets in sorted(by_region.items())}


def no_worse(current: Any, new: dict[str, Any]) -> None:
    """Refuse `new` S3 ranges that would leave the `current` catalog worse: older, or without one of its regions.
    A current file that is not a catalog (missing, damaged) has nothing to keep."""
    if not isinstance(current, dict) or not isinstance(current.get("regions"), dict):
        return
    had = current.get("createDate")
    if _create_date_error(had) is None and new["createDate"] < had:
        raise IpRangesError(
            f"createDate: {new['createDate']} is older than the catalog's copy ({had}); download the current file"
        )
    if dropped := sorted(set(current["regions"]) - set(new["regions"])):
        raise IpRangesError(
            f"prefixes: no S3 prefix for {len(dropped)} region(s) the catalog has ({', '.join(dropped[:10])}); a "
            "filtered or cut copy would drop their tenants' S3 egress: give the whole ip-ranges.json"
        )


def _current(target: Path) -> Any:
    try:
        return json.loads(target.read_text())
    except (FileNotFoundError, UnicodeDecodeError, ValueError):  # none yet, or damaged: nothing to keep
        return None


def refresh_s3_ranges(doc: dict[str, Any], path: Path | None = None) -> dict[str, Any]:
    """Rewrite the catalog's S3 ranges from an ip-ranges.json document; returns what was written. The whole
    document is judged first, against itself and against the catalog (`no_worse`), and the file is replaced in
    one step: a refused document leaves it as it was."""
    regions = s3_prefixes(doc)  # first: it refuses a document that is not an object (`[]`) before `doc[...]`
    out = {"source": SOURCE, "syncToken": doc["syncToken"], "createDate": doc["createDate"], "regions": regions}
    target = path or S3_RANGES_FILE
    no_worse(_current(target), out)
    text = json.dumps(out, indent=1) + "\n"
    partial = target.with_name(f".{target.name}.new")
    partial.write_text(text)
    os.replace(partial, target)
    return out


def read_ip_ranges(path: Path) -> Any:
    """A local copy of ip-ranges.json, through the bounded reader (SpecError naming the file)."""
    return read_json(path, "not found", MAX_BYTES)


def download(url: str = URL, timeout: float = 30.0) -> Any:
    """AWS's current ip-ranges.json, bounded like a local copy."""
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        data = answer.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise IpRangesError(f"larger than {MAX_BYTES // (1024 * 1024)} MB; not AWS's ip-ranges.json")
    try:
        return load_json(data.decode("utf-8"))
    except (UnicodeDecodeError, JsonLimitError) as e:
        raise IpRangesError(f"not JSON: {e}") from None
