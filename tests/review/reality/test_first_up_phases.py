"""A hybrid estate whose deployer reaches the cloud API only over the Site-to-Site VPN the stack creates: the
first `up` is declared in two phases, and the first-up simulation says so (the VPN carries nothing until the
on-prem device is configured from the tunnels' details: AWS Site-to-Site VPN user guide, SetUpVPNConnections.html)."""

from __future__ import annotations

from gpufleet.engine.plan import Plan
from gpufleet.review.reality.first_up_phases import dependents, vpn_phases
from model.cni import K8S_PROVIDER_TYPE, k8s_provider_name
from model.spec import EstateSpec
from tests.conftest import example_estate
from tests.review.reality.conftest import Checked


def test_the_hybrid_first_up_is_two_phases_with_the_exact_exclusion(checked_examples: dict[str, Checked]) -> None:
    hybrid = checked_examples["hybrid"]
    [phase] = vpn_phases(hybrid.spec, hybrid.plan)
    provider = hybrid.plan.one(K8S_PROVIDER_TYPE, k8s_provider_name("cloud"))
    assert phase.site == "cloud" and phase.vpn_from == "onprem"
    assert phase.provider_urn == f"urn:pulumi:hybrid::{hybrid.plan.project}::{provider.key}"
    [note] = [n for n in hybrid.first_up.notes if "--exclude" in n]
    assert f"pulumi up --exclude '{phase.provider_urn}' --exclude-dependents" in note
    assert "then configure the device and run `pulumi up`" in note


def test_phase_one_builds_the_network_vpn_cluster_and_nodes_and_nothing_inside_the_cluster(
    checked_examples: dict[str, Checked],
) -> None:
    """What `--exclude-dependents` leaves out is exactly what needs the cloud API: every object sent through the
    cloud site's Kubernetes provider; none of the AWS resources phase 1 must create for the device to be set up."""
    hybrid = checked_examples["hybrid"]
    [phase] = vpn_phases(hybrid.spec, hybrid.plan)
    provider = hybrid.plan.one(K8S_PROVIDER_TYPE, k8s_provider_name("cloud"))
    through_cloud = {r.key for r in hybrid.plan.resources if r.provider == provider.key}
    assert through_cloud and through_cloud <= phase.deferred
    deferred_types = {hybrid.plan.get(k).type for k in phase.deferred}
    for needed in ("aws:ec2/vpnConnection:VpnConnection", "aws:eks/cluster:Cluster", "aws:eks/nodeGroup:NodeGroup"):
        assert needed not in deferred_types
        assert hybrid.plan.find(needed), needed  # phase 1 creates it
    assert not any(t.startswith("aws:ec2/") for t in deferred_types)


def test_dependents_follow_dependencies_providers_and_children(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["hybrid"]
    provider = plan.one(K8S_PROVIDER_TYPE, k8s_provider_name("cloud"))
    out = dependents(plan, provider.key)
    # a resource that depends on a deferred one is deferred too
    for r in plan.resources:
        if set(r.dependencies) & out:
            assert r.key in out, r.key


def test_no_phases_when_the_deployer_sits_inside_the_vpc_or_the_interconnect_is_no_vpn(
    example_plans: dict[str, Plan],
) -> None:
    estate = example_estate("hybrid")
    estate["deployer"] = {"network": "cloud", "cidrs": ["10.50.0.0/28"]}
    assert vpn_phases(EstateSpec.model_validate(estate), example_plans["hybrid"]) == []
    for stack in ("aws-train", "onprem"):
        assert vpn_phases(EstateSpec.model_validate(example_estate(stack)), example_plans[stack]) == []
