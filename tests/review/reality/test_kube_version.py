"""A pinned chart's Kubernetes range (Chart.yaml `kubeVersion`) against the EKS minor it is installed on."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gpufleet.charts.cache import ChartCache
from gpufleet.charts.kube_version import supports
from gpufleet.engine.plan import Plan
from gpufleet.review.reality.checks import kube_version_problems
from model.load import parse_estate
from tests.conftest import example_estate


@pytest.mark.parametrize(
    ("constraint", "version", "expected"),
    [
        (">=1.17.0-0", "1.34", True),  # aws-efs-csi-driver 4.4.1
        (">= 1.16.0-0", "1.35", True),  # gpu-operator v26.7.0
        (">=1.20.0-0 <1.34.0", "1.34", False),
        (">=1.20.0-0, <1.36.0", "1.35", True),
        ("<1.30 || >=1.35", "1.34", False),
        ("<1.30 || >=1.35", "1.35.2", True),
        ("~1.34", "1.34", None),  # not judged here
    ],
)
def test_kube_version_constraints_are_judged_as_helm_does(constraint: str, version: str, expected: bool | None) -> None:
    assert supports(constraint, version) is expected


def test_every_chart_on_an_eks_cluster_supports_its_minor(example_plans: dict[str, Plan]) -> None:
    spec = parse_estate(example_estate("aws-train"), "aws-train")
    assert kube_version_problems(example_plans["aws-train"], spec, ChartCache()) == []


def test_a_chart_whose_kube_version_excludes_the_minor_is_a_first_up_problem(
    tmp_path: Path, example_plans: dict[str, Plan]
) -> None:
    real = ChartCache().root
    for folder in real.iterdir():
        (tmp_path / folder.name).symlink_to(folder)
    efs = tmp_path / "aws-efs-csi-driver-4.4.1"
    efs.unlink()
    shutil.copytree(real / efs.name, efs)
    meta = efs / "Chart.yaml"
    meta.write_text(meta.read_text().replace('kubeVersion: ">=1.17.0-0"', 'kubeVersion: ">=1.17.0-0 <1.34.0-0"'))
    spec = parse_estate(example_estate("aws-train"), "aws-train")
    (problem,) = kube_version_problems(example_plans["aws-train"], spec, ChartCache(tmp_path))
    assert problem.name == "Release aws-efs-csi-driver" and problem.check == "chart"
    assert "Kubernetes 1.34 does not meet" in problem.message
