"""The teardown, simulated: Pulumi's rules for protected and retained resources, AWS's for what is still in use,
and every example estate torn down keeping its data with nothing failing."""

from __future__ import annotations

import dataclasses
import json

import pytest

from gpufleet.engine.plan import Plan
from gpufleet.review.reality.teardown import EKS_CLUSTER, SECURITY_GROUP, SUBNET, VPC, Mode, simulate
from tests.conftest import EXAMPLES
from tests.review.reality.plans import PlanBuilder

FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"
DATA = (FSX, "aws:efs/fileSystem:FileSystem", "aws:s3/bucket:Bucket")
MODES: tuple[Mode, ...] = ("exclude-protected", "unprotected")


def lustre(sg_retained: bool, fs: dict[str, bool]) -> tuple[Plan, dict[str, str]]:
    """A VPC, a subnet and a security group, and a file system with interfaces in them (options `fs`)."""
    b = PlanBuilder("use1", "aws")
    vpc = b.add(VPC, "vpc", {})
    subnet = b.add(SUBNET, "subnet", {}, [vpc])
    sg = b.add(SECURITY_GROUP, "sg", {}, [vpc])
    fs_key = b.add(FSX, "fs", {}, [subnet, sg])
    plan = Plan("p", "s", b.resources)
    for r in plan.resources:
        if r.key == fs_key:
            r.protect, r.retain_on_delete = fs["protect"], fs["retain"]
        if r.key == sg:
            r.retain_on_delete = sg_retained
    return Plan("p", "s", plan.resources), {"vpc": vpc, "subnet": subnet, "sg": sg, "fs": fs_key}


def test_exclude_protected_keeps_what_a_protected_resource_depends_on() -> None:
    plan, k = lustre(False, {"protect": True, "retain": True})
    t = simulate(plan, "exclude-protected")
    assert {k["fs"], k["sg"], k["subnet"], k["vpc"]} <= set(t.kept)
    assert not t.deleted and not t.failures


def test_a_retained_file_system_makes_its_security_group_and_subnet_fail_to_delete() -> None:
    plan, k = lustre(False, {"protect": False, "retain": True})
    t = simulate(plan, "exclude-protected")
    assert t.retained == [k["fs"]]
    assert t.deleted == [k["sg"], k["subnet"], k["vpc"]] or t.deleted == [k["subnet"], k["sg"], k["vpc"]]
    failed = {(f.resource, f.needed_by) for f in t.failures}
    assert failed == {(k["sg"], k["fs"]), (k["subnet"], k["fs"])}
    sg = next(f for f in t.failures if f.resource == k["sg"])
    assert "API_DeleteSecurityGroup" in sg.message and "LustreFileSystem fs" in sg.message


def test_a_retained_security_group_needs_its_vpc_retained_too() -> None:
    plan, k = lustre(True, {"protect": False, "retain": True})
    t = simulate(plan, "unprotected")
    assert [(f.resource, f.needed_by) for f in t.failures if f.resource == k["vpc"]] == [(k["vpc"], k["sg"])]
    assert "API_DeleteVpc" in next(f.message for f in t.failures if f.resource == k["vpc"])


def test_a_security_group_left_behind_naming_the_cluster_group_fails_the_cluster() -> None:
    b = PlanBuilder("use1", "aws")
    cluster = b.add(EKS_CLUSTER, "eks", {})
    sg = b.add(SECURITY_GROUP, "sg", {}, [cluster])
    plan = Plan("p", "s", b.resources)
    plan.get(sg).retain_on_delete = True
    t = simulate(Plan("p", "s", plan.resources), "unprotected")
    assert [(f.resource, f.needed_by) for f in t.failures] == [(cluster, sg)]


def test_dependents_are_deleted_before_what_they_depend_on() -> None:
    plan, k = lustre(False, {"protect": False, "retain": False})
    order = simulate(plan, "exclude-protected").deleted
    assert order.index(k["fs"]) < order.index(k["sg"]) < order.index(k["vpc"])
    assert order.index(k["subnet"]) < order.index(k["vpc"])


def physical(plan: Plan) -> set[str]:
    return {r.key for r in plan.resources if r.custom and not r.type.startswith("pulumi:")}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("stack", EXAMPLES)
