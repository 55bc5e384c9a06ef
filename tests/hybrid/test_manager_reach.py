"""The MultiKueue manager's path to the cloud worker's private API is admitted by the API security group the
cluster gets (components/aws/cluster.py), wherever the manager sits: the reach check (model/reach.py)
never says "reaches" for a source the security group refuses. EKS user guide, "Cluster API server endpoint"
(https://docs.aws.amazon.com/eks/latest/userguide/cluster-endpoint.html): with a private endpoint "you must ensure
that your Amazon EKS control plane security group contains rules to allow ingress traffic on port 443 from your
connected network"."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

import pytest

from gpufleet.engine.plan import Plan
from model.load import SpecError, parse_estate
from model.reach import api_clients, api_reachable_from, manager_client
from model.spec import AwsSite, EstateSpec
from tests.burst.helpers import hybrid_config

INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"


def admitted_on_443(plan: Plan) -> list[str]:
    """The CIDRs the cloud cluster's API security group admits on 443 (its ingress rules in the plan)."""
    return [
        r.inputs["cidrIpv4"]
        for r in plan.find(INGRESS)
        if r.name.startswith("cloud-") and "-api-" in r.name and r.inputs["fromPort"] == 443
    ]


def manager_sources(spec: EstateSpec, cloud: AwsSite) -> list[str]:
    """Where the manager's traffic comes from: its network's range (on-prem: the routed ranges; the VPC: its CIDR)."""
    manager = manager_client(spec)
    assert manager is not None
    if manager.network == cloud.name:
        return [cloud.vpc.cidr or ""]
    assert cloud.interconnect is not None and hasattr(cloud.interconnect, "onprem_cidrs")
    return list(cloud.interconnect.onprem_cidrs)


def within(cidr: str, allowed: list[str]) -> bool:
    net = ipaddress.ip_network(cidr)
    return any(net.subnet_of(ipaddress.ip_network(a)) for a in allowed)  # type: ignore[arg-type]


@pytest.mark.parametrize("network", ["onprem", "cloud"])
def test_the_manager_the_reach_check_admits_is_admitted_by_the_api_security_group(
    network: str, synth_config: Callable[[dict[str, Any]], Plan]
) -> None:
    config = hybrid_config()
    config["gpufleet:estate"]["burst"]["manager"]["network"] = network
    spec = parse_estate(config["gpufleet:estate"], "test")
    cloud = spec.site("cloud")
    assert isinstance(cloud, AwsSite)
    (manager,) = [c for c in api_clients(spec, cloud) if c.role == "multikueue-manager"]
    assert api_reachable_from(spec, cloud, manager).ok
    admitted = admitted_on_443(synth_config(config))
    for source in manager_sources(spec, cloud):
        assert within(source, admitted), (source, admitted)


def test_a_manager_in_an_adopted_vpc_without_a_declared_cidr_is_refused() -> None:
    config = hybrid_config()
    estate = config["gpufleet:estate"]
    estate["burst"]["manager"]["network"] = "cloud"
    cloud = next(s for s in estate["sites"] if s["name"] == "cloud")
    cloud["vpc"] = {"vpc_id": "vpc-0abc", "private_subnet_ids": ["subnet-a", "subnet-b"]}
    cloud["fabrics"][0] = {"kind": "efa", "name": "burst-efa", "availability_zone": "us-east-1a",
                           "subnet_id": "subnet-efa"}  # fmt: skip
    cloud["interconnect"] = {"kind": "existing", "site": "onprem", "onprem_cidrs": ["10.30.0.0/16"]}
    with pytest.raises(SpecError) as err:
        parse_estate(estate, "test")
    assert any("declare the adopted VPC's CIDR in vpc.cidr" in p for p in err.value.problems), err.value.problems
