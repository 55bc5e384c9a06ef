"""Terminal output: the preview text carries the tree, the cost envelope and the policy findings."""

from __future__ import annotations

from rich.console import Console

from gpufleet.render.preview import preview_text
from model.load import parse_estate
from tests.review.estates import BUDGET, TAGS, changed, review_of


def test_text_renderer_takes_cost_and_findings_for_preview() -> None:
    spec = parse_estate(changed(), "head")
    console = Console(record=True, width=200)
    preview_text(review_of(spec, [BUDGET, TAGS]), console)
    text = console.export_text()
    for pool in ("h100", "agents-g6e", "l40s", "owned"):
        assert f"/{pool}" in text
    assert "mandatory cost-tags/budget-at-max-size" in text and "Estate: min ≥ $82.10" in text


def test_preview_shows_each_pools_detectors_and_remediator() -> None:
    spec = parse_estate(changed(), "head")
    console = Console(record=True, width=200)
    preview_text(review_of(spec, [BUDGET, TAGS]), console)
    text = console.export_text()
    assert "Node health" in text
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith("h100 (")]
    assert lines == [
        "h100 (use1): detectors node-monitoring-agent, dcgm; remediator eks-node-repair (EKS's default unhealthy "
        "threshold, 1 at a time)"
    ]
