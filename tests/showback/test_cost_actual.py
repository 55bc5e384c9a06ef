"""`gpufleet cost --actual` against recorded Prometheus answers (tests/showback/answers, in the API's envelope),
served over HTTP by a local stand-in: the printed figures match a hand calculation, and every bad input or
endpoint is one line and exit 2."""

from __future__ import annotations

import datetime as dt
import json
import socket
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.showback import prometheus as prom
from gpufleet.showback.showback import queries
from model.observability import rules
from tests.conftest import write_project
from tests.review.estates import NOW, small
from tests.review.repos import stack_config
from tests.showback.server import prometheus

AT = NOW.isoformat()  # 2026-12-01T12:00:00+00:00, the recorded answers' evaluation time


def project(tmp: Path, installed: bool = True) -> Path:
    estate = small()
    if installed:
        for site in estate["sites"]:
            site.setdefault("kubernetes", {})["monitoring"] = {"prometheus_operator": "install"}
    return write_project(tmp, stack_config(estate), stack="small")


def run(*args: str) -> Any:
    return CliRunner().invoke(app, ["cost", "-s", "small", *args])


def test_cost_actual_matches_the_hand_calculation(tmp_path: Path) -> None:
    """The small estate (tests/review/estates.py) over the day up to 2026-12-01 12:00 UTC (--window 1d, 24 h).

    Prices, from the same envelope `gpufleet cost` builds: h100 is p5.48xlarge at $55.04/node-hour over 8 GPUs =
    $6.88/GPU-h; agents-g6e is g6e.xlarge at $1.861 with 1 GPU; owned is two servers at $200,000 over 4 × 8,760 h
    + 10 kW × $0.10 + $730/730 h = $7.707763/server-hour, over 16 GPUs = $0.963470/GPU-h.

    Recorded answers are sums of one-minute samples, so GPU-h = value / 60:
    research  h100 11520 → 192 GPU-h = $1,320.96; used 8640 → 144, idle 48 = $330.24
              owned 11520 → 192 GPU-h = $184.99 (184.9863); used 5760 → 96, idle 96 = $92.49 (92.4932)
              allocated 384 GPU-h, $1,505.95; used 240; idle 144 GPU-h, $422.73 (422.7332)
    product   h100 1440 → 24 GPU-h = $165.12; used 360 → 6, idle 18 = $123.84
    agents    agents-g6e 600 → 10 GPU-h = $18.61; used 540 → 9, idle 1 = $1.86 (1.861)
    gpufleet-verify (not a tenant) h100 120 → 2 GPU-h = $13.76; used 114 → 1.9, idle 0.1 = $0.69 (0.688)
    estate    allocated 420 GPU-h, $1,703.44 (1703.4363); used 256.9; idle 163.1 GPU-h, $549.12 (549.1222)

    Planned, each tenant's quota share at desired size × 24 h: research 16/24 of 2 × $55.04 + all of owned
    $15.415525 = $88.802192/h → $2,131.25; product 4/24 of $110.08 = $18.346667/h → $440.32; agents all of
    1 × $1.861 → $44.66 (44.664); unassigned 4/24 of h100 → $440.32; estate $127.356525/h → $3,056.56.
    """
    with prometheus() as (url, recorded):
        result = run("-C", str(project(tmp_path)), "--actual", "--prometheus", url, "--window", "1d", "--at", AT)
        doc_result = run(
            "-C", str(project(tmp_path)), "--actual", "--prometheus", url, "--window", "1d", "--at", AT, "-f", "json"
        )
    assert result.exit_code == 0, result.output
    table = result.stdout.split("planned: the tenant's")[0]
    rows = {line.split()[0]: line.split()[1:] for line in table.splitlines() if line.strip()}
    assert rows["research"] == ["$2,131.25", "384.00", "$1,505.95", "240.00", "144.00", "$422.73"]
    assert rows["product"] == ["$440.32", "24.00", "$165.12", "6.00", "18.00", "$123.84"]
    assert rows["agents"] == ["$44.66", "10.00", "$18.61", "9.00", "1.00", "$1.86"]
    assert rows["(unassigned)"] == ["$440.32", "0.00", "-", "0.00", "0.00", "-"]
    assert rows["gpufleet-verify"] == ["(not", "a", "tenant)", "-", "2.00", "$13.76", "1.90", "0.10", "$0.69"]
    assert rows["estate"] == ["$3,056.56", "420.00", "$1,703.44", "256.90", "163.10", "$549.12"]
    # exactly gpufleet's recorded series, summed over the window, evaluated at its end
    expected = queries("1d")
    assert {q["query"] for q in recorded.asked} == set(expected.values())
    assert rules.ALLOCATED_BY_POOL in expected["allocated"] and rules.USED_BY_POOL in expected["used"]
    assert (
        "  research on owned ($0.9635/GPU-h): allocated 192.00 GPU-h $184.99, used 96.00, idle 96.00 GPU-h $92.49"
        in (result.stdout.splitlines())
    )
    assert {q["time"] for q in recorded.asked} == {f"{NOW.timestamp():.3f}"}

    assert doc_result.exit_code == 0, doc_result.output
    doc = json.loads(doc_result.stdout)
    total = doc["total"]
    assert total["allocated"] == {"usd": pytest.approx(1703.4363, abs=1e-4), "complete": True}
    assert total["idle"]["usd"] == pytest.approx(549.1222, abs=1e-4)
    assert total["planned"]["usd"] == pytest.approx(3056.5566, abs=1e-4)
    research = next(t for t in doc["tenants"] if t["tenant"] == "research")
    owned = next(p for p in research["pools"] if p["pool"] == "owned")
    assert owned["usd_per_gpu_hour"] == pytest.approx(0.9635, abs=1e-4) and owned["site"] == "dc"
    assert doc["hours"] == 24 and doc["start"] == "2026-11-30T12:00:00+00:00"


