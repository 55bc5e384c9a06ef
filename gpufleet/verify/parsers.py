"""Parsers of what the acceptance Jobs print: nccl-tests, `dcgmi diag -j`, fio JSON, DCGM exporter metrics.

Each one is tested on real published output (tests/verify/fixtures/, each with its source). A log is whatever a
pod printed: truncated, interleaved, another tool version's shape. So every parser answers a result or a
ParseError, never another exception (`garbled`), and JSON is read within model.inputs' limits.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from model.inputs import JsonLimitError, load_json

T = TypeVar("T")


class ParseError(ValueError):
    """The output is not what the tool prints (truncated log, crash before the results)."""


def garbled(tool: str) -> Callable[[Callable[[str], T]], Callable[[str], T]]:
    """A parser of `tool`'s output whose every failure on an unexpected shape is a ParseError saying so."""

    def wrap(parse: Callable[[str], T]) -> Callable[[str], T]:
        @functools.wraps(parse)
        def parser(text: str) -> T:
            try:
                return parse(text)
            except ParseError:
                raise
            except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError, RecursionError) as e:
                raise ParseError(
                    f"not {tool} output as gpufleet reads it ({type(e).__name__}: {str(e)[:200]})"
                ) from None

        return parser

    return wrap


# -- nccl-tests -----------------------------------------------------------------------------------------------
# Data rows of `all_reduce_perf` (nccl-tests src/common.cu print_header / the per-size lines): size count type
# redop root time algbw busbw #wrong time algbw busbw #wrong; an MPI or srun launcher may prefix "0: ".
_NCCL_ROW = re.compile(
    r"^\s*(?:\d+:\s+)?(?P<size>\d+)\s+(?P<count>\d+)\s+(?P<type>\w+)\s+(?P<redop>\w+)\s+(?P<root>-?\d+)\s+"
    r"(?P<t1>[\d.]+)\s+(?P<algbw1>[\d.]+)\s+(?P<busbw1>[\d.]+)\s+(?P<wrong1>\S+)\s+"
    r"(?P<t2>[\d.]+)\s+(?P<algbw2>[\d.]+)\s+(?P<busbw2>[\d.]+)\s+(?P<wrong2>\S+)\s*$"
)
_NCCL_AVG = re.compile(r"#\s*Avg bus bandwidth\s*:\s*([\d.]+)")


@dataclass(frozen=True)
class NcclRow:
    size_bytes: int
    busbw_out_of_place: float
    busbw_in_place: float
    wrong: int  # results that failed validation, both columns ("N/A" when run with -c 0 counts as 0)


@dataclass(frozen=True)
class NcclResult:
    rows: list[NcclRow]
    avg_busbw: float | None

    @property
    def largest(self) -> NcclRow:
        return max(self.rows, key=lambda r: r.size_bytes)

    @property
    def busbw(self) -> float:
        """The figure judged: out-of-place bus bandwidth at the largest size (GB/s)."""
        return self.largest.busbw_out_of_place

    @property
    def wrong(self) -> int:
        return sum(r.wrong for r in self.rows)


def _wrong(value: str) -> int:
    return int(value) if value.isdigit() else 0


@garbled("nccl-tests")
def parse_nccl(text: str) -> NcclResult:
    rows = [
        NcclRow(int(m["size"]), float(m["busbw1"]), float(m["busbw2"]), _wrong(m["wrong1"]) + _wrong(m["wrong2"]))
        for m in map(_NCCL_ROW.match, text.splitlines())
        if m
    ]
    if not rows:
        raise ParseError("no all_reduce_perf result rows in the output")
    avg = _NCCL_AVG.search(text)
    return NcclResult(rows, float(avg.group(1)) if avg else None)


# -- dcgmi diag -j --------------------------------------------------------------------------------------------
# DCGM 4 nests results under "DCGM Diagnostic" (NVIDIA/DCGM testing/python3/dcgm_diag_schema.json); DCGM 3 used
# "DCGM GPU Diagnostic" with `gpu_ids`. Statuses: Pass, Fail, Warn, Skip, Not Run (any case).
_XID_ECC = re.compile(r"\b(xid|ecc|row remap|retired page|double bit|dbe|sbe)\b", re.IGNORECASE)


@dataclass(frozen=True)
class DiagFinding:
    test: str
    entity: str
    status: str
    message: str

    @property
    def xid_or_ecc(self) -> bool:
        return bool(_XID_ECC.search(self.message))


@dataclass(frozen=True)
class DiagResult:
    version: str | None
    tests: dict[str, str]  # test name -> worst status over its GPUs (fail > warn > not run > skip > pass)
    findings: list[DiagFinding] = field(default_factory=list)

    @property
    def failed(self) -> list[str]:
        return sorted(t for t, s in self.tests.items() if s in ("fail", "warn"))

    @property
    def passed(self) -> bool:
        """At least one test passed, none failed or warned: a diagnostic that skipped or ran nothing proves
        nothing."""
        ran = any(s == "pass" for s in self.tests.values())
        return ran and not self.failed and not any(f.xid_or_ecc for f in self.findings)


