"""Objects against the real schemas: Kubernetes OpenAPI of the pinned minor (kubernetes-validate's bundle) and CRD
openAPIV3Schema at the pinned tags, with unknown fields and CEL rules on create."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from gpufleet.charts.cache import ENV_VAR, ChartCache
from gpufleet.charts.operator_crds import (
    APPLIED_FILES,
    CONFIG_FILE,
    SOURCES,
    applied_objects,
    data_file,
    generate,
    generate_applied,
    operator_crds,
)
from gpufleet.charts.render import render_chart
from gpufleet.engine.plan import Plan
from gpufleet.review.reality.validate import builtin_issues, bundled_versions, crd_issues, python_pattern
from model import versions
from model.spec import EksCluster


@pytest.fixture(scope="module")
def kueue_crds(chart_cache: ChartCache) -> dict[str, dict[str, Any]]:
    # kubernetes-sigs/kueue v0.19.2 charts/kueue/templates/crd/*.yaml
    rendered = render_chart(chart_cache.locate(versions.KUEUE), {}, name="kueue", namespace="kueue-system")
    return {
        o.manifest["spec"]["names"]["kind"]: o.manifest
        for o in rendered.objects
        if o.kind == "CustomResourceDefinition"
    }


def test_the_default_and_example_kubernetes_versions_have_bundled_schemas() -> None:
    assert EksCluster.model_fields["version"].default in bundled_versions()
    assert "1.34" in bundled_versions()


def test_core_object_with_a_wrong_type_is_reported_with_its_path() -> None:
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "q", "namespace": "t"},
        "spec": {"hard": ["requests.nvidia.com/gpu=8"]},
    }
    issues = builtin_issues(quota, "1.34")
    assert issues and [i.path for i in issues] == ["spec.hard"]
    assert "is not of type 'object'" in issues[0].message


def test_core_object_with_an_unknown_field_is_reported() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t", "labelz": {"a": "b"}}}
    issues = builtin_issues(ns, "1.34")
    assert (
        issues
        and issues[0].path == "metadata"
        and "unknown field" in issues[0].message
        and "labelz" in issues[0].message
    )


def test_every_error_is_reported_not_only_the_first() -> None:
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"replicas": "two", "paused": "yes", "selector": {}, "template": {}},
    }
    assert {i.path for i in builtin_issues(deploy, "1.34") or []} == {"spec.replicas", "spec.paused"}


def test_a_patch_is_not_asked_for_required_fields() -> None:
    patch = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "spec": {"taints": [{"key": "k"}]}}
    assert builtin_issues(patch, "1.34", partial=True) == []
    assert [i.message for i in builtin_issues(patch, "1.34") or []] == ["'effect' is a required property"]


def test_a_result_kept_by_value_is_only_for_a_value_of_the_same_types() -> None:
    # 1 == True in Python, but the schema tells them apart: a result kept for one must not answer for the other
    def paths(priority: Any) -> set[str]:
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"priority": priority}}
        return {i.path for i in builtin_issues(pod, "1.34") or []}

    assert "spec.priority" not in paths(1)
    assert "spec.priority" in paths(True)
    assert "spec.priority" in paths("1")
    assert "spec.priority" not in paths(1)


def test_a_kept_result_is_a_new_list_each_time() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t", "labelz": {}}}
    (builtin_issues(ns, "1.34") or []).clear()
    assert builtin_issues(ns, "1.34")


def test_unknown_kind_is_not_a_builtin() -> None:
    assert builtin_issues({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue"}, "1.34") is None


def test_unknown_field_in_a_custom_resource_is_reported_not_pruned(kueue_crds: dict[str, dict[str, Any]]) -> None:
    flavor = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "h100"},
        "spec": {"nodeLabelz": {"pool": "h100"}},
    }
    issues = crd_issues(flavor, kueue_crds["ResourceFlavor"])
    assert [(i.path, "nodeLabelz" in i.message and "unknown field" in i.message) for i in issues] == [("spec", True)]


def test_cel_rule_of_the_crd_is_evaluated_on_create(kueue_crds: dict[str, dict[str, Any]]) -> None:
    # ClusterQueue resourceGroups: `self.flavors.all(x, size(x.resources) == size(self.coveredResources))`
    def queue(resources: list[str]) -> dict[str, Any]:
        return {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "q"},
            "spec": {
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "nvidia.com/gpu"],
                        "flavors": [{"name": "h100", "resources": [{"name": r, "nominalQuota": 1} for r in resources]}],
                    }
                ]
            },
        }

    assert crd_issues(queue(["cpu", "nvidia.com/gpu"]), kueue_crds["ClusterQueue"]) == []
    (issue,) = crd_issues(queue(["cpu"]), kueue_crds["ClusterQueue"])
    assert issue.path == "spec.resourceGroups[0]" and "size(self.coveredResources)" in issue.message
    assert not issue.unchecked


def test_transition_rules_do_not_apply_on_create(kueue_crds: dict[str, dict[str, Any]]) -> None:
    flavor = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "h100"},
        "spec": {"nodeLabels": {"pool": "h100"}, "topologyName": "dc"},
    }
    assert crd_issues(flavor, kueue_crds["ResourceFlavor"]) == []  # rules on oldSelf skipped, others pass


def test_operator_applied_crd_is_the_sourced_upstream_one() -> None:
    (ippool,) = [c for c in operator_crds() if c.crd["spec"]["names"]["kind"] == "IPPool"]
    tag = f"v{versions.NETWORK_OPERATOR.version}"
    assert (
        ippool.source
        == f"Mellanox/network-operator@{tag}:manifests/state-nv-ipam-cni/005-nv-ipam.nvidia.com_ippools.yaml"
    )
    assert (ippool.chart, ippool.version) == (versions.NETWORK_OPERATOR.name, versions.NETWORK_OPERATOR.version)
    pool = {
        "apiVersion": "nv-ipam.nvidia.com/v1alpha1",
        "kind": "IPPool",
        "metadata": {"name": "ib", "namespace": "n"},
        "spec": {"subnet": "192.168.0.0/16", "perNodeBlockSize": "256"},
    }
    assert [i.path for i in crd_issues(pool, ippool.crd)] == ["spec.perNodeBlockSize"]


def test_go_inline_flags_are_moved_for_python_patterns() -> None:
    assert python_pattern("^(?i)abc$") == "(?i)^abc$"
    assert python_pattern("^abc$") == "^abc$"


def test_operator_crd_data_is_the_upstream_files_at_the_pinned_tag(tmp_path: Path) -> None:
    """Regenerating from the upstream files reproduces the committed data. An offline chart cache may hold those
    files as `operator-crds/<chart>-<version>-<file name>`; a cache `gpufleet charts pull` filled holds charts only,
    and then `python -m gpufleet.charts.operator_crds` (from the tag over HTTPS) is the same check."""
    upstream = Path(os.environ[ENV_VAR]) / "operator-crds"
    if not upstream.is_dir():
        pytest.skip(f"{upstream}: no copy of the operator-applied CRD files in this chart cache")
    for src in SOURCES:
        for path in src.paths:
            target = tmp_path / path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(upstream / f"{src.chart}-{src.version}-{Path(path).name}", target)
        fresh = generate(src, tmp_path)
        committed = json.loads(data_file(src).read_text())
        assert {**fresh, "generated": committed["generated"]} == committed


def test_applied_file_data_is_the_upstream_file_at_the_pinned_tag(tmp_path: Path) -> None:
    """The objects kept for each URL a ConfigFile applies are that file at its tag. An offline chart cache may hold
    it as `operator-crds/<file stem>-<tag>.yaml`; on a cache of charts only, `python -m gpufleet.charts.operator_crds`
    (from the tag over HTTPS) is the same check."""
    upstream = Path(os.environ[ENV_VAR]) / "operator-crds"
    if not upstream.is_dir():
        pytest.skip(f"{upstream}: no copy of the applied files in this chart cache")
    for src in APPLIED_FILES:
        target = tmp_path / src.path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(upstream / f"{Path(src.path).stem}-{src.tag}.yaml", target)
        fresh = generate_applied(src, tmp_path)
        committed = json.loads(data_file(src).read_text())
        assert {**fresh, "generated": committed["generated"]} == committed


def test_every_config_file_of_the_examples_has_its_objects_offline(example_plans: dict[str, Plan]) -> None:
    urls = {r.inputs["file"] for plan in example_plans.values() for r in plan.find(CONFIG_FILE)}
    assert urls == {versions.PROVISIONING_REQUEST_CRD_URL}
    (crd,) = applied_objects(versions.PROVISIONING_REQUEST_CRD_URL)
    assert crd["metadata"]["name"] == "provisioningrequests.autoscaling.x-k8s.io"
    assert builtin_issues(crd, "1.34") == []


@pytest.mark.parametrize("arg", ["/tmp/checkout", "Mellanox/network-operator=", "=/tmp/checkout"])
def test_regenerating_operator_crds_refuses_a_source_without_its_repository(arg: str) -> None:
    # `--source DIR` was the old form: read as a repository named DIR, it would fetch over HTTPS without a word.
    from gpufleet.charts.operator_crds import main

    with pytest.raises(SystemExit) as e:
        main(["--source", arg])
    assert e.value.code == 2


def test_the_nccl_jobset_of_the_stack_file_doc_is_a_valid_jobset(chart_cache: ChartCache) -> None:
    """docs/stack-file.md shows MPI nccl-tests as a JobSet (no MPI Operator is offered); it must be a JobSet the
    pinned JobSet CRD accepts (kubernetes-sigs/jobset charts/jobset/crds at versions.JOBSET)."""
    import yaml

    text = (Path(__file__).parents[3] / "docs" / "stack-file.md").read_text()
    (block,) = [b for b in text.split("```yaml\n")[1:] if "kind: JobSet" in b]
    jobset = yaml.safe_load(block.split("```")[0])
    folder = chart_cache.locate(versions.JOBSET).path
    crd = yaml.safe_load((folder / "crds" / "jobset.x-k8s.io_jobsets.yaml").read_text())
    assert crd_issues(jobset, crd) == []
    broken = {**jobset, "spec": {**jobset["spec"], "startupPolicy": {"startupPolicyOrder": "Launcher-first"}}}
    assert crd_issues(broken, crd)
