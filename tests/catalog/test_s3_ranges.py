"""`gpufleet catalog s3-ranges`: the S3 ranges tenant NetworkPolicies open come from AWS's ip-ranges.json.

The format is AWS's (https://docs.aws.amazon.com/vpc/latest/userguide/aws-ip-ranges.html, "Syntax"): `syncToken`,
`createDate`, `prefixes[]` with `ip_prefix`, `region`, `service`, `network_border_group`, and `ipv6_prefixes[]`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpufleet.catalog.s3_ranges import IpRangesError, refresh_s3_ranges, s3_prefixes
from gpufleet.cli.app import app
from model.catalog import S3_RANGES_FILE

SHIPPED = json.loads(S3_RANGES_FILE.read_text())


def ip_ranges(shipped: dict[str, Any]) -> dict[str, Any]:
    """An ip-ranges.json document holding the shipped S3 ranges, shuffled among other services' entries (in the
    real file S3 prefixes are interleaved with AMAZON, EC2, CLOUDFRONT... and IPv6 prefixes)."""
    prefixes: list[dict[str, str]] = []
    for region, nets in reversed(list(shipped["regions"].items())):
        for net in reversed(nets):
            prefixes.append({"ip_prefix": net, "region": region, "service": "AMAZON", "network_border_group": region})
            prefixes.append({"ip_prefix": net, "region": region, "service": "S3", "network_border_group": region})
        prefixes.append({"ip_prefix": "3.0.0.0/15", "region": region, "service": "EC2", "network_border_group": region})
    return {
        "syncToken": shipped["syncToken"],
        "createDate": shipped["createDate"],
        "prefixes": prefixes,
        "ipv6_prefixes": [
            {
                "ipv6_prefix": "2600:1f68::/30",
                "region": "us-east-1",
                "service": "S3",
                "network_border_group": "us-east-1",
            }
        ],
    }


def test_the_shipped_file_is_exactly_what_the_refresh_writes(tmp_path: Path) -> None:
    out = tmp_path / "aws_s3_ranges.json"
    refresh_s3_ranges(ip_ranges(SHIPPED), out)
    assert out.read_text() == S3_RANGES_FILE.read_text()


def test_only_s3_ipv4_prefixes_in_address_order() -> None:
    doc = ip_ranges({"syncToken": "1", "createDate": "2026-11-30-00-00-00", "regions": {"us-west-2": []}})
    doc["prefixes"] += [
        {"ip_prefix": "52.92.128.0/17", "region": "us-west-2", "service": "S3", "network_border_group": "us-west-2"},
        {"ip_prefix": "3.5.76.0/22", "region": "us-west-2", "service": "S3", "network_border_group": "us-west-2"},
        {"ip_prefix": "3.5.76.0/22", "region": "us-west-2", "service": "S3", "network_border_group": "us-west-2"},
        {"ip_prefix": "35.80.0.0/12", "region": "us-west-2", "service": "EC2", "network_border_group": "us-west-2"},
        {"ip_prefix": "52.92.0.0/16", "region": "us-west-2", "service": "AMAZON", "network_border_group": "us-west-2"},
        {"ip_prefix": "3.5.76.0/22", "region": "us-west-2", "service": "AMAZON", "network_border_group": "us-west-2"},
    ]
    assert s3_prefixes(doc) == {"us-west-2": ["3.5.76.0/22", "52.92.128.0/17"]}


DATE = "2026-11-30-00-00-00"


def s3_doc(net: str, amazon: str | None = None, region: str = "us-east-1") -> dict[str, Any]:
    """A document with one S3 prefix, and an AMAZON prefix unless `amazon` is None."""
    prefixes = [{"ip_prefix": net, "region": region, "service": "S3", "network_border_group": region}]
    if amazon is not None:
        prefixes.append({"ip_prefix": amazon, "region": region, "service": "AMAZON", "network_border_group": region})
    return {"syncToken": "1", "createDate": DATE, "prefixes": prefixes}


@pytest.mark.parametrize(
    ("doc", "says"),
    [
        ({"prefixes": []}, "not AWS's ip-ranges.json"),
        (
            {"syncToken": "1", "createDate": DATE, "prefixes": [{"ip_prefix": "3.5.0.0/33", "service": "S3"}]},
            r"prefixes\[0\]",
        ),
        ({"syncToken": "1", "createDate": DATE, "prefixes": []}, "no S3 prefix"),
        ({"syncToken": "1", "createDate": "x", "prefixes": []}, "createDate: not a publication date"),
        ({"syncToken": 1, "createDate": DATE, "prefixes": []}, "syncToken: not a publication time"),
        (s3_doc("0.0.0.0/0", amazon="0.0.0.0/0"), "0.0.0.0/0 is not a public IPv4 range"),
        (s3_doc("10.0.0.0/16", amazon="10.0.0.0/8"), "10.0.0.0/16 is not a public IPv4 range"),
        (s3_doc("128.0.0.0/1", amazon="128.0.0.0/1"), "128.0.0.0/1 is not a public IPv4 range"),
        (s3_doc("8.8.8.0/24"), r"8\.8\.8\.0/24 \(us-east-1\) is in no AMAZON prefix"),
        (s3_doc("52.216.0.0/15", region="us-east-1; rm"), "region: .* is not an AWS region"),
    ],
)
def test_a_document_that_is_not_ip_ranges_is_refused(doc: dict[str, Any], says: str) -> None:
    with pytest.raises(IpRangesError, match=says):
        s3_prefixes(doc)


def test_the_command_reads_a_local_copy_and_refuses_a_bad_one_without_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "aws_s3_ranges.json"
    monkeypatch.setattr("gpufleet.catalog.s3_ranges.S3_RANGES_FILE", target)
    good = tmp_path / "ip-ranges.json"
    good.write_text(json.dumps(ip_ranges(SHIPPED)))
    result = CliRunner().invoke(app, ["catalog", "s3-ranges", "--from", str(good)])
    assert result.exit_code == 0, result.output
    assert f"{len(SHIPPED['regions'])} regions" in result.output and SHIPPED["createDate"] in result.output
    assert json.loads(target.read_text())["regions"] == SHIPPED["regions"]
    target.unlink()
    bad = tmp_path / "bad.json"
    bad.write_text('{"prefixes": []}')
    result = CliRunner().invoke(app, ["catalog", "s3-ranges", "--from", str(bad)])
    assert result.exit_code == 2 and "bad.json" in result.output and "Traceback" not in result.output
    assert not target.exists()


BAD_FILES: dict[str, bytes] = {
    "a FIFO": b"",
    "a 4,301-digit number": json.dumps(s3_doc("52.216.0.0/15", "52.216.0.0/15"))[:-1].encode()
    + b', "x": '
    + b"1" * 4301
    + b"}",
    "NaN": json.dumps({**s3_doc("52.216.0.0/15", "52.216.0.0/15"), "x": float("nan")}).encode(),
    "deep nesting": b"[" * 100_000,
    "latin-1": b'{"syncToken": "\xe9"}',
    "0.0.0.0/0 as S3": json.dumps(s3_doc("0.0.0.0/0", amazon="0.0.0.0/0")).encode(),
    "a prefix outside AMAZON": json.dumps(s3_doc("8.8.8.0/24")).encode(),
    "a createDate that is a number": json.dumps({**s3_doc("52.216.0.0/15", "52.216.0.0/15"), "createDate": 1}).encode(),
}


@pytest.mark.parametrize("what", sorted(BAD_FILES))
def test_a_bad_local_copy_is_exit_2_naming_it_and_the_catalog_is_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    target = tmp_path / "aws_s3_ranges.json"
    target.write_text("as shipped")
    monkeypatch.setattr("gpufleet.catalog.s3_ranges.S3_RANGES_FILE", target)
    source = tmp_path / "ip-ranges.json"
    if what == "a FIFO":
        os.mkfifo(source)
    else:
        source.write_bytes(BAD_FILES[what])
    result = CliRunner().invoke(app, ["catalog", "s3-ranges", "--from", str(source)])
    assert result.exit_code == 2, result.output
    assert str(source) in result.output and "internal error" not in result.output
    assert target.read_text() == "as shipped" and sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [target.name, source.name]
    )


def test_a_download_that_fails_is_an_environment_problem_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    """No network is the user's environment, not a bug and not a verdict: exit 2, naming the URL, nothing written."""
    from gpufleet.catalog import s3_ranges

    def offline() -> Any:
        raise OSError("Network is unreachable")

    monkeypatch.setattr(s3_ranges, "download", offline)
    before = S3_RANGES_FILE.read_bytes()
    result = CliRunner().invoke(app, ["catalog", "s3-ranges"])
    assert result.exit_code == 2, result.output
    assert "cannot read ip-ranges.json: Network is unreachable" in result.output
    assert S3_RANGES_FILE.read_bytes() == before


