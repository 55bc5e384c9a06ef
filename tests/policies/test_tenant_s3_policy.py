"""An untrusted tenant's declared S3 grant passes `gpufleet check` and the real tenancy pack (`python -m
pulumi.policy`, configured as `pulumi preview --policy-pack-config` would be) with the config gpufleet writes from
the stack, and is a violation in both without it: undeclared S3 for an untrusted tenant is never the default.
Policy config: https://www.pulumi.com/docs/iac/using-pulumi/crossguard/configuration/.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pulumi.runtime.proto import analyzer_pb2

from gpufleet.engine.plan import Plan
from gpufleet.review import check
from model.load import ESTATE_KEY, parse_estate
from tests.conftest import example_config
from tests.policies.test_packs import _configure, _resource, analyzers  # noqa: F401 (analyzers: a fixture)

RULES = {"untrusted-tenant-s3-declared", "tenant-s3-scoped"}


def _flags(stub: Any, plan: Plan, config_file: Path) -> set[str]:
    _configure(stub, config_file)
    stack = stub.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=[_resource(plan, r) for r in plan.resources]))
    return {d.policyName for d in stack.diagnostics} & RULES


def test_untrusted_tenants_declared_grant_passes_both_checks_only_with_its_config(
    analyzers: dict[str, Any],  # noqa: F811
    synth_config: Callable[[dict[str, Any]], Plan],
    tmp_path: Path,
) -> None:
    config = example_config("aws-train")
    agents = next(t for t in config[ESTATE_KEY]["tenants"] if t["name"] == "agents")
    agents["s3"] = [{"bucket": "train-prod-models", "prefix": "published/", "access": "read"}]
    plan = synth_config(config)
    spec = parse_estate(config[ESTATE_KEY], "agents-s3")
    assert {f.rule for f in check.evaluate(plan, spec).mandatory} & RULES == set()
    (written,) = [p for p in check.write_configs(spec, tmp_path / "cfg") if p.stem == "tenancy"]
    doc = json.loads(written.read_text())
    assert doc["untrusted-tenant-s3-declared"]["tenantS3Grants"] == {"agents": ["train-prod-models/published/"]}
    assert _flags(analyzers["tenancy"], plan, written) == set()
    empty = tmp_path / "empty.json"
    empty.write_text("{}")
    assert _flags(analyzers["tenancy"], plan, empty) == {"untrusted-tenant-s3-declared"}
    found = check.run(plan, None, only=RULES)
    assert {(f.rule, f.enforcement) for f in found} == {("untrusted-tenant-s3-declared", "mandatory")}
    assert all("agents" in f.message for f in found)
