"""Missing secrets: every one named in one message, with both ways to provide it (placeholder and real value)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app
from tests.conftest import example_config, write_project

runner = CliRunner()
ONPREM_SECRETS = ("kubeconfig", "caCertHash", "sshPrivateKey", "s3AccessKey", "s3SecretKey")


def onprem_without_secrets(tmp: Path) -> Path:
    config = example_config("onprem")
    for key in ONPREM_SECRETS:
        del config[f"gpufleet:{key}"]
    return write_project(tmp, config)


@pytest.mark.parametrize("command", ["validate", "preview"])
def test_every_missing_secret_is_named_at_once_with_both_ways_to_provide_it(tmp_path: Path, command: str) -> None:
    result = runner.invoke(app, [command, "-s", "test", "-C", str(onprem_without_secrets(tmp_path))])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.output.count("error:") == 1  # one message, not one run per secret
    assert "5 required secret(s) missing" in result.output
    for key in ONPREM_SECRETS:
        assert f"config.gpufleet:{key}" in result.output
        assert f"pulumi config set --secret {key} -s test" in result.output  # the real value, before `up`
    assert result.output.count("secure: v1:REPLACEWITHPULUMICONFIGSETSECRET") == 5  # offline placeholders


def test_an_aws_only_estate_needs_no_secrets() -> None:
    from model.load import read_stack
    from model.secrets import required_secrets
    from tests.conftest import ROOT

    assert required_secrets(read_stack(ROOT, "aws-train").estate()) == []
    # hybrid: the on-prem site (kubeadm mints its join token) and the MultiKueue manager's kubeconfig
    hybrid = required_secrets(read_stack(ROOT, "hybrid").estate())
    assert hybrid == ["kubeconfig", "caCertHash", "sshPrivateKey", "managerKubeconfig"]
