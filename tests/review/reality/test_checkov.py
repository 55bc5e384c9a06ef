"""Checkov over `gpufleet export --render` of the examples, and of variants that enable the charts the examples
leave off (JobSet, the SR-IOV network operator) or hold objects only a burst window brings (the backstop's CronJobs,
as `gpufleet preview --burst-window` builds the plan): every failure is registered, with why.

Checkov conflicts with this project's pins (it pins older boto3/botocore and packaging), so .ci/run installs it in
its own virtualenv, `.venv-checkov`, and the test calls it as a program (`GPUFLEET_CHECKOV` overrides the path).
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.charts.cache import ChartCache
from gpufleet.charts.render import render_plan
from gpufleet.cli.preview import what_if_window
from gpufleet.engine.plan import Plan
from gpufleet.engine.synth import synth
from gpufleet.render.export import export, export_rendered
from gpufleet.review.review import build
from model import versions
from tests.charts import unbuilt
from tests.conftest import EXAMPLES, ROOT, example_config, write_project
from tests.kubernetes.test_metrics_stack import with_metrics_stack
from tests.review.reality.conftest import Checked

REGISTER = Path(__file__).with_name("checkov_exemptions.yaml")
OWN = "gpufleet"  # the register's name for objects gpufleet writes itself


@dataclass(frozen=True)
class Failure:
    check: str
    chart: str  # the chart a rendered object comes from; "gpufleet" for gpufleet's own objects
    object: str  # Checkov's resource id, Kind.namespace.name
    file: str


def checkov() -> Path:
    path = Path(os.environ.get("GPUFLEET_CHECKOV") or ROOT / ".venv-checkov" / "bin" / "checkov")
    if not path.is_file():
        pytest.fail(
            f"Checkov not found at {path}: run `bash .ci/run` or "
            "`python3 -m venv .venv-checkov && .venv-checkov/bin/pip install checkov==3.3.30`"
        )
    return path


def scan(folder: Path, framework: str) -> dict[str, Any]:
    """Checkov's JSON report on `folder` for one framework (exit 1 is "checks failed", not an error)."""
    run = subprocess.run(
        [str(checkov()), "-d", str(folder), "--framework", framework, "-o", "json", "--quiet", "--compact",
         "--skip-download"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert run.returncode in (0, 1), run.stderr[-2000:]
    doc: Any = json.loads(run.stdout)
    report: dict[str, Any] = doc[0] if isinstance(doc, list) else doc
    return report


def _chart(file: Path) -> str:
    first = file.read_text().split("\n", 1)[0]
    return first.removeprefix("# Source: ").split("/")[0] if first.startswith("# Source: ") else OWN


def _with_jobset() -> dict[str, Any]:
    """The hybrid example with JobSet enabled on every site (the manager enables what the workers list)."""
    config = example_config("hybrid")
    for site in config["gpufleet:estate"]["sites"]:
        site.setdefault("kubernetes", {})["job_frameworks"] = ["batch/job", "jobset.x-k8s.io/jobset"]
    return config


def _with_sriov() -> dict[str, Any]:
    """The on-prem example with InfiniBand through SR-IOV virtual functions (the network operator's SR-IOV chart)."""
    config = example_config("onprem")
    config["gpufleet:estate"]["sites"][0]["fabrics"] = [
        {"kind": "infiniband", "name": "ib", "device_plugin": "sriov", "ipoib_interface": "ibp24s0"}
    ]
    return config


VARIANTS = {"hybrid-jobset": _with_jobset, "onprem-sriov": _with_sriov, "onprem-metrics": with_metrics_stack}
# A variant's chart that the chart cache may hold without its dependencies (tests/charts.py require_built): where it
# does, the variant is not scanned and the register's entries for the chart are not judged stale.
NEEDS_BUILT = {"onprem-metrics": versions.KUBE_PROMETHEUS_STACK}
WINDOW = "16:8"  # GPUS:HOURS of the what-if window


def window_plan() -> Plan:
    """The hybrid example as `gpufleet preview -s hybrid --burst-window 16:8` builds it: a window open now, so the
    plan holds the backstop (the CronJobs, the EventBridge schedule). Its charts are the example's own."""
    now = dt.datetime.now(dt.UTC)
    return build(ROOT, "hybrid", now, window=what_if_window(ROOT, "hybrid", WINDOW, now), simulate=False).plan


@pytest.fixture(scope="session")
def checkov_failures(
    checked_examples: dict[str, Checked], chart_cache: ChartCache, tmp_path_factory: pytest.TempPathFactory
) -> list[Failure]:
    root = tmp_path_factory.mktemp("export")
    for stack in EXAMPLES:
        c = checked_examples[stack]
        export(c.plan, root / stack)
        export_rendered(c.plan, c.releases, root / stack)
    for name, config in VARIANTS.items():
        if name in NEEDS_BUILT and unbuilt(NEEDS_BUILT[name]):
            continue
        plan = synth(write_project(tmp_path_factory.mktemp(name), config()), "test")
        export(plan, root / name)
        export_rendered(plan, render_plan(plan, chart_cache), root / name)
    export(window_plan(), root / "hybrid-window")
    report = scan(root, "kubernetes")
    assert report["summary"]["passed"] > 0 and report["summary"]["parsing_errors"] == 0, report["summary"]
    results = report["results"]
    return [
        Failure(f["check_id"], _chart(root / f["file_path"].lstrip("/")), f["resource"], f["file_path"])
        for f in results["failed_checks"]
    ]


def _register() -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = yaml.safe_load(REGISTER.read_text())
    for e in entries:
        assert set(e) == {"checks", "charts", "object", "why"} and e["why"].strip(), e
    return entries


def _covers(entry: dict[str, Any], f: Failure) -> bool:
    return f.check in entry["checks"] and f.chart in entry["charts"] and fnmatch.fnmatch(f.object, entry["object"])


def test_every_checkov_failure_is_registered_with_why(checkov_failures: list[Failure]) -> None:
    entries = _register()
    unregistered = sorted(
        {
            f"{f.check} {f.chart}:{f.object} ({f.file})"
            for f in checkov_failures
            if not any(_covers(e, f) for e in entries)
        }
    )
    assert unregistered == []


def test_no_exemption_is_stale(checkov_failures: list[Failure]) -> None:
    """Every check and every chart an entry names still fails somewhere under it (a chart the scan could not render,
    its dependencies missing from the chart cache, is not judged)."""
    unscanned = {c.name for c in NEEDS_BUILT.values() if unbuilt(c)}
    stale = []
    for e in _register():
        charts = [ch for ch in e["charts"] if ch not in unscanned]
        if not charts:
            continue
        covered = [f for f in checkov_failures if _covers(e, f)]
        stale += [f"{c} in {charts}" for c in e["checks"] if c not in {f.check for f in covered}]
        stale += [f"{ch} under {e['checks']}" for ch in charts if ch not in {f.chart for f in covered}]
    assert stale == []


def test_the_backstop_cron_jobs_of_an_open_window_are_scanned(checkov_failures: list[Failure]) -> None:
    """Without a window the plan holds no CronJob, so only the window variant brings them to Checkov; the one
    failure left on them is registered (CKV_K8S_38: the job calls the API with its token)."""
    on_stops = {(f.check, f.object) for f in checkov_failures if f.object.startswith("CronJob.gpufleet-burst-stop.")}
    assert on_stops == {
        ("CKV_K8S_38", "CronJob.gpufleet-burst-stop.burst-hold"),
        ("CKV_K8S_38", "CronJob.gpufleet-burst-stop.burst-drain"),
    }


def test_gpufleet_objects_are_exempt_only_by_exact_name() -> None:
    for e in _register():
        if OWN in e["charts"]:
            assert e["charts"] == [OWN] and not set(e["object"]) & set("*?["), e