def test_every_example_tears_down_keeping_its_data_with_no_failure(
    stack: str, mode: Mode, example_plans: dict[str, Plan]
) -> None:
    plan = example_plans[stack]
    t = simulate(plan, mode)
    assert not t.failures, [f.message for f in t.failures]
    left = set(t.kept) | set(t.retained)
    assert set(t.deleted) | left == physical(plan) and not set(t.deleted) & left
    data = {r.key for r in plan.resources if r.type in DATA}
    assert data <= left
    # Nothing that runs is left behind: clusters and node groups go.
    running = {r.key for r in plan.resources if r.type in (EKS_CLUSTER, "aws:eks/nodeGroup:NodeGroup")}
    assert running <= set(t.deleted)


def test_aws_train_keeps_the_network_its_lustre_file_system_is_in(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["aws-train"]
    network = {
        plan.one(VPC, "use1-net-vpc").key,
        plan.one(SUBNET, "use1-train-efa-subnet").key,
        plan.one(SECURITY_GROUP, "use1-storage-lustre-sg").key,
    }
    assert network <= set(simulate(plan, "exclude-protected").kept)
    assert network <= set(simulate(plan, "unprotected").retained)
    # The other subnets hold only EFS mount targets and nodes, which go first: they are deleted.
    assert plan.one(SUBNET, "use1-net-private-us-east-1a").key in simulate(plan, "unprotected").deleted


def test_the_lustre_security_group_names_no_cluster_group_inline(example_plans: dict[str, Plan]) -> None:
    """Its rules with the nodes are their own resources, deleted with the cluster; the group keeps none inline."""
    plan = example_plans["aws-train"]
    sg = plan.one(SECURITY_GROUP, "use1-storage-lustre-sg")
    assert not sg.inputs.get("ingress") and not sg.inputs.get("egress")
    assert not any(plan.get(d).type == EKS_CLUSTER for d in sg.dependencies)
    rules = [r for r in plan.resources if r.type.startswith("aws:vpc/securityGroup") and "storage-lustre" in r.name]
    fs = plan.one(FSX, "use1-storage-lustre")
    own = "use1-storage-lustre-sg-id"
    between = {
        r.key for r in rules if r.inputs.get("securityGroupId") == r.inputs.get("referencedSecurityGroupId") == own
    }
    assert between and between <= set(fs.dependencies)  # FSx checks port 988 from the group itself at creation
    ports = {(r.inputs["fromPort"], r.inputs["toPort"]) for r in rules}
    assert ports == {(988, 988), (1018, 1023)}


def unprotect_fsx_and_delete_its_group(plan: Plan) -> Plan:
    """The aws-train plan with the file system retained but unprotected and its group no longer retained."""
    out = []
    for r in plan.resources:
        if r.type == FSX:
            r = dataclasses.replace(r, protect=False)
        if r.type == SECURITY_GROUP and r.name == "use1-storage-lustre-sg":
            r = dataclasses.replace(r, retain_on_delete=False)
        out.append(r)
    return Plan(plan.project, plan.stack, out, plan.outputs, plan.warnings)


def test_the_simulation_fails_a_plan_whose_retained_file_system_loses_its_group(
    example_plans: dict[str, Plan],
) -> None:
    t = simulate(unprotect_fsx_and_delete_its_group(example_plans["aws-train"]))
    assert [f.needed_by.rsplit("::", 1)[-1] for f in t.failures] == ["use1-storage-lustre"]


def test_preview_shows_the_teardown_verdict_and_carries_it_in_json() -> None:
    from gpufleet.render.preview import preview_json, preview_markdown
    from model.load import parse_estate
    from tests.review.estates import changed, review_of

    r = review_of(parse_estate(changed(), "head"))
    plan, k = lustre(False, {"protect": False, "retain": True})
    r = dataclasses.replace(r, plan=plan, teardown=simulate(plan))
    md = preview_markdown(r)
    assert "❌ destroy (pulumi destroy --exclude-protected, simulated): 3 deleted" in md
    doc = json.loads(preview_json(r))["destroy"]
    assert doc["command"] == "pulumi destroy --exclude-protected" and doc["retained"] == [k["fs"]]
    assert {f["resource"] for f in doc["failures"]} == {k["sg"], k["subnet"]}