_RANK = {"pass": 0, "skip": 1, "not run": 2, "warn": 3, "fail": 4}


def _status(raw: Any) -> str:
    """A DCGM test status in one spelling; one that is none of DCGM's is unreadable, never a pass."""
    s = str(raw).strip().lower()
    s = {"passed": "pass", "skipped": "skip", "failed": "fail", "warning": "warn", "notrun": "not run"}.get(s, s)
    if s not in _RANK:
        raise ParseError(f"dcgmi diag: unknown test status {str(raw)[:40]!r}")
    return s


def _json_document(text: str) -> Any:
    """The JSON object in a log (dcgmi may print a banner line before it)."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise ParseError("no JSON document in the output")
    try:
        return load_json(text[start : end + 1])
    except JsonLimitError as err:
        raise ParseError(str(err)) from None


@garbled("dcgmi diag -j")
def parse_dcgm_diag(text: str) -> DiagResult:
    doc = _json_document(text)
    root = doc.get("DCGM Diagnostic") or doc.get("DCGM GPU Diagnostic")
    if not isinstance(root, dict):
        raise ParseError("no `DCGM Diagnostic` object in the output")
    if root.get("runtime_error"):
        raise ParseError(f"dcgmi diag failed to run: {root['runtime_error']}")
    tests: dict[str, str] = {}
    findings: list[DiagFinding] = []
    for category in root.get("test_categories") or []:
        for test in category.get("tests") or []:
            if not isinstance(test, dict):
                continue  # DCGM 3 printed `null` between tests
            name = str(test.get("name"))
            statuses = []
            for r in test.get("results") or []:
                status = _status(r.get("status"))
                statuses.append(status)
                entity = str(r.get("entity_id", r.get("gpu_ids", "")))
                for w in r.get("warnings") or []:
                    text_w = w.get("warning", "") if isinstance(w, dict) else str(w)
                    findings.append(DiagFinding(name, entity, status, text_w))
            summary = (test.get("test_summary") or {}).get("status")
            if summary is not None:
                statuses.append(_status(summary))
            tests[name] = max(statuses, key=lambda s: _RANK.get(s, 2), default="not run")
    version = (doc.get("metadata") or {}).get("version") or root.get("version")
    return DiagResult(str(version) if version else None, tests, findings)


# -- fio --output-format=json ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class FioResult:
    read_gbps: float  # GB/s (10^9 bytes), summed over jobs
    write_gbps: float
    errors: int


@garbled("fio JSON")
def parse_fio(text: str) -> FioResult:
    doc = _json_document(text)
    jobs = doc.get("jobs")
    if not isinstance(jobs, list) or not jobs:
        raise ParseError("no `jobs` in the fio output")
    read = sum(int(j.get("read", {}).get("bw_bytes", 0)) for j in jobs)
    write = sum(int(j.get("write", {}).get("bw_bytes", 0)) for j in jobs)
    errors = sum(1 for j in jobs if int(j.get("error", 0)))
    return FioResult(read / 1e9, write / 1e9, errors)


def merge_fio(results: list[FioResult]) -> FioResult:
    """A read run and a write run of the same node as one result."""
    return FioResult(
        max(r.read_gbps for r in results), max(r.write_gbps for r in results), sum(r.errors for r in results)
    )


# -- DCGM exporter /metrics (Prometheus text format) ---------------------------------------------------------
_SAMPLE = re.compile(r"^(?P<name>DCGM_FI_[A-Z0-9_]+)\{(?P<labels>[^}]*)\}\s+(?P<value>\S+)")
_LABEL = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class ExporterScrape:
    gpus: set[str]  # distinct `gpu` label values with at least one DCGM_FI_* series
    xid: dict[str, float]  # gpu -> last XID (DCGM_FI_DEV_XID_ERRORS), when exported and non-zero


@garbled("DCGM exporter metrics")
def parse_exporter(text: str) -> ExporterScrape:
    gpus: set[str] = set()
    xid: dict[str, float] = {}
    for line in text.splitlines():
        m = _SAMPLE.match(line.strip())
        if not m:
            continue  # comments, other metric families, elided lines
        labels = dict(_LABEL.findall(m["labels"]))
        gpu = labels.get("gpu")
        if gpu is None:
            continue
        gpus.add(gpu)
        if m["name"] == "DCGM_FI_DEV_XID_ERRORS":
            try:
                value = float(m["value"])
            except ValueError:
                continue
            if value:
                xid[gpu] = value
    return ExporterScrape(gpus, xid)
