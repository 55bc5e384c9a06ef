"""Shared fixtures for the policy tests: the broken stack synthesized once per session."""

from __future__ import annotations

import pytest

from components.model.load import ESTATE_KEY, parse_estate
from components.model.spec import EstateSpec
from gpufleet.engine.plan import Plan
from gpufleet.engine.synth import synth
from tests.conftest import write_project
from tests.policies.broken_stack import broken_config


@pytest.fixture(scope="session")
def broken(tmp_path_factory: pytest.TempPathFactory) -> tuple[Plan, EstateSpec]:
    project = write_project(tmp_path_factory.mktemp("broken"), broken_config())
    return synth(project, "test"), parse_estate(broken_config()[ESTATE_KEY], "broken")
