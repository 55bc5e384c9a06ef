"""The scheduled burst reconcile and the deploy never run `pulumi up` on one stack at the same time: both jobs sit
in one concurrency group per stack (GitHub Actions: jobs.<job_id>.concurrency, https://docs.github.com/en/actions/
writing-workflows/workflow-syntax-for-github-actions#jobsjob_idconcurrency), and neither cancels a running update."""

from __future__ import annotations

from typing import Any

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