def _older(doc: dict[str, Any]) -> str:
    return json.dumps({**doc, "createDate": "2026-08-01-00-00-00"})


def _without_a_region(doc: dict[str, Any]) -> str:
    return json.dumps({**doc, "prefixes": [p for p in doc["prefixes"] if p["region"] != "eu-west-1"]})


def _wide(width: int) -> Callable[[dict[str, Any]], str]:
    def wide(doc: dict[str, Any]) -> str:
        net = {"ip_prefix": f"3.0.0.0/{width}", "region": "us-east-1", "network_border_group": "us-east-1"}
        return json.dumps(
            {**doc, "prefixes": [*doc["prefixes"], {**net, "service": "AMAZON"}, {**net, "service": "S3"}]}
        )

    return wide


def _duplicate_key(doc: dict[str, Any]) -> str:
    # A reviewer reads the first createDate; json.loads keeps the last.
    return json.dumps(doc)[:-1] + ', "createDate": "2027-01-01-00-00-00"}'


WORSE: dict[str, tuple[Callable[[dict[str, Any]], str], str]] = {
    "older than the catalog": (_older, "createDate: 2026-08-01-00-00-00 is older than the catalog's copy"),
    "a region dropped": (_without_a_region, r"prefixes: no S3 prefix for 1 region\(s\) the catalog has \(eu-west-1\)"),
    "an S3 /8": (_wide(8), r"prefixes\[\d+\]\.ip_prefix: 3\.0\.0\.0/8 is wider than any S3 range AWS publishes"),
    "an S3 /14": (_wide(14), r"3\.0\.0\.0/14 is wider than any S3 range AWS publishes \(/15 at most\)"),
    "a key twice": (_duplicate_key, "the key 'createDate' appears twice in one object"),
}


