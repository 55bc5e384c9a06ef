"""The stack rules' index of Kubernetes objects follows its resource list: a list that changes is re-indexed."""

from __future__ import annotations

from pulumi_policy import StackValidationArgs

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
