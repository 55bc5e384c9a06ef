"""The stack rules' index of Kubernetes objects follows its resource list: a list that changes is re-indexed."""

from __future__ import annotations

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
