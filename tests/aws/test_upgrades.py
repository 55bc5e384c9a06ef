"""Kubernetes upgrades on EKS: what moves with the minor, in which order, and the support policy.

EKS user guide, update-cluster: update the control plane, then the add-ons, then the nodes; it updates no add-on
or node group by itself (updating-an-add-on; kubernetes-versions, "Amazon EKS version FAQs").
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from gpufleet.engine.plan import Plan, PlanResource
from gpufleet.engine.synth import synth_stack
from gpufleet.review.diff.plans import dependency_order
from model import versions
from model.load import read_stack
from tests.conftest import example_config, write_project

ADDON = "aws:eks/addon:Addon"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"


def _fixed_size(config: dict[str, Any]) -> dict[str, Any]:
    """Every pool at its max: no autoscaler, so the site may run a minor without a pinned one."""
    for p in config["gpufleet:estate"]["sites"][0]["node_pools"]:
        p["scaling"] = {"min": p["scaling"]["max"], "max": p["scaling"]["max"]}
    return config


def _synth(tmp: Path, config: dict[str, Any], now: dt.datetime | None = None) -> Plan:
    project = write_project(tmp, config)
    return synth_stack(project, "test", read_stack(project, "test"), now=now)


def _addons(plan: Plan) -> dict[str, PlanResource]:
    return {r.inputs["addonName"]: r for r in plan.find(ADDON)}


def test_coredns_and_kube_proxy_are_eks_add_ons_at_the_builds_pinned_for_the_minor(
    example_plans: dict[str, Plan],
) -> None:
    addons = _addons(example_plans["aws-train"])
    for name, version in versions.EKS_MINORS["1.34"].addons:
        assert addons[name].inputs["addonVersion"] == version


def test_every_node_group_runs_the_clusters_minor_and_pins_no_ami_release_it_does_not_ask_for(
    example_plans: dict[str, Plan],
) -> None:
    """No default AMI pin: EKS refuses to move a group to an older AMI release (API_UpdateNodegroupVersion: "You
    cannot roll back a node group to an earlier Kubernetes version or AMI version"), so a default pin older than
    what a group runs would fail the `up`; unpinned, EKS takes the newest release for the group's version."""
    groups = example_plans["aws-train"].find(NODE_GROUP)
    assert groups
    for g in groups:
        assert g.inputs["version"] == "1.34" and "releaseVersion" not in g.inputs
        # rolling replacement: one node at a time, drained honouring PodDisruptionBudgets (managed-node-update-behavior)
        assert g.inputs["updateConfig"] == {"maxUnavailable": 1}


def test_an_up_moves_control_plane_then_add_ons_then_node_groups_then_the_autoscaler(
    example_plans: dict[str, Plan],
) -> None:
    plan = example_plans["aws-train"]
    rank = dependency_order(plan)
    cluster = plan.one("aws:eks/cluster:Cluster", "use1-cluster-eks").key
    addons = _addons(plan)
    before_nodes = [addons[a].key for a in ("vpc-cni", "kube-proxy", "eks-pod-identity-agent")]
    system = plan.one(NODE_GROUP, "use1-cluster-system").key
    pools = [g.key for g in plan.find(NODE_GROUP) if g.key != system]
    autoscaler = plan.one("kubernetes:helm.sh/v3:Release", "use1-autoscaler-release").key
    assert all(rank[cluster] < rank[a] < rank[system] for a in before_nodes)
    assert rank[system] < rank[addons["coredns"].key] < min(rank[p] for p in pools)
    assert max(rank[p] for p in pools) < rank[autoscaler]


def test_a_pool_may_pin_its_own_ami_release_for_the_minor(tmp_path: Path) -> None:
    config = example_config("aws-train")
    config["gpufleet:estate"]["sites"][0]["node_pools"][0]["ami_release"] = "1.34.8-20260630"
    plan = _synth(tmp_path, config)
    releases = {g.name: g.inputs.get("releaseVersion") for g in plan.find(NODE_GROUP)}
    assert releases["use1-h100-ng"] == "1.34.8-20260630"
    assert releases["use1-l40s-ng"] is None


def test_the_upgrade_policy_is_the_stacks_support_type(tmp_path: Path, example_plans: dict[str, Plan]) -> None:
    default = example_plans["aws-train"].one("aws:eks/cluster:Cluster", "use1-cluster-eks")
    assert default.inputs["upgradePolicy"] == {"supportType": "EXTENDED"}
    config = example_config("aws-train")
    config["gpufleet:estate"]["sites"][0]["cluster"].update(version="1.35", support_type="STANDARD")
    cluster = _synth(tmp_path, config).one("aws:eks/cluster:Cluster", "use1-cluster-eks")
    assert cluster.inputs["upgradePolicy"] == {"supportType": "STANDARD"}


@pytest.mark.parametrize(("days", "warned"), [(61, False), (60, True)])
def test_synthesis_warns_within_sixty_days_of_the_end_of_standard_support(
    tmp_path: Path, days: int, warned: bool
) -> None:
    end = versions.EKS_MINORS["1.34"].end_of_standard_support
    now = dt.datetime.combine(end - dt.timedelta(days=days), dt.time(12), dt.UTC)
    plan = _synth(tmp_path, example_config("aws-train"), now=now)
    hits = [w for w in plan.warnings if "standard support for Kubernetes 1.34" in w]
    assert bool(hits) is warned, plan.warnings


def test_a_1_35_cluster_pins_the_1_35_builds(tmp_path: Path) -> None:
    config = _fixed_size(example_config("aws-train"))
    config["gpufleet:estate"]["sites"][0]["cluster"]["version"] = "1.35"
    plan = _synth(tmp_path, config)
    pins = versions.EKS_MINORS["1.35"]
    assert {n: r.inputs.get("addonVersion") for n, r in _addons(plan).items() if n in dict(pins.addons)} == dict(
        pins.addons
    )
    assert {g.inputs["version"] for g in plan.find(NODE_GROUP)} == {"1.35"}


def test_a_burst_node_group_never_runs_ahead_of_the_control_plane_it_joins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A burst command's `up` targets the burst node groups, not the cluster (gpufleet/burst/targets.py): after a
    `cluster.version` bump not yet applied, the cluster resource still reports the old minor. The burst group takes
    that minor, never the stack file's newer one (kubelet never newer than kube-apiserver:
    kubernetes.io/releases/version-skew-policy); other groups move with the full `up` that upgrades the cluster."""
    from gpufleet.engine import synth

    real = synth._RecordingMocks.new_resource

    def live_cluster(self: Any, args: Any) -> Any:
        rid, outputs = real(self, args)
        if args.typ == "aws:eks/cluster:Cluster":
            outputs = {**outputs, "version": "1.33"}  # the control plane as the targeted `up` reads it
        return rid, outputs

    monkeypatch.setattr(synth._RecordingMocks, "new_resource", live_cluster)
    proj = write_project(tmp_path, example_config("hybrid"), "hybrid")
    plan = synth_stack(proj, "hybrid", read_stack(proj, "hybrid"))
    groups = {r.name: r.inputs for r in plan.find("aws:eks/nodeGroup:NodeGroup")}
    (burst,) = [g for n, g in groups.items() if "burst-h100" in n]
    assert burst["version"] == "1.33"
    pinned = read_stack(proj, "hybrid").estate()
    cloud = next(s for s in pinned.sites if s.name == "cloud")
    assert cloud.cluster.version == "1.34"  # the stack file's pin, which a full `up` applies first


def test_the_pod_identity_agent_is_pinned_per_minor_like_vpc_cni_coredns_and_kube_proxy(
    example_plans: dict[str, Plan],
) -> None:
    """So a minor bump moves it in the ordered upgrade (before the node groups), not EKS's default of the day."""
    addons = _addons(example_plans["aws-train"])
    for minor in ("1.34", "1.35"):
        pinned = versions.eks_minor(minor)
        assert (
            pinned is not None and pinned.addon_version("eks-pod-identity-agent") == versions.POD_IDENTITY_AGENT_ADDON
        )
    assert addons["eks-pod-identity-agent"].inputs["addonVersion"] == versions.POD_IDENTITY_AGENT_ADDON
    # Pinned too: gpufleet's dcgmAgent values are in the add-on's configuration schema only from v1.6.0, and an
    # unpinned add-on would be EKS's default of the day, never moved by a bump.
    assert addons["eks-node-monitoring-agent"].inputs["addonVersion"] == versions.NODE_MONITORING_AGENT_ADDON
    assert all(versions.EKS_MINORS[m].addon_version("eks-node-monitoring-agent") for m in versions.EKS_MINORS)


def test_an_adopted_cluster_s_burst_node_group_keeps_a_version_offline(tmp_path: Path) -> None:
    """Review of L, defect 3: the offline mocks answer `aws.eks.Cluster.get` with no `version`, so the burst group
    of an adopted cluster lost its `version` (None); offline it falls back to the stack file's pin. A real read
    always reports one (EKS DescribeCluster `version`: docs.aws.amazon.com/eks/latest/APIReference/API_Cluster.html)."""
    config = example_config("hybrid")
    cloud = next(s for s in config["gpufleet:estate"]["sites"] if s["name"] == "cloud")
    cloud["cluster"]["adopt_name"] = "shared-prod"
    cloud.setdefault("kubernetes", {})["network_policy_cni"] = "vpc-cni"
    proj = write_project(tmp_path, config, "hybrid")
    plan = synth_stack(proj, "hybrid", read_stack(proj, "hybrid"))
    groups = {r.name: r.inputs for r in plan.find(NODE_GROUP)}
    assert groups["cloud-burst-h100-ng"]["version"] == "1.34"
