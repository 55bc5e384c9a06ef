"""The packs as the Pulumi CLI runs them: folder layout, the real policy-pack entry point (`python -m
pulumi.policy <engine> <pack dir>`, what the CLI's python analyzer plugin runs) over gRPC, and agreement between
that analyzer and `gpufleet check` on the same plan with the config `--write-config` produces."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc

from gpufleet.engine.plan import Plan, PlanResource
from gpufleet.review import check
from model.spec import EstateSpec
from policies.cost_tags import taggable
from tests.conftest import ROOT

PACKS = {p.folder: p for p in check.packs()}
CHECKLIST_ID = re.compile(r"\b(T\d+|A\d+|H\d+|P\d+|CKV\w*|DESIGN)\b")


@pytest.mark.parametrize("folder", sorted(PACKS))
def test_pack_folder_runs_in_the_project_venv_with_a_version(folder: str) -> None:
    pack_dir = ROOT / "policies" / folder
    doc = yaml.safe_load((pack_dir / "PulumiPolicy.yaml").read_text())
    assert doc["runtime"]["name"] == "python"
    assert (pack_dir / doc["runtime"]["options"]["virtualenv"]).resolve() == (ROOT / ".venv").resolve()
    assert re.fullmatch(r"\d+\.\d+\.\d+", str(doc["version"]))
    main = (pack_dir / "__main__.py").read_text()
    assert main.count("PolicyPack(") == 1 and "policies=rules.ALL" in main
    assert (pack_dir / "requirements.txt").exists()


def test_rule_ids_are_unique_and_each_rule_is_documented() -> None:
    policies = [p for pack in PACKS.values() for p in pack.policies]
    names = [p.name for p in policies]
    assert len(names) == len(set(names))
    for p in policies:
        assert CHECKLIST_ID.search(p.description), f"{p.name} cites no check-list item"
        assert p.remediation_steps and p.enforcement_level is not None
        for key, prop in (p.config_schema.properties if p.config_schema else {}).items():
            assert prop.get("description"), f"{p.name} config {key} lacks a description"


def test_taggable_list_matches_the_installed_pulumi_aws() -> None:
    on_disk = json.loads(taggable.TAGGABLE_FILE.read_text())
    assert taggable.scan(taggable.installed_package_dir()) == on_disk
    assert "aws:eks/nodeGroup:NodeGroup" in taggable.taggable_types()
    assert "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock" not in taggable.taggable_types()


# -- the real analyzer entry point ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def analyzers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, analyzer_pb2_grpc.AnalyzerStub]]:
    """Each pack started the way the CLI starts it, from an unrelated working directory."""
    cwd = tmp_path_factory.mktemp("analyzer-cwd")
    procs = {
        folder: subprocess.Popen(
            [sys.executable, "-m", "pulumi.policy", "127.0.0.1:1", str(ROOT / "policies" / folder)],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for folder in PACKS
    }
    try:
        stubs = {}
        for folder, proc in procs.items():
            assert proc.stdout is not None
            port = proc.stdout.readline().decode().strip()
            assert port.isdigit(), f"pack {folder} did not start: {proc.stderr.read().decode() if proc.stderr else ''}"
            stubs[folder] = analyzer_pb2_grpc.AnalyzerStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
        yield stubs
    finally:
        for proc in procs.values():
            proc.kill()
            proc.wait()


def test_packs_load_under_the_policy_runtime_with_all_rules(analyzers: dict[str, Any]) -> None:
    for folder, stub in analyzers.items():
        info = stub.GetAnalyzerInfo(empty_pb2.Empty())
        assert info.name == PACKS[folder].name
        assert [p.name for p in info.policies] == [p.name for p in PACKS[folder].policies]


def _struct(value: dict[str, Any]) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(value)
    return s


def _urn(plan: Plan, key: str) -> str:
    return f"urn:pulumi:{plan.stack}::{plan.project}::{key}"


def _resource(plan: Plan, r: PlanResource) -> analyzer_pb2.AnalyzerResource:
    options = analyzer_pb2.AnalyzerResourceOptions(protect=r.protect, parent=_urn(plan, r.parent) if r.parent else "")
    provider = None
    if r.provider:
        p = plan.get(r.provider)
        provider = analyzer_pb2.AnalyzerProviderResource(
            type=p.type, properties=_struct(p.inputs), urn=_urn(plan, p.key), name=p.name
        )
    return analyzer_pb2.AnalyzerResource(
        type=r.type,
        properties=_struct(r.inputs),
        urn=_urn(plan, r.key),
        name=r.name,
        options=options,
        provider=provider,
        parent=_urn(plan, r.parent) if r.parent else "",
        dependencies=[_urn(plan, d) for d in r.dependencies],
    )


def _configure(stub: Any, config_file: Path) -> None:
    """What the CLI does with `--policy-pack-config FILE`: per policy an enforcement level and properties."""
    levels = {"advisory": analyzer_pb2.ADVISORY, "mandatory": analyzer_pb2.MANDATORY, "disabled": analyzer_pb2.DISABLED}
    policy_config = {}
    for name, entry in json.loads(config_file.read_text()).items():
        props = {k: v for k, v in entry.items() if k != "enforcementLevel"}
        level = levels[entry.get("enforcementLevel", "advisory")] if "enforcementLevel" in entry else None
        cfg = analyzer_pb2.PolicyConfig(properties=_struct(props))
        if level is not None:
            cfg.enforcementLevel = level
        policy_config[name] = cfg
    stub.Configure(analyzer_pb2.ConfigureAnalyzerRequest(policyConfig=policy_config))


def test_real_analyzer_and_gpufleet_check_agree_on_the_broken_stack(
    analyzers: dict[str, Any], broken: tuple[Plan, EstateSpec], tmp_path: Path
) -> None:
    plan, spec = broken
    ours = {(f.rule, f.resource, f.enforcement) for f in check.evaluate(plan, spec)}
    level_names = {analyzer_pb2.ADVISORY: "advisory", analyzer_pb2.MANDATORY: "mandatory"}
    theirs: set[tuple[str, str | None, str]] = set()
    for path in check.write_configs(spec, tmp_path):
        stub = analyzers[path.stem]
        _configure(stub, path)
        for r in plan.resources:
            full = _resource(plan, r)
            req = analyzer_pb2.AnalyzeRequest(
                type=r.type, properties=full.properties, urn=full.urn, name=r.name, options=full.options
            )
            if r.provider:
                req.provider.CopyFrom(full.provider)
            for d in stub.Analyze(req).diagnostics:
                theirs.add((d.policyName, r.key, level_names[d.enforcementLevel]))
        stack = stub.AnalyzeStack(
            analyzer_pb2.AnalyzeStackRequest(resources=[_resource(plan, r) for r in plan.resources])
        )
        for d in stack.diagnostics:
            key = d.urn.split("::", 2)[2] if d.urn else None
            theirs.add((d.policyName, key, level_names[d.enforcementLevel]))
    assert {rule for rule, _, level in theirs if level == "mandatory"} == {
        r for r, _, lvl in ours if lvl == "mandatory"
    }
    assert theirs == ours


def test_gpufleet_check_builds_args_only_for_resources_a_scoped_rule_applies_to() -> None:
    """`gpufleet check` skips what a scoped rule ignores; the rule's own validate uses the same `applies`."""
    from gpufleet.review import check
    from policies.common import ScopedResourcePolicy
    from tests.policies import fixtures as fx

    plan = fx.plan(*fx.tenant_bundle("research"), fx.node_group(), fx.bucket())
    view = check._View(plan)
    scoped = [p for pack in check.packs() for p in pack.policies if isinstance(p, ScopedResourcePolicy)]
    assert scoped, "the packs' resource rules are scoped"
    for policy in scoped:
        seen = [r.key for r, _ in view.resource_args(None, policy)]
        assert seen == [r.key for r in plan.resources if policy.applies(r.type, r.inputs)], policy.name
    assert any(not p.applies("aws:s3/bucket:Bucket", {}) for p in scoped)
