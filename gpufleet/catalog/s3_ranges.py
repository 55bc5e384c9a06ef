"""Regenerate the S3 address ranges of the catalog from AWS's published ip-ranges.json (`gpufleet catalog s3-ranges`).

Tenant `allow-s3` NetworkPolicies open 443 to the S3 ranges of the site's region
(`model.tenant_s3`, through `model.catalog.s3_ranges`). AWS publishes its address ranges at
https://ip-ranges.amazonaws.com/ip-ranges.json; the format is documented in the VPC user guide, "AWS IP address
ranges" (https://docs.aws.amazon.com/vpc/latest/userguide/aws-ip-ranges.html): top-level `syncToken` and
`createDate` (`YY-MM-DD-hh-mm-ss`, the publication time), and `prefixes`, each with `ip_prefix`, `region`,
`service` and `network_border_group`. S3's entries have `service` "S3". AWS changes the ranges several times a
month, so the shipped file carries its `createDate`, and this command rewrites it from a newer copy.
"""

from __future__ import annotations

import ipaddress
import json
import urllib.request
from pathlib import Path
from typing import Any

from model.catalog import S3_RANGES_FILE

URL = "https://ip-ranges.amazonaws.com/ip-ranges.json"
SOURCE = (
    "https://ip-ranges.amazonaws.com/ip-ranges.json (AWS General Reference, aws-ip-ranges), IPv4 prefixes with "
    "service S3 by region, as published on createDate; traffic to them from a VPC with an S3 gateway endpoint "
    "takes the endpoint's route"
)


class IpRangesError(ValueError):
    """The document is not AWS's ip-ranges.json (or holds no S3 range)."""


def s3_prefixes(doc: dict[str, Any]) -> dict[str, list[str]]:
    """S3's IPv4 prefixes by region, each region's list in address order, regions by name."""
    if not isinstance(doc, dict) or not {"syncToken", "createDate", "prefixes"} <= doc.keys():
        raise IpRangesError("not AWS's ip-ranges.json: it needs syncToken, createDate and prefixes")
    by_region: dict[str, set[ipaddress.IPv4Network]] = {}
    for k, p in enumerate(doc["prefixes"]):
        try:
            if p["service"] != "S3":
                continue
            net = ipaddress.IPv4Network(p["ip_prefix"])
            region = str(p["region"])
        except (KeyError, TypeError, ValueError) as e:
            raise IpRangesError(f"prefixes[{k}]: not an ip-ranges entry ({e})") from None
        by_region.setdefault(region, set()).add(net)
    if not by_region:
        raise IpRangesError("the document holds no S3 prefix")
    return {r: [str(n) for n in sorted(nets)] for r, nets in sorted(by_region.items())}


def refresh_s3_ranges(doc: dict[str, Any], path: Path | None = None) -> dict[str, Any]:
    """Rewrite the catalog's S3 ranges from an ip-ranges.json document; returns what was written."""
    out = {
        "source": SOURCE,
        "syncToken": str(doc.get("syncToken", "")),
        "createDate": str(doc.get("createDate", "")),
        "regions": s3_prefixes(doc),
    }
    (path or S3_RANGES_FILE).write_text(json.dumps(out, indent=1) + "\n")
    return out


def download(url: str = URL, timeout: float = 30.0) -> dict[str, Any]:
    """AWS's current ip-ranges.json."""
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        doc: dict[str, Any] = json.load(answer)
    return doc
