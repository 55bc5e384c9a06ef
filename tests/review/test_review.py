"""The Review: built once from one read of the stack file, bad input refused before synthesis, and the document
`gpufleet diff` reads from each revision."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.engine.plan import Plan
from gpufleet.review import review
from gpufleet.review.findings import Finding
from model import load
from model.load import ESTATE_KEY, SpecError
from tests.conftest import ROOT, example_config, write_project


def test_build_reads_the_stack_file_once(monkeypatch: pytest.MonkeyPatch, example_plans: dict[str, Plan]) -> None:
    reads: list[str] = []
    real = load.read_text  # every input file is read through the one loader's read_text

    def counting(path: Path, missing: str) -> str:
        if path.name.startswith("Pulumi.") and path.name != "Pulumi.yaml":
            reads.append(path.name)
        return real(path, missing)

    monkeypatch.setattr(load, "read_text", counting)
    r = review.build(ROOT, "hybrid")
    assert reads == ["Pulumi.hybrid.yaml"]
    # the one read carries everything: the spec, the burst window, the plan, its cost and its findings
    assert r.spec.metadata.name == "hyb" and r.plan.stack == "hybrid"
    assert r.cost.estate == "hyb" and r.findings is not None and r.scope.endswith("packs")
    assert r.plan.to_dict() == example_plans["hybrid"].to_dict()


def test_unknown_rule_id_is_refused_before_anything_is_synthesized(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = example_config("aws-train")
    config[ESTATE_KEY]["policies"]["enforcement"] = {"no-such-rule": "disabled"}
    project = write_project(tmp_path, config)
    monkeypatch.setattr(review, "synth_stack", lambda *a: pytest.fail("synthesized bad input"))
    with pytest.raises(SpecError) as e:
        review.build(project, "test")
    assert "policies.enforcement.no-such-rule: no policy rule has this id" in str(e.value)


def test_document_round_trips_the_plan_and_carries_cost_and_findings(
    monkeypatch: pytest.MonkeyPatch, example_plans: dict[str, Plan]
) -> None:
    monkeypatch.setattr(review, "synth_stack", lambda project, stack, stack_file, **_: example_plans[stack])
    r = review.build(ROOT, "aws-train")
    doc = r.document()
    assert Plan.from_dict(doc["plan"]).to_dict() == r.plan.to_dict()
    assert doc["cost"] == r.cost.to_dict()
    assert r.findings is not None and [Finding(**f) for f in doc["findings"]] == list(r.findings)
    assert r.first_up is not None and "first_up" not in doc  # simulated for preview/check; diff compares no first up


def test_a_tree_without_policy_packs_reviews_without_findings(
    monkeypatch: pytest.MonkeyPatch, example_plans: dict[str, Plan]
) -> None:
    monkeypatch.setattr(review, "policy_check", lambda: None)
    monkeypatch.setattr(review, "synth_stack", lambda project, stack, stack_file, **_: example_plans[stack])
    r = review.build(ROOT, "onprem")
    assert r.findings is None and r.document()["findings"] is None
