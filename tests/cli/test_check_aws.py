"""`gpufleet check --aws`: the account read with boto3 (moto, Service Quotas stubbed by tests/aws_stubs.py); exit
1 when a quota or an offering fails the first `up`, 0 when the account is ready, 2 when AWS cannot be read
(docs/cli.md, "Exit codes")."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from unittest import mock

import boto3
import pytest
from moto import mock_aws
from typer.testing import CliRunner

from gpufleet.burst.aws import Aws
from gpufleet.cli import check as check_command
from gpufleet.cli.app import app
from gpufleet.engine.plan import Plan
from gpufleet.review import review
from tests.aws_stubs import Quotas
from tests.conftest import ROOT

runner = CliRunner()
CHECK = ["check", "-s", "aws-train", "-C", str(ROOT), "--aws"]


@pytest.fixture
def account(monkeypatch: pytest.MonkeyPatch, example_plans: dict[str, Plan]) -> Iterator[Quotas]:
    env = {"MOTO_EC2_LOAD_DEFAULT_AMIS": "false", "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    with mock.patch.dict(os.environ, env), mock_aws():
        aws = Aws("us-east-1", session=boto3.session.Session(region_name="us-east-1"), sleep=lambda _: None)
        monkeypatch.setattr(check_command, "make_aws", lambda region: aws)
        monkeypatch.setattr(review, "synth_stack", lambda project, stack, stack_file, **_: example_plans[stack])
        quotas = Quotas(aws)
        yield quotas
        quotas.stub.deactivate()


def test_a_fresh_accounts_p_quota_exits_1_saying_what_to_request(account: Quotas) -> None:
    account.value("L-417A185B", 0)
    account.value("L-DB2E81BA", 616)
    result = runner.invoke(app, CHECK)
    assert result.exit_code == 1, result.output
    text = " ".join(result.output.split())
    assert "AWS account (read-only): 1 problem" in text
    assert "L-417A185B (Running On-Demand P instances) in us-east-1 is 0 vCPUs" in text
    assert "Request at least 1152 vCPUs" in text


def test_an_account_with_room_and_offerings_passes_in_json(account: Quotas) -> None:
    account.value("L-417A185B", 1152)
    account.value("L-DB2E81BA", 616)
    result = runner.invoke(app, [*CHECK, "-f", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["aws_account"]["problems"] == []
    assert (
        "pool h100 of site use1: p5.48xlarge offered in us-east-1a (use1-az6 in this account)"
        in (doc["aws_account"]["checks"])
    )


def test_an_account_that_cannot_be_read_exits_2_and_judges_nothing(account: Quotas) -> None:
    account.error("AccessDeniedException")
    result = runner.invoke(app, CHECK)
    assert result.exit_code == 2, result.output
    assert "--aws: the account could not be read: AWS refused GetServiceQuota ec2/L-417A185B" in " ".join(
        result.output.split()
    )
