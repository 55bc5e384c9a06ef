"""Small hand-checked estates for the review tests (cost, diff, markdown)."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

from gpufleet.engine.plan import Plan, PlanResource
from gpufleet.review.cost.envelope import estate_cost
from gpufleet.review.diff.plans import PlanDiff, diff_plans
from gpufleet.review.findings import Finding, Findings
from gpufleet.review.review import Review
from model.conventions import NODE_GROUP
from model.load import parse_estate
from model.spec import AwsSite, EstateSpec, FsxLustreTier

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)

# One AWS site (p5.48xlarge on EFA + g6e.xlarge dedicated to agents, FSx 2400 GiB at 125 MB/s/TiB, EFS, S3,
# scratch) and one bare-metal site (two 8-GPU H100 servers, $200,000 each over 4 years, 10 kW at $0.10/kWh,
# $730/month operations), connected by a transit gateway; the deployer runs in the data centre. Tenants: research 16 and product 4 GPUs of h100 (24 at max); agents 2 of agents-g6e.
SMALL: dict[str, Any] = {
    "metadata": {"name": "small", "environment": "test", "owner": "ml-platform", "cost_center": "cc-1"},
    "deployer": {"network": "dc", "cidrs": ["10.1.9.0/28"]},
    "sites": [
        {
            "kind": "aws",
            "name": "use1",
            "region": "us-east-1",
            "availability_zones": ["us-east-1a", "us-east-1b"],
            "interconnect": {
                "kind": "transit-gateway",
                "site": "dc",
                "transit_gateway_id": "tgw-0123456789abcdef0",
                "onprem_cidrs": ["10.1.0.0/16"],
            },
            "fabrics": [
                {"kind": "efa", "name": "efa", "availability_zone": "us-east-1a", "subnet_cidr": "10.0.128.0/20"}
            ],
            "node_pools": [
                {
                    "name": "h100",
                    "role": "training",
                    "instance_type": "p5.48xlarge",
                    "fabric": "efa",
                    "scaling": {"min": 1, "desired": 2, "max": 3},
                },
                {
                    "name": "agents-g6e",
                    "role": "interactive",
                    "instance_type": "g6e.xlarge",
                    "dedicated_to": "agents",
                    "scaling": {"min": 0, "desired": 1, "max": 2},
                },
            ],
            "storage": [
                {
                    "kind": "fsx-lustre",
                    "name": "lustre",
                    "fabric": "efa",
                    "capacity_gib": 2400,
                    "throughput_per_tib": 125,
                },
                {"kind": "efs", "name": "home"},
                {"kind": "s3", "name": "objects"},
                {"kind": "scratch", "name": "nvme"},
            ],
        },
        {
            "kind": "baremetal",
            "name": "dc",
            "ssh": {"private_key_config": "sshKey"},
            "join": {"api_server": "k8s.dc.example.com:6443"},
            "kubernetes": {"network_policy_cni": "calico"},
            "cost": {
                "server_price_usd": 200000,
                "lifetime_years": 4,
                "power_kw": 10,
                "usd_per_kwh": 0.1,
                "ops_usd_per_server_month": 730,
            },
            "fabrics": [{"kind": "infiniband", "name": "ib", "ipoib_interface": "ibp24s0"}],
            "inventory": [
                {
                    "hostname": f"gpu-0{i}",
                    "address": f"10.1.0.{i}",
                    "gpu_model": "H100-80GB",
                    "gpu_count": 8,
                    "rack": "r1",
                    "leaf": "l1",
                    "labels": {"pool": "owned"},
                    "host_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIILiO9g33J+rqTznFkGuGi1lHVQ6umlrT4Eg1IVmLoFj",
                }
                for i in (1, 2)
            ],
            "node_pools": [{"name": "owned", "role": "training", "selector": {"pool": "owned"}, "fabric": "ib"}],
            "storage": [{"kind": "nfs", "name": "home", "server": "nfs.dc.example.com", "path": "/home"}],
        },
    ],
    "tenants": [
        {"name": "research", "gpu_quota": {"h100": 16, "owned": 16}},
        {"name": "product", "gpu_quota": {"h100": 4}},
        {"name": "agents", "trust": "untrusted", "gpu_quota": {"agents-g6e": 2}},
    ],
    "policies": {"budget_usd_per_hour": 200},
}


def small() -> dict[str, Any]:
    return copy.deepcopy(SMALL)


def changed() -> dict[str, Any]:
    """The small estate after a change: h100 max 3 -> 4, a new l40s pool, the Lustre tier renamed to `hot`."""
    estate = small()
    aws = estate["sites"][0]
    aws["node_pools"][0]["scaling"]["max"] = 4
    aws["node_pools"].append(
        {"name": "l40s", "role": "inference", "instance_type": "g6e.12xlarge", "scaling": {"min": 1, "max": 2}}
    )
    aws["storage"][0]["name"] = "hot"
    return estate


def plan_of(spec: EstateSpec, stack: str = "review") -> Plan:
    """A plan shaped like the test program's: a node group per AWS pool, a protected FSx per Lustre tier."""
    resources = []
    for site in spec.sites:
        if not isinstance(site, AwsSite):
            continue
        for pool in site.node_pools:
            s = pool.scaling
            name = f"{site.name}-{pool.name}"
            pool_inputs: dict[str, Any] = {
                "instanceTypes": [pool.instance_type],
                "scalingConfig": {"minSize": s.min, "desiredSize": s.desired_nodes, "maxSize": s.max},
                "labels": {"gpufleet.io/pool": pool.name},
                "tags": {"Name": f"{spec.metadata.name}-{pool.name}", "env": spec.metadata.environment},
                "userData": "[secret]",
            }
            resources.append(PlanResource(f"{NODE_GROUP}::{name}", NODE_GROUP, name, None, True, pool_inputs))
        for tier in site.storage:
            if isinstance(tier, FsxLustreTier):
                name = f"{site.name}-{tier.name}"
                inputs: dict[str, Any] = {
                    "storageCapacity": tier.capacity_gib,
                    "deploymentType": "PERSISTENT_2",
                    "perUnitStorageThroughput": tier.throughput_per_tib,
                    "tags": {"Name": f"{spec.metadata.name}-{tier.name}", "env": spec.metadata.environment},
                }
                resources.append(PlanResource(f"{FSX}::{name}", FSX, name, None, True, inputs, True, True))
    return Plan("gpufleet", stack, sorted(resources, key=lambda r: r.key))


