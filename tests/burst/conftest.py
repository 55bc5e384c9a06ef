"""One moto AWS for the burst tests: EC2's first call loads offerings data (seconds), so pay it once.

Package-scoped so that the mock ends with this folder and no other area's tests run under it. `quota` is the CLI's
AWS for a command test: moto, with Service Quotas stubbed (answers added with `helpers.allow`) and AWS's clock NOW.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from unittest import mock

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from gpufleet.burst.aws import Aws
from gpufleet.cli import burst as burst_cli
from tests.burst.helpers import NOW


@pytest.fixture(scope="package")
def moto() -> Iterator[None]:
    with mock.patch.dict(os.environ, {"MOTO_EC2_LOAD_DEFAULT_AMIS": "false"}), mock_aws():
        yield


@pytest.fixture(scope="package")
def moto_aws(moto: None) -> Aws:
    """The preflight's AWS access, against moto in us-east-1."""
    return Aws("us-east-1", session=boto3.session.Session(region_name="us-east-1"))


@pytest.fixture
def quota(moto_aws: Aws, monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubber]:
    """The CLI's AWS is moto with stubbed Service Quotas; its clock is NOW."""
    stub = Stubber(moto_aws.quotas)
    stub.activate()
    monkeypatch.setattr(burst_cli, "make_aws", lambda region: moto_aws)
    monkeypatch.setattr(burst_cli, "clock", lambda region: NOW)
    yield stub
    stub.deactivate()