@pytest.mark.parametrize("what", sorted(WORSE))
def test_a_document_that_would_leave_the_catalog_worse_is_refused_and_nothing_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    import re

    target = tmp_path / "aws_s3_ranges.json"
    target.write_bytes(S3_RANGES_FILE.read_bytes())
    monkeypatch.setattr("gpufleet.catalog.s3_ranges.S3_RANGES_FILE", target)
    make, says = WORSE[what]
    source = tmp_path / "ip-ranges.json"
    source.write_text(make(ip_ranges(SHIPPED)))
    result = CliRunner().invoke(app, ["catalog", "s3-ranges", "--from", str(source)])
    assert result.exit_code == 2, result.output
    assert re.search(says, result.output) and str(source) in result.output, result.output
    assert target.read_bytes() == S3_RANGES_FILE.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([target.name, source.name])


def test_a_newer_document_with_every_region_replaces_the_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "aws_s3_ranges.json"
    target.write_bytes(S3_RANGES_FILE.read_bytes())
    monkeypatch.setattr("gpufleet.catalog.s3_ranges.S3_RANGES_FILE", target)
    source = tmp_path / "ip-ranges.json"
    newer = {**ip_ranges(SHIPPED), "createDate": "2026-11-30-00-00-00", "syncToken": "1796000000"}
    source.write_text(json.dumps(newer))
    result = CliRunner().invoke(app, ["catalog", "s3-ranges", "--from", str(source)])
    assert result.exit_code == 0, result.output
    assert json.loads(target.read_text())["createDate"] == "2026-11-30-00-00-00"


