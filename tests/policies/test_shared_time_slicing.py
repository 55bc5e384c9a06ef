"""A time-sliced L40S pool shared by two trusted tenants that accept no isolation passes `gpufleet check` and the
real policy pack (`python -m pulumi.policy`, configured as `pulumi preview --policy-pack-config` would) only with
the config gpufleet writes from the stack; lowering the rule's enforcement instead is refused (exit 2, nothing
written).

Time-slicing: NVIDIA GPU Operator, "Time-Slicing GPUs in Kubernetes"
(https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-sharing.html). Policy config: Pulumi
CrossGuard configuration (https://www.pulumi.com/docs/iac/using-pulumi/crossguard/configuration/).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pulumi.runtime.proto import analyzer_pb2
from typer.testing import CliRunner

from components.kubernetes.admission import TOLERATIONS_POLICY
from gpufleet.charts.cache import ChartCache
from gpufleet.cli.app import app
from gpufleet.engine.plan import Plan
from gpufleet.review import check
from gpufleet.review.reality.checks import render
from gpufleet.review.reality.first_up_nodes import node_group_node
from gpufleet.review.reality.scheduling import fits, pod_spec
from model.load import ESTATE_KEY, parse_estate
from tests.conftest import example_config, write_project
from tests.kubernetes.tenancy.test_admission_cel import refused
from tests.policies.test_packs import _configure, _resource, analyzers  # noqa: F401 (analyzers: a fixture)
from tests.review.reality.conftest import chart_cache_root

RULE = "time-slicing-single-tenant"


def _shared_l40s() -> dict[str, Any]:
    config = example_config("aws-train")
    pool = next(p for p in config[ESTATE_KEY]["sites"][0]["node_pools"] if p["name"] == "l40s")
    pool["sharing"] = {
        "mode": "time-slicing",
        "replicas": 4,
        "shared_by": ["research", "product"],
        "accept_no_isolation": True,
    }
    return config


def _analyzer_flags(stub: Any, plan: Plan, config_file: Path) -> set[str]:
    _configure(stub, config_file)
    stack = stub.AnalyzeStack(analyzer_pb2.AnalyzeStackRequest(resources=[_resource(plan, r) for r in plan.resources]))
    return {d.policyName for d in stack.diagnostics}


def test_declared_shared_l40s_passes_both_checks_only_with_the_written_config(
    analyzers: dict[str, Any],  # noqa: F811
    synth_config: Callable[[dict[str, Any]], Plan],
    tmp_path: Path,
) -> None:
    config = _shared_l40s()
    plan = synth_config(config)
    spec = parse_estate(config[ESTATE_KEY], "shared-l40s")
    assert check.evaluate(plan, spec).mandatory == []
    (written,) = [p for p in check.write_configs(spec, tmp_path / "cfg") if p.stem == "gpu_guardrails"]
    assert json.loads(written.read_text())[RULE]["timeSlicingSharedPools"] == {"l40s": ["research", "product"]}
    assert RULE not in _analyzer_flags(analyzers["gpu_guardrails"], plan, written)
    # Without the stack's config (a hand-run `pulumi preview --policy-pack` with none) the pool is a violation
    # in both, mandatory: the default is the strict rule.
    empty = tmp_path / "empty.json"
    empty.write_text("{}")
    assert RULE in _analyzer_flags(analyzers["gpu_guardrails"], plan, empty)
    found = check.run(plan, None, only={RULE})
    assert [f.enforcement for f in found] == ["mandatory"] and "l40s" in found[0].message


def test_lowering_time_slicing_enforcement_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    config = example_config("aws-train")
    config[ESTATE_KEY]["policies"]["enforcement"] = {RULE: "advisory"}
    project = write_project(tmp_path, config)
    out = tmp_path / "policy-config"
    result = CliRunner().invoke(
        app, ["check", "--stack", "test", "--project", str(project), "--write-config", str(out)]
    )
    assert result.exit_code == 2, result.output
    assert f"policies.enforcement.{RULE}: advisory is refused" in result.output
    assert "Traceback" not in result.output
    assert not out.exists()


def test_an_override_of_a_rule_the_schema_does_not_enforce_is_honoured_by_both(
    analyzers: dict[str, Any],  # noqa: F811
    broken: tuple[Plan, Any],
    tmp_path: Path,
) -> None:
    """The broken stack's gpu-instance-allowlist violation, lowered to advisory: `gpufleet check` and the real
    pack (with the config `--write-config` writes) both report it advisory, and disabled both drop it."""
    plan, spec = broken
    rule = "gpu-instance-allowlist"
    for level, expected in (("advisory", {analyzer_pb2.ADVISORY}), ("disabled", set())):
        lowered = spec.model_copy(update={"policies": spec.policies.model_copy(update={"enforcement": {rule: level}})})
        ours = {f.enforcement for f in check.evaluate(plan, lowered) if f.rule == rule}
        assert ours == ({"advisory"} if expected else set())
        (written,) = [p for p in check.write_configs(lowered, tmp_path / level) if p.stem == "cost_tags"]
        stub = analyzers["cost_tags"]
        _configure(stub, written)
        theirs = set()
        for r in plan.resources:
            full = _resource(plan, r)
            req = analyzer_pb2.AnalyzeRequest(type=r.type, properties=full.properties, urn=full.urn, name=r.name,
                                              options=full.options)  # fmt: skip
            theirs |= {d.enforcementLevel for d in stub.Analyze(req).diagnostics if d.policyName == rule}
        assert theirs == expected, level


def test_a_shared_pool_is_tainted_for_its_named_tenants_only(
    synth_config: Callable[[dict[str, Any]], Plan],
) -> None:
    """The shared L40S nodes carry `gpufleet.io/shared-pool=l40s:NoSchedule`; Kueue adds the toleration to the
    named tenants' admitted pods (their flavor), the GPU Operator's DaemonSets tolerate it (its pinned chart, rendered), and the tenant-tolerations admission policy refuses it in another tenant's
    pods (its CEL evaluated with cel-python, as in tests/kubernetes/tenancy/test_admission_cel.py)."""
    config = _shared_l40s()
    plan = synth_config(config)
    spec = parse_estate(config[ESTATE_KEY], "shared-l40s")
    taint = {"key": "gpufleet.io/shared-pool", "value": "l40s", "effect": "NO_SCHEDULE"}
    (group,) = [r for r in plan.resources if r.type == "aws:eks/nodeGroup:NodeGroup" and r.name == "use1-l40s-ng"]
    assert taint in group.inputs["taints"]
    (flavor,) = [
        r for r in plan.resources if r.inputs.get("kind") == "ResourceFlavor" and r.inputs["metadata"]["name"] == "l40s"
    ]
    toleration = {"key": "gpufleet.io/shared-pool", "operator": "Equal", "value": "l40s", "effect": "NoSchedule"}
    assert toleration in flavor.inputs["spec"]["tolerations"]
    # The GPU Operator chart (pinned, rendered from the chart cache) as the l40s nodes see it: its ClusterPolicy's
    # daemonsets.tolerations (the operator copies them into every operand DaemonSet: driver, toolkit, device
    # plugin, DCGM exporter, MIG manager) and the node-feature-discovery worker DaemonSet must tolerate the node.
    node = node_group_node(group)
    releases = render(plan, ChartCache(chart_cache_root()))
    objects = [o for rel in releases.values() for o in rel.objects]
    (policy_cr,) = [o.manifest for o in objects if o.kind == "ClusterPolicy"]
    assert fits({"tolerations": policy_cr["spec"]["daemonsets"]["tolerations"]}, node)
    (nfd_worker,) = [
        o.manifest for o in objects if o.kind == "DaemonSet" and "worker" in o.manifest["metadata"]["name"]
    ]
    worker = pod_spec(nfd_worker)
    assert worker is not None and fits(worker, node)
    assert spec.pool("l40s").sharing.shared_by == ["research", "product"]

    (policy,) = [
        r for r in plan.resources
        if r.type.endswith("ValidatingAdmissionPolicy") and r.inputs["metadata"]["name"] == TOLERATIONS_POLICY
    ]  # fmt: skip
    pod = {"spec": {"containers": [{"name": "a"}], "tolerations": [toleration]}}
    for tenant, refused_messages in (("research", 0), ("product", 0), ("agents", 1)):
        namespace = {"metadata": {"name": tenant, "labels": {"tenant": tenant}}}
        assert len(refused(policy.inputs["spec"]["validations"], pod, namespace=namespace)) == refused_messages
