"""Renaming a pool with `renamed_from`: its node group, launch template and autoscaler tags keep their identity
(aliases, as the engine completes them), so `up` updates them instead of creating a second node group; what is
named after the pool (its Kueue ResourceFlavor) moves."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.engine.plan import Plan
from gpufleet.review.diff.plans import diff_plans
from model.load import ESTATE_KEY, SpecError, parse_estate
from tests.conftest import example_config

POOL = "gpufleet:index:Estate$gpufleet:aws:Site$gpufleet:aws:GpuNodePool"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"


def renamed(renamed_from: str | None) -> dict[str, Any]:
    """aws-train with pool h100 called h100x (and its tenants' quotas following it)."""
    config = example_config("aws-train")
    estate = config[ESTATE_KEY]
    pool = next(p for p in estate["sites"][0]["node_pools"] if p["name"] == "h100")
    pool["name"] = "h100x"
    if renamed_from:
        pool["renamed_from"] = renamed_from
    for t in estate["tenants"]:
        if "h100" in t.get("gpu_quota", {}):
            t["gpu_quota"]["h100x"] = t["gpu_quota"].pop("h100")
    return config


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Plan]:
    from gpufleet.engine.synth import synth
    from tests.conftest import ROOT, write_project

    out = {"before": synth(ROOT, "aws-train")}
    for label, old in (("aliased", "h100"), ("bare", None)):
        out[label] = synth(write_project(tmp_path_factory.mktemp(label), renamed(old)), "test")
    return out


def pool_resources(plan: Plan, pool: str) -> list[str]:
    component = f"{POOL}::use1-{pool}"
    return [component, *(r.key for r in plan.descendants(component))]


def test_every_resource_of_the_renamed_pool_aliases_its_old_key(plans: dict[str, Plan]) -> None:
    before, after = plans["before"], plans["aliased"]
    old = pool_resources(before, "h100")
    new = pool_resources(after, "h100x")
    assert len(old) == len(new) > 3  # the component, its launch template, node group and autoscaler tags
    aliases = {a for k in new for a in after.get(k).aliases}
    assert set(old) <= aliases
    ng = after.one(NODE_GROUP, "use1-h100x-ng")
    assert ng.aliases == [f"{POOL}$aws:eks/nodeGroup:NodeGroup::use1-h100-ng"]
    # Pulumi names the group and template (no name input), so the physical names stay with the aliased state.
    assert (
        "nodeGroupName" not in ng.inputs
        and "name" not in after.one("aws:ec2/launchTemplate:LaunchTemplate", "use1-h100x-lt").inputs
    )


def test_the_diff_moves_the_node_group_with_an_alias_and_replaces_it_without(plans: dict[str, Plan]) -> None:
    aliased = diff_plans(plans["before"], plans["aliased"])
    assert not [r for r in aliased.replaced if r.removed.type == NODE_GROUP]
    assert not [r for r in aliased.removed if r.type == NODE_GROUP]
    moved = [c for c in aliased.changed if c.resource.type == NODE_GROUP and c.renamed_from]
    assert [c.renamed_from.rsplit("::", 1)[-1] for c in moved if c.renamed_from] == ["use1-h100-ng"]
    bare = diff_plans(plans["before"], plans["bare"])
    assert [r.removed.name for r in bare.replaced if r.removed.type == NODE_GROUP] == ["use1-h100-ng"]
    # kept, but the launch template names the pool (its description), so the new template version rolls the nodes
    from gpufleet.render.diff import node_groups_renamed

    lt = next(c for c in aliased.changed if c.resource.type == "aws:ec2/launchTemplate:LaunchTemplate")
    assert "description" in {p.path for p in lt.changes}
    note = node_groups_renamed(aliased)
    assert note is not None and "use1-h100x-ng renamed with an alias" in note and "replaces every node once" in note
    assert node_groups_renamed(bare) is None


def test_what_is_named_after_the_pool_moves(plans: dict[str, Plan]) -> None:
    """A Kubernetes name cannot change: the pool's ResourceFlavor is a new object under the new name."""
    aliased = diff_plans(plans["before"], plans["aliased"])
    gone = {r.inputs.get("metadata", {}).get("name") for r in aliased.removed if r.type.endswith(":ResourceFlavor")}
    gone |= {
        r.removed.inputs.get("metadata", {}).get("name")
        for r in aliased.replaced
        if r.removed.type.endswith(":ResourceFlavor")
    }
    assert "h100" in gone


@pytest.mark.parametrize("old", ["l40s", "h100x"])
def test_renamed_from_may_not_name_a_pool_the_site_still_has(old: str) -> None:
    estate = renamed(old)[ESTATE_KEY]
    with pytest.raises(SpecError, match=r"sites\[0\]\.node_pools\[0\]\.renamed_from: " + old):
        parse_estate(estate, "aws-train")


def test_the_diff_warns_that_a_node_group_renamed_without_an_alias_doubles_the_pool(plans: dict[str, Plan]) -> None:
    from gpufleet.render.diff import diff_markdown

    md = diff_markdown(diff_plans(plans["before"], plans["bare"]))
    assert "Node group use1-h100-ng: the new group is created before the old one is deleted" in md
    assert "renamed_from: <old name>" in md
    assert "Node group" not in diff_markdown(diff_plans(plans["before"], plans["aliased"]))


def test_renamed_from_is_refused_on_a_burst_pool() -> None:
    """A burst pool's node group is named after the pool (model/kinds/aws.py burst_node_group_name) and EKS node
    group names cannot change, so an alias would not keep it: the rename replaces the group."""
    estate = example_config("hybrid")[ESTATE_KEY]
    site, pool = next((s, p) for s in estate["sites"] for p in s.get("node_pools", []) if p.get("burst"))
    i, j = estate["sites"].index(site), site["node_pools"].index(pool)
    pool["renamed_from"], pool["name"] = pool["name"], pool["name"] + "-x"
    with pytest.raises(SpecError, match=rf"sites\[{i}\]\.node_pools\[{j}\]\.renamed_from: pool .* is a burst pool"):
        parse_estate(estate, "hybrid")
