"""One moto AWS for the burst tests: EC2's first call loads offerings data (seconds), so pay it once.

Package-scoped so that the mock ends with this folder and no other area's tests run under it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from unittest import mock

import boto3
import pytest
from moto import mock_aws

from gpufleet.burst.aws import Aws


@pytest.fixture(scope="package")
def moto() -> Iterator[None]:
    with mock.patch.dict(os.environ, {"MOTO_EC2_LOAD_DEFAULT_AMIS": "false"}), mock_aws():
        yield


@pytest.fixture(scope="package")
def moto_aws(moto: None) -> Aws:
    """The preflight's AWS access, against moto in us-east-1."""
    return Aws("us-east-1", session=boto3.session.Session(region_name="us-east-1"))