FSX = "aws:fsx/lustreFileSystem:LustreFileSystem"


# ------------------------------------------------------------------------------------------------- findings

BUDGET = Finding(
    pack="cost-tags",
    rule="budget-at-max-size",
    enforcement="mandatory",
    message="at max size the estate costs $261.99/h, over the $200/h budget",
    remediation="lower node_pools[].scaling.max or raise policies.budget_usd_per_hour",
)
TAGS = Finding(
    pack="cost-tags",
    rule="required-tags",
    enforcement="advisory",
    message="missing tags: owner, cost-center",
    resource=f"{NODE_GROUP}::use1-l40s",
    remediation="set metadata.owner and metadata.cost_center",
)
OLD = Finding(pack="aws-security", rule="imds-hop-limit", enforcement="mandatory", message="hop limit 2", resource=None)


def review_of(spec: EstateSpec, findings: list[Finding] | None = None) -> Review:
    """The review of a small estate as `build` would assemble it, with the test program's plan and given findings."""
    return Review(
        spec=spec,
        window=None,
        plan=plan_of(spec),
        cost=estate_cost(spec, None, NOW),
        findings=None if findings is None else Findings(findings),
        scope="41 rules in 4 packs",
    )


def small_diff() -> PlanDiff:
    """The small estate changed (`changed()`): one finding fixed, two new."""
    base_spec, head_spec = parse_estate(small(), "base"), parse_estate(changed(), "head")
    return diff_plans(
        plan_of(base_spec),
        plan_of(head_spec),
        base_label="origin/main (abc1234)",
        base_cost=estate_cost(base_spec, None, NOW).to_dict(),
        head_cost=estate_cost(head_spec, None, NOW).to_dict(),
        base_findings=[OLD],
        head_findings=[BUDGET, TAGS],
        spec=head_spec,
    )