def test_a_window_longer_than_prometheus_keeps_is_said_and_shortened(tmp_path: Path) -> None:
    """The small estate's sites keep the default 15 days (retention_days): asked for 30d, `cost --actual` says so
    in one line and shows the 15 days there are, planned over those 360 h (estate $127.356525/h → $45,848.35)."""
    with prometheus() as (url, recorded):
        args = ["-C", str(project(tmp_path)), "--actual", "--prometheus", url, "--window", "30d", "--at", AT]
        result, doc_result = run(*args), run(*args, "-f", "json")
    assert result.exit_code == 0, result.output
    assert result.stderr.strip().splitlines() == [
        "warning: --window 30d is longer than the 15 days the Prometheus of site use1, dc keeps "
        "(sites[].kubernetes.monitoring.retention_days): showing the last 15d only"
    ]
    assert {q["query"] for q in recorded.asked} == set(queries("15d").values())
    assert "2026-11-16 12:00 to 2026-12-01 12:00 UTC, 360 h (only what Prometheus keeps of the 30d asked)" in (
        " ".join(result.stdout.split())
    )
    assert "$45,848.35" in result.stdout.split("planned: the tenant's")[0]
    doc = json.loads(doc_result.stdout)
    assert (doc["window"], doc["asked_window"], doc["hours"]) == ("15d", "30d", 360)
    assert any("showing the last 15d only" in n for n in doc["notes"])


def test_cost_actual_sends_a_bearer_token_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(prom.TOKEN_ENV, "s3cret")
    with prometheus() as (url, recorded):
        result = run("-C", str(project(tmp_path)), "--actual", "--prometheus", url, "--at", AT)
    assert result.exit_code == 0, result.output
    assert {h.get("Authorization") for h in recorded.headers} == {"Bearer s3cret"}


def test_cost_actual_reports_a_prometheus_error_answer_in_one_line(tmp_path: Path) -> None:
    answers = {rules.ALLOCATED_BY_POOL: ("error.json", 400), rules.USED_BY_POOL: ("used.json", 200)}
    with prometheus(answers) as (url, _):
        result = run("-C", str(project(tmp_path)), "--actual", "--prometheus", url, "--at", AT)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f'error: {url}/api/v1/query: Prometheus refused the query (bad_data: invalid parameter "query": 1:38: '
        "parse error: unexpected right parenthesis ')')"
    ]


def test_cost_actual_refuses_an_answer_that_is_no_vector(tmp_path: Path) -> None:
    answers = {rules.ALLOCATED_BY_POOL: ("matrix.json", 200), rules.USED_BY_POOL: ("used.json", 200)}
    with prometheus(answers) as (url, _):
        result = run("-C", str(project(tmp_path)), "--actual", "--prometheus", url, "--at", AT)
    assert result.exit_code == 2
    assert "expected a vector result, got resultType 'matrix'" in result.stderr


