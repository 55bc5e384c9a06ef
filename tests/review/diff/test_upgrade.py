"""`gpufleet diff` of a Kubernetes bump on an example stack: the changes in the order an `up` applies them, and a
skipped minor refused before either side is reviewed (model.rules.upgrade)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpufleet.review.diff.plans import DiffError
from gpufleet.review.diff.revision import addon_versions, diff_revision
from model import versions
from model.rules.upgrade import addon_step_problems
from tests.conftest import example_config
from tests.review.repos import commit, init_repo, write_stack


def _bump(tmp_path: Path, config: dict[str, Any], version: str) -> Path:
    repo = init_repo(tmp_path, None)
    write_stack(repo, "aws-train", config)
    commit(repo, "base")
    config["gpufleet:estate"]["sites"][0]["cluster"]["version"] = version
    write_stack(repo, "aws-train", config)
    return repo


def test_a_one_minor_bump_lists_control_plane_add_ons_and_node_groups_in_the_order_up_moves_them(
    tmp_path: Path,
) -> None:
    repo = _bump(tmp_path, example_config("aws-train"), "1.35")
    d = diff_revision(repo, "aws-train", "main")
    assert not (d.added or d.removed or d.replaced)
    changed = [(c.resource.name, {p.path for p in c.changes}) for c in d.changed]
    names = [n for n, _ in changed]
    assert names[0] == "use1-cluster-eks" and dict(changed)["use1-cluster-eks"] == {"version"}
    # vpc-cni's pinned build serves both minors, so it does not move; kube-proxy does, before any node
    assert "use1-cluster-vpc-cni" not in names
    assert names.index("use1-cluster-eks") < names.index("use1-cluster-kube-proxy") < names.index("use1-cluster-system")
    assert dict(changed)["use1-cluster-kube-proxy"] == {"addonVersion"}
    assert names.index("use1-cluster-system") < names.index("use1-cluster-coredns") < names.index("use1-h100-ng")
    for group in ("use1-cluster-system", "use1-h100-ng", "use1-l40s-ng", "use1-agents-l40s-ng"):
        assert "version" in dict(changed)[group]  # the AMI release follows the version unless a pool pins one


def test_a_bump_that_skips_a_minor_is_refused_naming_the_rule(tmp_path: Path) -> None:
    repo = _bump(tmp_path, example_config("aws-train"), "1.36")
    with pytest.raises(
        DiffError,
        match=r"sites\[0\]\.cluster\.version: 1\.34 -> 1\.36 skips a Kubernetes minor \(one-minor-at-a-time\)",
    ):
        diff_revision(repo, "aws-train", "main")


def test_vpc_cni_moving_two_minors_in_one_step_is_refused_with_the_step_to_take_first() -> None:
    """The EKS user guide recommends updating the VPC CNI add-on one minor version at a time (vpc-add-on-update):
    gpufleet's earlier pin v1.21.1-eksbuild.7 straight to v1.23.1 is refused, naming v1.22; one minor passes."""
    base = {("c", "vpc-cni"): "v1.21.1-eksbuild.7", ("c", "coredns"): "v1.11.4-eksbuild.2"}
    head = {("c", "vpc-cni"): versions.VPC_CNI_ADDON, ("c", "coredns"): "v1.13.2-eksbuild.7"}
    (problem,) = addon_step_problems(base, head)
    assert "add-on vpc-cni v1.21.1-eksbuild.7 -> v1.23.1-eksbuild.1 skips a minor (one-minor-at-a-time)" in problem
    assert "latest v1.22 build" in problem
    # Review of L, defect 1: the refusal compares the two revisions' pins, not the live add-on, so it says how
    # to get past it once the live add-on took the intermediate minor.
    assert "compares the two revisions' pins, not the live add-on" in problem
    assert "once the live add-on runs v1.22 (`aws eks describe-addon`)" in problem
    assert "with `gpufleet preview` instead of this diff" in problem
    assert addon_step_problems({("c", "vpc-cni"): "v1.22.3-eksbuild.1"}, head) == []


def test_the_diff_reads_each_clusters_pinned_add_on_versions_from_the_plan(tmp_path: Path) -> None:
    from gpufleet.engine.synth import synth_stack
    from model.load import read_stack

    repo = _bump(tmp_path, example_config("aws-train"), "1.34")
    plan = synth_stack(repo, "aws-train", read_stack(repo, "aws-train"))
    pinned = {addon: v for (_, addon), v in addon_versions(plan).items()}
    assert pinned["vpc-cni"] == versions.VPC_CNI_ADDON


def test_the_1_35_bump_of_aws_train_moves_the_autoscaler_to_the_chart_of_its_minor_after_the_node_groups(
    tmp_path: Path,
) -> None:
    """The done-when diff: aws-train as it is (autoscaled pools). cluster-autoscaler's minor must match the control
    plane's (cluster-autoscaler README, "Releases"), so the bump also moves it to chart 9.54.0 (appVersion 1.35.0,
    kubernetes/autoscaler tag cluster-autoscaler-chart-9.54.0), after the pools it scales."""
    repo = _bump(tmp_path, example_config("aws-train"), "1.35")
    d = diff_revision(repo, "aws-train", "main")
    assert not (d.added or d.removed or d.replaced)
    names = [c.resource.name for c in d.changed]
    assert names[0] == "use1-cluster-eks"
    assert names.index("use1-cluster-kube-proxy") < names.index("use1-cluster-system") < names.index("use1-h100-ng")
    assert names.index("use1-cluster-coredns") < names.index("use1-h100-ng")
    assert names[-1] == "use1-autoscaler-release"
    (release,) = [c for c in d.changed if c.resource.name == "use1-autoscaler-release"]
    assert {p.path for p in release.changes} == {"version", "values.image.tag"}  # chart and image of 1.35
    assert release.resource.inputs["version"] == versions.EKS_MINORS["1.35"].cluster_autoscaler.version
