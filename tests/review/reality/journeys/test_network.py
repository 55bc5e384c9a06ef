"""Network: NetworkPolicy semantics over the tenant namespaces' own policies, for what a job needs."""

from __future__ import annotations

import dataclasses
from typing import Any

from gpufleet.review.reality.journeys import network
from gpufleet.review.reality.journeys.core import ClusterView
from tests.review.reality.journeys.walks import Estate, container, walk

GPU = {"nvidia.com/gpu": 8}


def _without(view: ClusterView, namespace: str, name: str) -> ClusterView:
    def keep(o: dict[str, Any]) -> bool:
        meta = o.get("metadata") or {}
        return not (o.get("kind") == "NetworkPolicy" and (meta.get("namespace"), meta.get("name")) == (namespace, name))

    return dataclasses.replace(view, objects=tuple(o for o in view.objects if keep(o)))


def test_dns_and_traffic_between_the_jobs_pods_are_allowed_in_a_tenant_namespace(estates: dict[str, Estate]) -> None:
    stage = network.check(walk(estates["aws-train"], "use1", "research", 2, {"containers": [container(GPU)]}, "h100"))
    assert stage.ok, stage.detail
    assert "DNS (UDP 53) to kube-dns" in stage.detail and "every port to the job's pods" in stage.detail


def test_the_jobs_own_traffic_is_blocked_without_the_same_namespace_policy(estates: dict[str, Estate]) -> None:
    estate = estates["aws-train"]
    view = _without(estate.clusters["use1"], "research", "allow-same-namespace")
    w = walk(Estate(estate.spec, {"use1": view}), "use1", "research", 2, {"containers": [container(GPU)]}, "h100")
    stage = network.check(w)
    assert not stage.ok and "every port to the job's pods" in stage.detail
    assert stage.blocker == "NetworkPolicy/research/default-deny"


def test_dns_is_blocked_without_the_dns_policy(estates: dict[str, Estate]) -> None:
    estate = estates["onprem"]
    view = _without(estate.clusters["dc1"], "research", "allow-dns")
    w = walk(Estate(estate.spec, {"dc1": view}), "dc1", "research", 1, {"containers": [container(GPU)]}, "train")
    stage = network.check(w)
    assert not stage.ok and "DNS (UDP 53)" in stage.detail


def test_open_egress_is_refused_for_an_untrusted_tenant(estates: dict[str, Estate]) -> None:
    spec = {"containers": [container({"nvidia.com/gpu": 1}, args=["pip install -i https://pypi.org/simple torch"])]}
    stage = network.check(walk(estates["aws-train"], "use1", "agents", 1, spec, "agents-l40s"))
    assert not stage.ok
    assert "the internet (pypi.org, TCP 443)" in stage.detail and stage.blocker == "NetworkPolicy/agents/default-deny"
    # Its one allowed destination (egress_cidrs) stays reachable.
    gateway = {"containers": [container({"nvidia.com/gpu": 1}, args=["curl https://198.51.100.10/v1/models"])]}
    stage = network.check(walk(estates["aws-train"], "use1", "agents", 1, gateway, "agents-l40s"))
    assert stage.ok and "198.51.100.10 (TCP 443)" in stage.detail


def test_a_trusted_tenant_reaches_s3_through_its_published_ranges(estates: dict[str, Estate]) -> None:
    spec = {"containers": [container(GPU, args=["aws s3 sync s3://train-prod-datasets/imagenet /data"])]}
    stage = network.check(walk(estates["aws-train"], "use1", "research", 1, spec, "h100"))
    assert stage.ok and "S3 in us-east-1" in stage.detail
    estate = estates["aws-train"]
    view = _without(estate.clusters["use1"], "research", "allow-s3")
    stage = network.check(walk(Estate(estate.spec, {"use1": view}), "use1", "research", 1, spec, "h100"))
    assert not stage.ok and "S3 in us-east-1" in stage.detail


def test_a_bare_pod_of_an_untrusted_tenant_on_eks_is_blocked(estates: dict[str, Estate]) -> None:
    spec = {"containers": [container({"nvidia.com/gpu": 1})]}
    stage = network.check(walk(estates["aws-train"], "use1", "agents", 1, spec, "agents-l40s", kind="Pod"))
    assert not stage.ok and "ownerReferences" in stage.detail
    assert any(c.where.startswith(network.EKS_NP_DOC) for c in stage.cites)
    assert network.check(walk(estates["aws-train"], "use1", "agents", 1, spec, "agents-l40s")).ok


def test_ip_block_except_and_ports_follow_network_policy_semantics() -> None:
    policy = {
        "kind": "NetworkPolicy",
        "metadata": {"name": "p", "namespace": "t"},
        "spec": {
            "podSelector": {"matchLabels": {"app": "a"}},
            "policyTypes": ["Egress"],
            "egress": [
                {"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}], "ports": [{"port": 80}]}
            ],
        },
    }
    p = network.Policies(ClusterView("c", None, (policy,)))
    a, other = network.Pod("t", {"app": "a"}), network.Pod("t", {"app": "b"})
    web = network.Flow("web", "TCP", 80)
    assert p.allows(a, "Egress", web, network.Net("10.2.0.0/24"))[0]
    assert not p.allows(a, "Egress", web, network.Net("10.1.2.0/24"))[0]  # except
    assert not p.allows(a, "Egress", network.Flow("ssh", "TCP", 22), network.Net("10.2.0.0/24"))[0]  # port
    assert not p.allows(a, "Egress", network.Flow("udp", "UDP", 80), network.Net("10.2.0.0/24"))[0]  # protocol
    assert p.allows(other, "Egress", web, network.Net("192.0.2.0/24"))[0]  # not selected: not isolated


def test_an_on_prem_tenant_reaches_its_s3_endpoint_and_nothing_else_it_names(estates: dict[str, Estate]) -> None:
    estate = estates["onprem"]
    env = [{"name": "AWS_ENDPOINT_URL", "value": "https://s3.dc1.example.com"}]
    spec = {"containers": [container(GPU, env=env)]}
    stage = network.check(walk(estate, "dc1", "research", 1, spec, "train"))
    assert stage.ok and "the object store s3.dc1.example.com" in stage.detail
    spec = {"containers": [container(GPU, env=[*env, {"name": "HF_ENDPOINT", "value": "https://huggingface.co"}])]}
    stage = network.check(walk(estate, "dc1", "research", 1, spec, "train"))
    assert not stage.ok and "the internet (huggingface.co, TCP 443)" in stage.detail
