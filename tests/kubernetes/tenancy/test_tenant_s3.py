"""A tenant's S3 path as the example stacks synthesize it: the `s3-access` service account, the Pod Identity
association naming it, and egress to the region's S3 ranges and to the Pod Identity agent.

Sources: EKS Pod Identity (https://docs.aws.amazon.com/eks/latest/userguide/pod-identities.html); the S3 ranges
are AWS's ip-ranges.json (service S3) in model/catalog/aws_s3_ranges.json.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

from gpufleet.engine.plan import Plan
from model import catalog
from model.conventions import TENANT_S3_SERVICE_ACCOUNT
from model.load import ESTATE_KEY
from tests.conftest import example_config
from tests.kubernetes.tenancy.conftest import in_namespace

PlanOf = Callable[[str], Plan]


def _policies(plan: Plan, ns: str) -> dict[str, dict[str, Any]]:
    return {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in in_namespace(plan, "NetworkPolicy", ns)}


def _associations(plan: Plan) -> dict[str, dict[str, Any]]:
    return {r.inputs["namespace"]: r.inputs for r in plan.find("aws:eks/podIdentityAssociation:PodIdentityAssociation")
            if r.inputs.get("serviceAccount") == TENANT_S3_SERVICE_ACCOUNT}  # fmt: skip


def test_trusted_tenant_gets_s3_egress_to_the_regions_ranges_and_the_agent(plan_of: PlanOf) -> None:
    egress = _policies(plan_of("aws-train"), "research")["allow-s3"]["egress"]
    s3, agent = egress
    cidrs = [peer["ipBlock"]["cidr"] for peer in s3["to"]]
    assert cidrs == catalog.s3_ranges("us-east-1") and cidrs
    # 52.216.0.0/15 is one of us-east-1's S3 ranges in AWS's ip-ranges.json
    assert any(ipaddress.ip_address("52.216.1.1") in ipaddress.ip_network(c) for c in cidrs)
    assert s3["ports"] == [{"protocol": "TCP", "port": 443}]
    assert agent == {"to": [{"ipBlock": {"cidr": "169.254.170.23/32"}}], "ports": [{"protocol": "TCP", "port": 80}]}


def test_service_account_and_association_agree_per_tenant(plan_of: PlanOf) -> None:
    plan = plan_of("aws-train")
    associations = _associations(plan)
    assert set(associations) == {"research", "product"}  # agents is untrusted and declares no S3
    for ns, assoc in associations.items():
        (sa,) = [r for r in in_namespace(plan, "ServiceAccount", ns) if r.inputs["metadata"]["name"] != "default"]
        assert sa.inputs["metadata"]["name"] == assoc["serviceAccount"] == TENANT_S3_SERVICE_ACCOUNT
        assert sa.inputs["automountServiceAccountToken"] is False
        assert assoc["clusterName"] == "train-prod-use1"


def test_untrusted_tenant_gets_s3_only_for_what_it_declares(synth_config: Callable[[dict[str, Any]], Plan]) -> None:
    config = example_config("aws-train")
    agents = next(t for t in config[ESTATE_KEY]["tenants"] if t["name"] == "agents")
    agents["s3"] = [{"bucket": "train-prod-models", "prefix": "published/", "access": "read"}]
    plan = synth_config(config)
    assert "allow-s3" in _policies(plan, "agents")
    assert "agents" in _associations(plan)
    (policy,) = [r for r in plan.find("aws:iam/rolePolicy:RolePolicy") if r.name == "use1-tenant-agents-s3-s3"]
    assert "arn:aws:s3:::train-prod-models/published/*" in policy.inputs["policy"]
    assert "s3:PutObject" not in policy.inputs["policy"]
