"""The stack rules' index of a resource list (Kubernetes objects by kind and namespace, what depends on or is
parented by each resource) answers as a scan of the list would, follows its list (a list that changes is
re-indexed), and does not outlive an evaluation."""

from __future__ import annotations

import dataclasses

from pulumi_policy import PolicyResource, StackValidationArgs

from gpufleet.review import check
from policies import common
from tests.policies import fixtures as fx


def test_index_sees_a_namespace_added_to_the_same_list() -> None:
    view = check._View(fx.plan(fx.namespace("research"), fx.namespace("product")))
    resources = view.stack_resources()
    assert common.tenant_namespaces(resources) == {"research": "research", "product": "product"}
    extra = check._View(fx.plan(fx.namespace("agents"))).stack_resources()
    resources.append(next(r for r in extra if r.props.get("kind") == "Namespace"))
    assert common.tenant_namespaces(resources)["agents"] == "agents"
    assert [common.k8s_name(r.props) for r in common.objects(resources, "Namespace")] == [
        "research",
        "product",
        "agents",
    ]


def test_other_iterables_are_scanned_not_indexed() -> None:
    resources = check._View(fx.plan(fx.namespace("research"))).stack_resources()
    namespaces = [r for r in resources if r.props.get("kind") == "Namespace"]
    assert list(common.objects(iter(resources), "Namespace")) == namespaces


def test_namespace_lookup_through_the_index_equals_filtering_the_kinds() -> None:
    plan = fx.plan(*fx.tenant_bundle("research"), *fx.tenant_bundle("product"), fx.namespace("agents"))
    resources = check._View(plan).stack_resources()
    for ns in ("research", "product", "agents", "missing"):
        for kinds in (("ResourceQuota",), ("NetworkPolicy", "LimitRange"), ("LimitRange", "NetworkPolicy")):
            filtered = [r for r in common.objects(resources, *kinds) if common.k8s_namespace(r.props) == ns]
            assert common.in_namespace(resources, ns, *kinds) == filtered, (ns, kinds)
            assert set(common.in_namespace(iter(resources), ns, *kinds)) == set(filtered), (ns, kinds)
    assert [
        common.kind(r.props) for r in common.in_namespace(resources, "research", "LimitRange", "ResourceQuota")
    ] == [
        "LimitRange",
        "ResourceQuota",
    ]


def test_namespace_lookup_sees_an_object_added_to_the_same_list() -> None:
    resources = check._View(fx.plan(*fx.tenant_bundle("research"))).stack_resources()
    assert common.in_namespace(resources, "agents", "ResourceQuota") == []
    extra = check._View(fx.plan(fx.quota("agents"))).stack_resources()
    resources.append(next(r for r in extra if r.props.get("kind") == "ResourceQuota"))
    assert [common.k8s_namespace(r.props) for r in common.in_namespace(resources, "agents", "ResourceQuota")] == [
        "agents"
    ]


def test_a_tenants_namespace_through_the_index_is_the_first_a_scan_finds() -> None:
    plan = fx.plan(fx.namespace("research"), fx.namespace("product"), fx.k8s("Namespace", "research-2", metadata={
        "labels": {"tenant": "research"}}))  # fmt: skip
    resources = check._View(plan).stack_resources()
    indexed = StackValidationArgs(resources, None)
    scanned = StackValidationArgs(tuple(resources), None)  # type: ignore[arg-type]  # not a list: scanned
    for tenant in ("research", "product", "nobody"):
        assert common.namespace_of_tenant(indexed, tenant) == common.namespace_of_tenant(scanned, tenant)
    assert common.namespace_of_tenant(indexed, "research") == "research"


def _s3_fixture() -> tuple[list[PolicyResource], dict[str, PolicyResource]]:
    """Two tenant roles with role policies and an attachment, a bucket with a child and two dependents."""
    agents, research = fx.tenant_role("agents"), fx.tenant_role("research")
    b = fx.bucket()
    child = dataclasses.replace(fx.public_access_block(b), dependencies=[], parent=b.key, name="site-datasets-child")
    child.key = child.key.replace("::site-datasets", "::site-datasets-child")
    attachment = fx.res("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "agents-attach",
                        {"policyArn": "arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess"},
                        dependencies=[agents.key])  # fmt: skip
    both = fx.role_policy(agents, [fx.s3_objects("b", "p")], suffix="both")
    both.dependencies = [research.key, agents.key, agents.key]  # listed twice: still one dependent
    plan = fx.plan(
        agents,
        fx.role_policy(agents, [fx.s3_objects("b", "p")]),
        research,
        attachment,
        both,
        fx.role_policy(research, [fx.s3_objects("b", "q")]),
        b,
        fx.public_access_block(b),
        child,
        fx.bucket_policy(b),
    )
    resources = check._View(plan).stack_resources()
    return resources, {r.name: r for r in resources}


def test_dependents_through_the_index_are_a_scan_of_the_dependencies_by_urn_in_list_order() -> None:
    resources, by_name = _s3_fixture()
    policy, attachment = "aws:iam/rolePolicy:RolePolicy", "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
    for target in resources:
        for types in ((), (policy,), (policy, attachment)):
            scanned = [
                r
                for r in resources
                if (not types or r.resource_type in types) and any(d.urn == target.urn for d in r.dependencies)
            ]
            assert common.dependents(resources, target, *types) == scanned, (target.name, types)
            assert common.dependents(iter(resources), target, *types) == scanned, (target.name, types)
    agents = by_name["site-tenant-agents-s3-role"]
    assert [r.name for r in common.dependents(resources, agents, policy)] == [
        "site-tenant-agents-s3-role-s3",
        "site-tenant-agents-s3-role-both",
    ]
    assert [r.name for r in common.dependents(resources, agents, attachment)] == ["agents-attach"]


def test_attached_to_through_the_index_is_a_scan_of_dependencies_and_children() -> None:
    resources, _ = _s3_fixture()
    for target in resources:
        scanned = [r for r in resources if target in r.dependencies or r.parent is target]
        assert common.attached_to(resources, target) == scanned, target.name
        assert common.attached_to(iter(resources), target) == scanned, target.name
    bucket = next(r for r in resources if r.resource_type == "aws:s3/bucket:Bucket")
    assert [r.resource_type.rsplit(":", 1)[-1] for r in common.attached_to(resources, bucket)] == [
        "BucketPublicAccessBlock",
        "BucketPublicAccessBlock",  # the child
        "BucketPolicy",
    ]


def test_dependents_see_a_role_policy_added_to_the_same_list() -> None:
    resources, by_name = _s3_fixture()
    research = by_name["site-tenant-research-s3-role"]
    before = common.dependents(resources, research, "aws:iam/rolePolicy:RolePolicy")
    extra = check._View(fx.plan(fx.role_policy(fx.tenant_role("research"), [], suffix="late"))).stack_resources()
    late = next(r for r in extra if r.name.endswith("-late"))
    late.dependencies = [research]
    resources.append(late)
    assert common.dependents(resources, research, "aws:iam/rolePolicy:RolePolicy") == [*before, late]


def test_an_evaluation_does_not_keep_the_stacks_resources_indexed() -> None:
    """The index is released when `gpufleet check` ends, so the evaluation's resources and proxies are freed."""
    findings = check.run(fx.plan(*fx.tenant_bundle("research"), fx.tenant_role(), fx.bucket()))
    assert any(f.rule == "storage-not-public" for f in findings)  # a stack rule that reads the index ran
    assert common._last_index is None