def test_cost_actual_names_an_unreachable_endpoint(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = run("-C", str(project(tmp_path)), "--actual", "--prometheus", f"http://127.0.0.1:{port}/prom/")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: http://127.0.0.1:{port}/prom/api/v1/query: cannot be reached")
    assert "Traceback" not in result.output


def test_cost_actual_on_a_stack_without_the_metrics_stack_says_how_to_get_one(tmp_path: Path) -> None:
    result = run("-C", str(project(tmp_path, installed=False)), "--actual")
    assert result.exit_code == 2
    assert "prometheus_operator: install, or pass --prometheus URL" in result.stderr


def test_cost_actual_without_a_url_names_the_sites_prometheus(tmp_path: Path) -> None:
    result = run("-C", str(project(tmp_path)), "--actual")
    assert result.exit_code == 2
    assert "--actual needs --prometheus URL: the Prometheus of site use1, dc" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--actual", "--prometheus", "localhost:9090"], "not an http(s) URL"),
        (["--actual", "--prometheus", "http://p:9090", "--window", "a week"], "--window: 'a week' is not a duration"),
        (["--actual", "--prometheus", "http://p:9090", "--at", "noon"], "--at: 'noon' is not an ISO time"),
        (["--actual", "--prometheus", "http://p:9090", "-f", "markdown"], "--actual: prints text or json"),
        (["--prometheus", "http://p:9090"], "--prometheus: only with --actual"),
    ],
)
def test_cost_actual_refuses_bad_options_in_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    result = run("-C", str(project(tmp_path)), *args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_an_answer_that_is_not_json_names_the_endpoint() -> None:
    with pytest.raises(prom.PrometheusError, match=r"^http://p/api/v1/query: the answer is not JSON"):
        prom.vector("http://p/api/v1/query", b"<html>login</html>")


def test_a_pool_the_stack_does_not_have_is_unpriced_not_zero() -> None:
    from gpufleet.review.cost.envelope import estate_cost
    from gpufleet.showback.showback import showback
    from model.load import parse_estate

    spec = parse_estate(small(), "t")
    old = [prom.Sample({"namespace": "research", "pool": "a100-old"}, 60.0)]
    sb = showback(estate_cost(spec, None, NOW), ["research"], old, [], NOW, "1h", ["http://p"])
    research = sb.tenants[0]
    assert research.allocated == 1.0 and research.allocated_usd.usd is None
    assert sb.allocated_usd.complete is False
    assert any("a100-old" in n and "unpriced" in n for n in sb.notes)
    assert NOW - sb.start == dt.timedelta(hours=1)
    # no site's pool was sampled: each site is named, so a Prometheus left out is not read as an idle site
    sites = {p.site for p in estate_cost(spec, None, NOW).pools}
    assert sites and all(any(n.startswith(f"site {s}: no GPU-hours") for n in sb.notes) for s in sites)


def test_a_url_that_does_not_parse_is_refused_in_one_line() -> None:
    from gpufleet.showback.prometheus import PrometheusError, endpoint

    with pytest.raises(PrometheusError, match=r"--prometheus 'http://\[::1': not a URL"):
        endpoint("http://[::1")


def test_on_a_shared_pool_use_is_not_measured_and_said_why() -> None:
    """On MIG or time-sliced pools a tenant's use is not known, so used and idle are not shown as fact: used is
    None (JSON null), idle is left out of the idle figures and its dollars are None."""
    from gpufleet.showback.showback import PoolUse

    shared = PoolUse("agents", "nb", "use1", 0.5, allocated=10.0, used=None)
    assert shared.measured is False and shared.idle == 0.0 and shared.idle_usd is None
    assert shared.allocated_usd == 5.0 and shared.to_dict()["used_gpu_hours"] is None
    whole = PoolUse("agents", "g", "use1", 0.5, allocated=10.0, used=4.0)
    assert whole.measured and whole.idle == 6.0 and whole.idle_usd == 3.0


def test_a_mig_pools_use_is_not_measured_even_at_one_slice_per_gpu() -> None:
    """DCGM_FI_DEV_GPU_UTIL, which the used rule reads, is not reported for MIG devices (NVIDIA/dcgm-exporter #216,
    #430), so a MIG pool's used GPU-hours would read 0.0. With 7g.80gb (one slice per GPU) units are GPUs, so the
    unit ratio alone does not tell the pool is shared. h100 as MIG 7g.80gb, research allocated 60 one-minute
    samples (1 GPU-h), no used samples: used is None, not 0.0, and the note names the cause."""
    from gpufleet.review.cost.envelope import estate_cost
    from gpufleet.showback.showback import showback
    from model.load import parse_estate

    estate = small()
    estate["sites"][0]["node_pools"][0]["sharing"] = {"mode": "mig", "mig_profile": "7g.80gb"}
    spec = parse_estate(estate, "t")
    allocated = [prom.Sample({"namespace": "research", "pool": "h100"}, 60.0)]
    sb = showback(estate_cost(spec, None, NOW), ["research"], allocated, [], NOW, "1h", ["http://p"])
    (research,) = [t for t in sb.tenants if t.tenant == "research"]
    (pool,) = research.pools
    assert pool.allocated == 1.0 and pool.used is None and pool.measured is False
    doc = sb.to_dict()
    assert doc["tenants"][0]["pools"][0]["used_gpu_hours"] is None
    assert doc["tenants"][0]["used_gpu_hours"] is None and doc["total"]["used_gpu_hours"] is None
    (note,) = [n for n in sb.notes if n.startswith("pool h100:")]
    assert "MIG" in note and "DCGM_FI_DEV_GPU_UTIL" in note and "#216" in note
    assert "given to one of the pods" not in note  # the old, wrong cause
