"""One home for shared keys (model/conventions.py): policies import nothing of components but the
model, and what the components write under those keys is what the policies read."""

from __future__ import annotations

import ast
from pathlib import Path

from gpufleet.engine.plan import Plan
from gpufleet.engine.synth import synth
from gpufleet.review import check
from model import conventions
from model.spec import EstateSpec
from model.tags import Tags
from tests.aws.ultraserver import gb200_config
from tests.conftest import ROOT, example_estate, write_project
from tests.kubernetes.test_metrics_stack import with_metrics_stack
from tests.policies import fixtures as fx


def components_imports(source: str) -> list[str]:
    """Every module of `components` a Python source imports, at any depth (function-local imports too)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module == "components":
            found += [f"components.{a.name}" for a in node.names]  # `from components import aws`
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("components."):
            found.append(str(node.module))
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == "components"]
    return found


def outside_model(modules: list[str]) -> list[str]:
    return [m for m in modules if m != "model" and not m.startswith("model.")]


def test_policies_import_nothing_of_components_but_the_model() -> None:
    offenders = {
        str(path.relative_to(ROOT)): bad
        for path in sorted((ROOT / "policies").rglob("*.py"))
        if (bad := outside_model(components_imports(path.read_text())))
    }
    assert offenders == {}


def test_the_import_walk_finds_a_function_local_import_of_a_component() -> None:
    source = "def f():\n    from components.kubernetes import namespaces\n    import components.aws.site\n"
    assert outside_model(components_imports(source)) == ["components.kubernetes", "components.aws.site"]
    assert outside_model(components_imports("from components import aws\n")) == ["components.aws"]
    assert outside_model(components_imports("from model import conventions\n")) == []


def test_aws_tags_carry_every_required_tag_key() -> None:
    spec = EstateSpec.model_validate(example_estate("aws-train"))
    tags = Tags.from_spec(spec).aws()
    assert set(conventions.REQUIRED_TAGS) <= set(tags)
    assert all(tags[k] for k in conventions.REQUIRED_TAGS)
    assert spec.metadata.required_tags == list(conventions.REQUIRED_TAGS)


def test_every_privileged_namespace_of_the_examples_is_registered_and_the_tenancy_pack_accepts_it(
    example_plans: dict[str, Plan], tmp_path: Path
) -> None:
    # The examples, aws-train with a GB200 UltraServer pool (NVIDIA's DRA driver namespace) and onprem with the
    # metrics stack installed (its node exporter's) between them use every registered namespace.
    (tmp_path / "gb200").mkdir()
    (tmp_path / "metrics").mkdir()
    plans = [
        *example_plans.values(),
        synth(write_project(tmp_path / "gb200", gb200_config()), "test"),
        synth(write_project(tmp_path / "metrics", with_metrics_stack()), "test"),
    ]
    for plan in plans:
        assert check.run(plan, None, only={"namespace-pod-security"}) == []
    privileged = {
        r.inputs["metadata"]["name"]
        for plan in plans
        for r in plan.resources
        if r.type.startswith("kubernetes:core/v1:Namespace")
        and (r.inputs["metadata"].get("labels") or {}).get("pod-security.kubernetes.io/audit") == "privileged"
    }
    assert privileged == conventions.PRIVILEGED_NAMESPACES


def test_the_tenancy_pack_refuses_a_privileged_namespace_outside_the_register() -> None:
    """The pack used to fall back to its own four-entry copy (with nvidia-network-operator, where gpufleet
    never installs anything) when it could not import the components; it now reads the one register."""
    labels = conventions.pod_security_labels("privileged")
    for name, flagged in (("nvidia-network-operator", True), ("gpu-operator", False)):
        ns = fx.k8s("Namespace", name, metadata={"labels": labels})
        found = check.run(fx.plan(ns), None, only={"namespace-pod-security"})
        assert bool(found) == flagged, (name, found)


def test_site_kind_of_urn_reads_the_site_component_type_token() -> None:
    under_aws = "urn:pulumi:s::gpufleet::gpufleet:index:Estate$gpufleet:aws:Site$kubernetes:helm.sh/v3:Release::op"
    site_itself = "urn:pulumi:s::gpufleet::gpufleet:index:Estate$gpufleet:baremetal:Site::onprem"
    assert conventions.site_kind_of_urn(under_aws) == "aws"
    assert conventions.site_kind_of_urn(site_itself) == "baremetal"
    assert conventions.site_kind_of_urn("urn:pulumi:s::gpufleet::gpufleet:index:Estate::e") is None


def test_site_components_register_under_the_conventions_type_tokens(example_plans: dict[str, Plan]) -> None:
    types = {r.type for r in example_plans["hybrid"].resources}
    assert {conventions.AWS_SITE_TYPE, conventions.BAREMETAL_SITE_TYPE} <= types


def test_eks_rejects_labels_under_reserved_prefixes_and_their_subdomains() -> None:
    assert conventions.eks_rejects_label(conventions.TENANT_NODE_LABEL)
    assert conventions.eks_rejects_label("kubernetes.io/hostname")
    assert not conventions.eks_rejects_label(conventions.DEDICATED_TENANT_LABEL)
    assert not conventions.eks_rejects_label(conventions.EFA_LABEL)


def test_keys_have_their_upstream_spelling() -> None:
    """Spelled out once here against the upstream names (GPU Operator / device plugin labels, Kubernetes Pod
    Security and NodeRestriction labels), so a typo in conventions.py cannot pass unnoticed."""
    assert conventions.GPU_PRESENT_LABEL == "nvidia.com/gpu.present"
    assert conventions.MIG_CONFIG_LABEL == "nvidia.com/mig.config"
    assert conventions.DEVICE_PLUGIN_CONFIG_LABEL == "nvidia.com/device-plugin.config"
    assert conventions.GPU_TAINT.as_k8s() == {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    assert conventions.pod_security_labels("baseline", ("enforce",)) == {
        "pod-security.kubernetes.io/enforce": "baseline"
    }
    assert conventions.TENANT_NODE_LABEL.startswith("node-restriction.kubernetes.io/")
