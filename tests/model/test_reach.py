"""Who must reach each site's Kubernetes API, and the schema refusing an estate where someone cannot
(model/reach.py).

Facts from the EKS user guide, "Cluster API server endpoint"
(https://docs.aws.amazon.com/eks/latest/userguide/cluster-endpoint.html): with public access disabled, "all traffic
to your cluster API server must come from within your cluster's VPC or a connected network", and "you must ensure
that your Amazon EKS control plane security group contains rules to allow ingress traffic on port 443 from your
connected network"; a public endpoint admits only its publicAccessCidrs.
"""

from __future__ import annotations

from typing import Any

import pytest

from model.load import SpecError, parse_estate
from model.reach import api_clients, api_reachable_from, private_api_sources
from model.spec import AwsSite, EstateSpec
from tests.conftest import example_estate

SRC = "stacks/Pulumi.test.yaml"
BASE = "config.gpufleet:estate"


def _spec(estate: dict[str, Any]) -> EstateSpec:
    return parse_estate(estate, SRC)


def _problems(estate: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as err:
        parse_estate(estate, SRC)
    return err.value.problems


def _hybrid_cloud(spec: EstateSpec) -> AwsSite:
    site = spec.site("cloud")
    assert isinstance(site, AwsSite)
    return site


# -- item 1: the hybrid cloud cluster is private; the on-prem Kueue manager and deployer reach it over the VPN ----


def test_hybrid_manager_and_deployer_reach_the_private_cloud_api_through_the_vpn() -> None:
    spec = _spec(example_estate("hybrid"))
    cloud = _hybrid_cloud(spec)
    assert cloud.cluster.endpoint_public_cidrs == []  # private only
    clients = {c.role: c for c in api_clients(spec, cloud)}
    assert set(clients) == {"deployer", "multikueue-manager"}
    for client in clients.values():
        reach = api_reachable_from(spec, cloud, client)
        assert reach.ok and "through the vpn interconnect from onprem" in reach.via
    # The control plane admits 443 from the routed on-prem range (that is where both come from).
    assert private_api_sources(spec, cloud) == ["10.30.0.0/16"]


def test_private_cloud_cluster_without_an_interconnect_is_refused_naming_the_manager() -> None:
    estate = example_estate("hybrid")
    del estate["sites"][1]["interconnect"]
    (problem,) = _problems(estate)
    assert problem.startswith(f"{SRC}: {BASE}.sites[1].interconnect: ")
    assert (
        "the MultiKueue manager kueue-manager (in site onprem's network) cannot reach the Kubernetes API of site cloud"
        in problem
    )
    assert "declare interconnect (vpn, transit-gateway, existing or public) with site: onprem" in problem


def test_deployer_sending_from_a_range_the_vpn_does_not_route_is_refused() -> None:
    estate = example_estate("hybrid")
    estate["deployer"]["cidrs"] = ["10.99.0.0/28"]
    problems = _problems(estate)
    assert len(problems) == 1 and problems[0].startswith(f"{SRC}: {BASE}.deployer: ")
    assert "10.99.0.0/28" in problems[0] and "does not route" in problems[0]


def test_public_interconnect_needs_the_endpoint_to_admit_the_onprem_egress() -> None:
    estate = example_estate("hybrid")
    estate["sites"][1]["interconnect"] = {"kind": "public", "site": "onprem", "egress_cidrs": ["198.51.100.8/29"]}
    (problem,) = _problems(estate)
    assert problem.startswith(f"{SRC}: {BASE}.sites[1].interconnect: ")
    assert "198.51.100.8/29" in problem and "add them to cluster.endpoint_public_cidrs" in problem
    estate["sites"][1]["cluster"]["endpoint_public_cidrs"] = ["198.51.100.0/24"]
    spec = _spec(estate)  # the manager and the on-prem deployer both leave through the on-prem egress
    cloud = _hybrid_cloud(spec)
    assert private_api_sources(spec, cloud) == []  # no private path: the API group admits nothing extra
    for client in api_clients(spec, cloud):
        assert api_reachable_from(spec, cloud, client).via == "the public endpoint, from onprem's egress addresses"
    estate["deployer"] = {"network": "cloud", "cidrs": ["10.50.0.0/28"]}  # in the VPC: no path to the data centre
    (problem,) = _problems(estate)
    assert problem.startswith(f"{SRC}: {BASE}.deployer: ") and "API of site onprem" in problem


def test_onprem_api_is_out_of_reach_of_a_deployer_outside_the_data_centre() -> None:
    estate = example_estate("onprem")
    estate["deployer"] = {"cidrs": ["203.0.113.0/24"]}
    problems = _problems(estate)
    assert len(problems) == 1 and problems[0].startswith(f"{SRC}: {BASE}.deployer: ")
    assert "k8s-api.dc1.example.com:6443" in problems[0] and "deployer.network: dc1" in problems[0]


# -- item 5: who deploys aws-train, and from where -------------------------------------------------------------


def test_schema_requires_the_deployer_to_be_declared() -> None:
    estate = example_estate("aws-train")
    del estate["deployer"]
    (problem,) = _problems(estate)
    assert problem.startswith(f"{SRC}: {BASE}.deployer: required key is missing (since 2026-11-30")


def test_aws_train_deployer_is_admitted_by_the_public_endpoint() -> None:
    spec = _spec(example_estate("aws-train"))
    site = spec.sites[0]
    (deployer,) = api_clients(spec, site)
    assert api_reachable_from(spec, site, deployer).via == "the public endpoint, which admits its addresses"


def test_a_deployer_outside_the_public_endpoint_cidrs_is_refused() -> None:
    # A GitHub-hosted runner has no fixed egress; here one from a range the endpoint does not admit.
    estate = example_estate("aws-train")
    estate["deployer"]["cidrs"] = ["198.51.100.0/24"]
    problems = _problems(estate)
    assert len(problems) == 1 and problems[0].startswith(f"{SRC}: {BASE}.deployer: ")
    assert "admits only 203.0.113.0/24" in problems[0] and "198.51.100.0/24" in problems[0]


def test_a_private_only_cluster_is_refused_for_a_deployer_outside_its_vpc() -> None:
    estate = example_estate("aws-train")
    estate["sites"][0]["cluster"]["endpoint_public_cidrs"] = []
    problems = _problems(estate)
    assert len(problems) == 1 and "is private (cluster.endpoint_public_cidrs is empty)" in problems[0]


def test_an_in_vpc_deployer_reaches_a_private_cluster_whose_api_group_admits_it() -> None:
    estate = example_estate("aws-train")
    estate["sites"][0]["cluster"]["endpoint_public_cidrs"] = []
    estate["deployer"] = {"network": "use1", "cidrs": ["10.40.200.0/28"]}
    spec = _spec(estate)
    site = spec.sites[0]
    assert isinstance(site, AwsSite)
    (deployer,) = api_clients(spec, site)
    assert api_reachable_from(spec, site, deployer).via == "the private endpoint, from inside the VPC of site use1"
    assert private_api_sources(spec, site) == ["10.40.200.0/28"]


def test_an_in_vpc_deployer_must_send_from_inside_the_vpc() -> None:
    estate = example_estate("aws-train")
    estate["deployer"] = {"network": "use1", "cidrs": ["10.41.0.0/28"]}
    problems = _problems(estate)
    assert problems == [
        f"{SRC}: {BASE}.deployer.cidrs: the deployer sits in the VPC of site use1 (10.40.0.0/16) but sends from "
        "10.41.0.0/28"
    ]


# -- declarations that do not fit -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        (lambda e: e["deployer"].update(network="nowhere"), "deployer.network", "nowhere is not a site"),
        (lambda e: e["sites"][1]["interconnect"].update(site="cloud"), "sites[1].interconnect.site",
         "cloud is not a baremetal site"),
        (lambda e: e["sites"][1]["interconnect"].update(onprem_cidrs=["10.50.0.0/20"]),
         "sites[1].interconnect.onprem_cidrs", "overlaps the VPC of site cloud (10.50.0.0/16)"),
        (lambda e: e["sites"][1]["interconnect"].update(customer_gateway_ip="10.30.0.1"),
         "sites[1].interconnect.customer_gateway_ip", "not an internet-facing IPv4 address"),
        (lambda e: e["sites"][1]["interconnect"].update(onprem_cidrs=["0.0.0.0/0"]),
         "sites[1].interconnect.onprem_cidrs", "admits every address"),
        (lambda e: e["sites"][1].update(vpc={"vpc_id": "vpc-0abc", "private_subnet_ids": ["subnet-a", "subnet-b"]},
                                        fabrics=[{"kind": "efa", "name": "burst-efa", "availability_zone": "us-east-1a",
                                                  "subnet_id": "subnet-efa"}]),
         "sites[1].interconnect.kind", "whose route tables gpufleet does not manage"),
        (lambda e: e["sites"][1].update(interconnect={"kind": "existing", "site": "onprem",
                                                      "onprem_cidrs": ["10.30.0.0/16"]}),
         "sites[1].interconnect.kind", "existing is for an adopted VPC"),
    ],
    ids=["unknown-network", "not-baremetal", "overlap", "private-cgw", "open-cidr", "vpn-adopted-vpc",
         "existing-created-vpc"],
)  # fmt: skip
def test_interconnect_and_deployer_declarations_are_checked(change: Any, path: str, words: str) -> None:
    estate = example_estate("hybrid")
    change(estate)
    problems = _problems(estate)
    assert any(p.startswith(f"{SRC}: {BASE}.{path}: ") and words in p for p in problems), problems


def test_an_adopted_vpc_already_routed_to_onprem_is_declared_existing() -> None:
    estate = example_estate("hybrid")
    estate["sites"][1]["vpc"] = {"vpc_id": "vpc-0abc", "private_subnet_ids": ["subnet-a", "subnet-b"]}
    estate["sites"][1]["fabrics"][0] = {"kind": "efa", "name": "burst-efa", "availability_zone": "us-east-1a",
                                        "subnet_id": "subnet-efa"}  # fmt: skip
    estate["sites"][1]["interconnect"] = {"kind": "existing", "site": "onprem", "onprem_cidrs": ["10.30.0.0/16"]}
    spec = _spec(estate)
    cloud = _hybrid_cloud(spec)
    assert all(api_reachable_from(spec, cloud, c) for c in api_clients(spec, cloud))