# Issue 29. createDate is "YYYY-MM-DD-hh-mm-ss" (https://docs.aws.amazon.com/vpc/latest/userguide/aws-ip-syntax.html):
# a real date in ASCII digits, no later than now; a region is one the catalog knows (model/catalog/aws_regions.json).
@pytest.mark.parametrize(
    ("date", "says"),
    [
        ("9999-99-99-99-99-99", "9999-99-99-99-99-99 is not a date"),
        ("2026-02-30-00-00-00", "is not a date"),
        ("٢٠٢٦-١١-٣٠-00-00-00", "not a publication date"),  # Arabic-Indic digits match `\d`
        ("9000-01-01-00-00-00", "later than now"),
    ],
)
def test_a_create_date_that_is_no_date_or_in_the_future_is_refused(date: str, says: str) -> None:
    with pytest.raises(IpRangesError, match=f"createDate: .*{says}"):
        s3_prefixes({**s3_doc("52.216.0.0/15", "52.216.0.0/15"), "createDate": date})


@pytest.mark.parametrize("region", ["zz-made-up-9", "us-east-١"])
def test_an_s3_region_the_catalog_does_not_know_is_refused(region: str) -> None:
    with pytest.raises(IpRangesError, match="region: "):
        s3_prefixes(s3_doc("52.216.0.0/15", "52.216.0.0/15", region=region))


def test_a_catalog_dated_in_the_future_does_not_block_every_real_refresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "aws_s3_ranges.json"
    target.write_text(json.dumps({**SHIPPED, "createDate": "9999-99-99-99-99-99"}))
    monkeypatch.setattr("gpufleet.catalog.s3_ranges.S3_RANGES_FILE", target)
    source = tmp_path / "ip-ranges.json"
    source.write_text(json.dumps(ip_ranges(SHIPPED)))
    result = CliRunner().invoke(app, ["catalog", "s3-ranges", "--from", str(source)])
    assert result.exit_code == 0, result.output
    assert json.loads(target.read_text())["createDate"] == SHIPPED["createDate"]


def test_a_local_copy_that_is_a_list_is_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "aws_s3_ranges.json"
    monkeypatch.setattr("gpufleet.catalog.s3_ranges.S3_RANGES_FILE", target)
    source = tmp_path / "ip-ranges.json"
    source.write_text("[]")
    result = CliRunner().invoke(app, ["catalog", "s3-ranges", "--from", str(source)])
    assert result.exit_code == 2, result.output
    assert "not AWS's ip-ranges.json" in result.output and not target.exists()


@pytest.mark.parametrize(
    "failure",
    [
        IpRangesError("not JSON: not valid JSON: Expecting value"),
        IpRangesError("larger than 32 MB; not AWS's ip-ranges.json"),
        __import__("http.client").client.IncompleteRead(b"{"),
    ],
)
def test_a_download_that_answers_badly_is_exit_2(monkeypatch: pytest.MonkeyPatch, failure: Exception) -> None:
    from gpufleet.catalog import s3_ranges

    def answer() -> Any:
        raise failure

    monkeypatch.setattr(s3_ranges, "download", answer)
    before = S3_RANGES_FILE.read_bytes()
    result = CliRunner().invoke(app, ["catalog", "s3-ranges"])
    assert result.exit_code == 2, result.output
    assert s3_ranges.URL in result.output and "internal error" not in result.output
    assert S3_RANGES_FILE.read_bytes() == before
