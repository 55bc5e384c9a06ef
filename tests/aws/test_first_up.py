"""What a first real `pulumi up` of an AWS site needs, in the synthesized plan: the private path to the API, the
Auto Scaling role the key policy names, the protected key and encrypted control-plane logs, vpc-cni enforcing
NetworkPolicy, releases waiting for the system nodes, S3 off NAT, capacity blocks left to EKS, adoption touching
nothing of the adopted cluster.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.aws import iam
from gpufleet.engine.plan import Plan, PlanResource
from gpufleet.engine.synth import synth
from model.load import SpecError, parse_estate
from model.versions import VPC_CNI_ADDON
from tests.conftest import example_config, example_estate, write_project

CLUSTER = "aws:eks/cluster:Cluster"
ADDON = "aws:eks/addon:Addon"
NG = "aws:eks/nodeGroup:NodeGroup"
SG = "aws:ec2/securityGroup:SecurityGroup"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
SLR = "aws:iam/serviceLinkedRole:ServiceLinkedRole"
KEY = "aws:kms/key:Key"
ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"
RESERVATION = "cr-0123456789abcdef0"


def _deps(r: PlanResource) -> set[str]:
    return {d.rsplit("::", 1)[-1] for d in r.dependencies}


@pytest.fixture(scope="module")
def adopted_plan(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    """aws-train adopting a cluster (vpc-cni declared) in an adopted VPC, in an account that has the ASG role."""
    config: dict[str, Any] = example_config("aws-train")
    estate = config["gpufleet:estate"]
    site = estate["sites"][0]
    site["cluster"]["adopt_name"] = "shared-prod"
    site["kubernetes"]["network_policy_cni"] = "vpc-cni"
    site["vpc"] = {"vpc_id": "vpc-0abc", "private_subnet_ids": ["subnet-0a", "subnet-0b", "subnet-0c"]}
    site["fabrics"][0] = {"kind": "efa", "name": "train-efa", "availability_zone": "us-east-1a",
                          "subnet_id": "subnet-0efa"}  # fmt: skip
    estate["aws_account"] = {"autoscaling_service_role": "existing"}
    return synth(write_project(tmp_path_factory.mktemp("adopted"), config), "test")


@pytest.fixture(scope="module")
def tgw_plan(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    """hybrid connected through a transit gateway, with ECR/STS interface endpoints and a capacity-block pool, and
    a second AWS site (reached over its public endpoint from the on-prem egress) in the same account."""
    config: dict[str, Any] = example_config("hybrid")
    config["gpufleet:estate"]["sites"].append(
        {"kind": "aws", "name": "cloud2", "region": "us-east-1", "availability_zones": ["us-east-1a", "us-east-1b"],
         "vpc": {"cidr": "10.60.0.0/16"}, "cluster": {"endpoint_public_cidrs": ["198.51.100.0/29"]},
         "interconnect": {"kind": "public", "site": "onprem", "egress_cidrs": ["198.51.100.0/29"]}}
    )  # fmt: skip
    cloud = config["gpufleet:estate"]["sites"][1]
    cloud["interconnect"] = {"kind": "transit-gateway", "site": "onprem", "transit_gateway_id": "tgw-0123456789abcdef0",
                             "onprem_cidrs": ["10.30.0.0/16", "10.31.0.0/16"]}  # fmt: skip
    cloud["vpc"]["interface_endpoints"] = ["ecr.api", "ecr.dkr", "sts"]
    cloud["node_pools"].append(
        {"name": "block-h200", "role": "training", "instance_type": "p5en.48xlarge", "fabric": "burst-efa",
         "capacity": {"type": "capacity-block", "reservation_id": RESERVATION}, "scaling": {"max": 2}}
    )  # fmt: skip
    return synth(write_project(tmp_path_factory.mktemp("tgw"), config), "test")


# -- item 1: the private endpoint admits 443 from the on-prem ranges; the VPN routes them ----------------------


def test_private_endpoint_admits_443_from_the_onprem_range_on_its_own_security_group(
    example_plans: dict[str, Plan],
) -> None:
    # EKS user guide, cluster-endpoint (private access from a connected network): "ensure that your Amazon EKS
    # control plane security group contains rules to allow ingress traffic on port 443 from your connected network".
    plan = example_plans["hybrid"]
    cluster = plan.one(CLUSTER, "cloud-cluster-eks")
    assert cluster.inputs["vpcConfig"]["securityGroupIds"] == ["cloud-cluster-api-id"]
    assert cluster.inputs["vpcConfig"]["endpointPublicAccess"] is False
    rules = [r.inputs for r in plan.find(INGRESS) if r.inputs["securityGroupId"] == "cloud-cluster-api-id"]
    assert [(r["cidrIpv4"], r["ipProtocol"], r["fromPort"], r["toPort"]) for r in rules] == [
        ("10.30.0.0/16", "tcp", 443, 443)
    ]
    assert not plan.find(INGRESS, "use1-cluster-api")  # aws-train: public endpoint, no private path declared
    assert not [r for r in example_plans["aws-train"].find(INGRESS) if "cluster-api" in r.name]


def test_vpn_interconnect_routes_the_onprem_range_into_every_private_route_table(
    example_plans: dict[str, Plan],
) -> None:
    # AWS Site-to-Site VPN user guide (vpn-route-priority.html): a VPC route table needs a route to the remote
    # network via the virtual private gateway; route propagation adds the VPN's static and BGP routes.
    plan = example_plans["hybrid"]
    vgw = plan.one("aws:ec2/vpnGateway:VpnGateway", "cloud-interconnect-vgw")
    assert vgw.inputs["vpcId"] == "cloud-net-vpc-id"
    cgw = plan.one("aws:ec2/customerGateway:CustomerGateway", "cloud-interconnect-cgw")
    assert cgw.inputs["ipAddress"] == "198.51.100.7" and cgw.inputs["type"] == "ipsec.1"
    vpn = plan.one("aws:ec2/vpnConnection:VpnConnection", "cloud-interconnect-vpn")
    assert vpn.inputs["staticRoutesOnly"] is True  # no BGP ASN declared
    routes = plan.find("aws:ec2/vpnConnectionRoute:VpnConnectionRoute")
    assert [r.inputs["destinationCidrBlock"] for r in routes] == ["10.30.0.0/16"]
    propagated = {
        r.inputs["routeTableId"] for r in plan.find("aws:ec2/vpnGatewayRoutePropagation:VpnGatewayRoutePropagation")
    }
    private = {f"{t.name}-id" for t in plan.find(ROUTE_TABLE) if "-private-" in t.name}
    assert propagated == private and len(private) == 2


def test_transit_gateway_interconnect_attaches_private_subnets_and_routes_onprem_ranges(tgw_plan: Plan) -> None:
    assert not tgw_plan.find("aws:ec2/vpnConnection:VpnConnection")
    att = tgw_plan.one("aws:ec2transitgateway/vpcAttachment:VpcAttachment", "cloud-interconnect-tgw")
    assert att.inputs["transitGatewayId"] == "tgw-0123456789abcdef0"
    assert sorted(att.inputs["subnetIds"]) == ["cloud-net-private-us-east-1a-id", "cloud-net-private-us-east-1b-id"]
    routes = {
        (r.inputs["routeTableId"], r.inputs["destinationCidrBlock"]) for r in tgw_plan.find("aws:ec2/route:Route")
    }
    expected = {(f"cloud-net-private-{az}-id", c) for az in ("us-east-1a", "us-east-1b")
                for c in ("10.30.0.0/16", "10.31.0.0/16")}  # fmt: skip
    assert expected <= routes
    for r in tgw_plan.find("aws:ec2/route:Route"):
        if (r.inputs["routeTableId"], r.inputs["destinationCidrBlock"]) in expected:
            assert "cloud-interconnect-tgw" in _deps(r)
    cidrs = sorted(r.inputs["cidrIpv4"] for r in tgw_plan.find(INGRESS) if r.name.startswith("cloud-cluster-api"))
    assert cidrs == ["10.30.0.0/16", "10.31.0.0/16"]


# -- item 4 / issue 31: AWSServiceRoleForAutoScaling is neither created nor read; the key admits it by ARN ------


def _asg_statements(plan: Plan, site: str) -> list[dict[str, Any]]:
    statements = json.loads(plan.one(KEY, f"{site}-cluster-key").inputs["policy"])["Statement"]
    return [s for s in statements if s["Sid"].startswith("AutoScaling")]


@pytest.mark.parametrize("stack", ["aws-train", "aws-train-west", "hybrid"])
def test_no_stack_creates_or_reads_the_autoscaling_role(example_plans: dict[str, Plan], stack: str) -> None:
    # IAM CreateServiceLinkedRole fails with InvalidInput "... has been taken in this account" where the role
    # exists (every account with an Auto Scaling group, and the second of two stacks in one account); a read
    # fails where it does not. EC2 Auto Scaling creates it with the first Auto Scaling group
    # (https://docs.aws.amazon.com/autoscaling/ec2/userguide/autoscaling-service-linked-role.html), and EKS
    # creates a node group's under AWSServiceRoleForAmazonEKSNodegroup, whose policy allows
    # iam:CreateServiceLinkedRole (https://docs.aws.amazon.com/aws-managed-policy/latest/reference/
    # AWSServiceRoleForAmazonEKSNodegroup.html).
    plan = example_plans[stack]
    assert not plan.find(SLR)
    assert not [r for r in plan.resources if "autoscaling-role" in r.name]


def test_key_policy_admits_the_autoscaling_role_by_arn_without_naming_it_as_principal(
    example_plans: dict[str, Plan],
) -> None:
    # KMS refuses a key policy whose Principal does not exist ("Policy contains a statement with one or more
    # invalid principals"; terraform-aws-modules/terraform-aws-eks#3013), so the role is matched by aws:PrincipalArn
    # (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-keys.html#condition-keys-principalarn).
    plan = example_plans["aws-train"]
    asg = iam.autoscaling_role_arn("us-east-1", "ACCOUNT_ID_KNOWN_AT_APPLY")
    assert asg.endswith(":role/aws-service-role/autoscaling.amazonaws.com/AWSServiceRoleForAutoScaling")
    use, grant = _asg_statements(plan, "use1")
    for stmt in (use, grant):
        assert stmt["Principal"] == {"AWS": "*"}
        assert stmt["Condition"]["StringEquals"] == {
            "aws:PrincipalArn": asg,
            "kms:CallerAccount": "ACCOUNT_ID_KNOWN_AT_APPLY",
        }
    # EC2 Auto Scaling user guide, key-policy-requirements-EBS-encryption: use of the key, and grants for AWS
    # resources only.
    assert "kms:GenerateDataKey*" in use["Action"] and "kms:Decrypt" in use["Action"]
    assert grant["Action"] == "kms:CreateGrant"
    assert grant["Condition"]["Bool"] == {"kms:GrantIsForAWSResource": "true"}
    principals = [json.dumps(s["Principal"]) for s in json.loads(plan.one(KEY, "use1-cluster-key").inputs["policy"])
                  ["Statement"]]  # fmt: skip
    assert not [p for p in principals if "AWSServiceRoleForAutoScaling" in p]


def test_two_aws_sites_of_one_account_each_admit_the_one_autoscaling_role(tgw_plan: Plan) -> None:
    # IAM holds one AWSServiceRoleForAutoScaling per account: each site's key admits it, none creates it.
    assert not tgw_plan.find(SLR)
    for site in ("cloud", "cloud2"):
        assert len(_asg_statements(tgw_plan, site)) == 2
    assert not tgw_plan.find(INGRESS, "cloud2-cluster-api-198.51.100.0-29")  # public path: no private rule


def test_a_stack_file_still_setting_autoscaling_service_role_loads_and_changes_nothing(adopted_plan: Plan) -> None:
    # Older stack files set aws_account.autoscaling_service_role (create or existing); the key is ignored.
    assert not adopted_plan.find(SLR)
    assert not [r for r in adopted_plan.resources if "autoscaling-role" in r.name]


# -- item 15: the site key protected, control-plane logs encrypted with it -----------------------------------


def test_site_key_is_protected_and_encrypts_the_control_plane_log_group(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["aws-train"]
    key = plan.one(KEY, "use1-cluster-key")
    assert key.protect  # losing it makes the cluster's secrets and every node volume unreadable
    logs = plan.one("aws:cloudwatch/logGroup:LogGroup", "use1-cluster-logs")
    assert logs.inputs["name"] == "/aws/eks/train-prod-use1/cluster" and key.key in logs.dependencies
    # CloudWatch Logs user guide, "Encrypt log data in CloudWatch Logs using AWS KMS": the key policy lets
    # logs.<region>.amazonaws.com use the key for that log group's ARN (kms:EncryptionContext:aws:logs:arn).
    stmt = next(s for s in json.loads(key.inputs["policy"])["Statement"] if s["Principal"].get("Service"))
    assert stmt["Principal"] == {"Service": "logs.us-east-1.amazonaws.com"}
    assert "kms:GenerateDataKey*" in stmt["Action"] and "kms:Decrypt*" in stmt["Action"]
    assert stmt["Condition"] == {"ArnEquals": {"kms:EncryptionContext:aws:logs:arn":
        "arn:aws:logs:us-east-1:ACCOUNT_ID_KNOWN_AT_APPLY:log-group:/aws/eks/train-prod-use1/cluster"}}  # fmt: skip


# -- item 8: vpc-cni managed, pinned, NetworkPolicy enforced; nodes start after it ------------------------------


@pytest.mark.parametrize(("stack", "site"), [("aws-train", "use1"), ("hybrid", "cloud")])
def test_vpc_cni_addon_is_pinned_with_network_policy_on_before_the_system_nodes(
    example_plans: dict[str, Plan], stack: str, site: str
) -> None:
    # EKS user guide, cni-network-policy-configure: configuration value {"enableNetworkPolicy": "true"} on the
    # Amazon EKS add-on (version 1.14 or later).
    plan = example_plans[stack]
    addon = plan.one(ADDON, f"{site}-cluster-vpc-cni")
    assert addon.inputs["addonName"] == "vpc-cni" and addon.inputs["addonVersion"] == VPC_CNI_ADDON
    assert json.loads(addon.inputs["configurationValues"]) == {"enableNetworkPolicy": "true"}
    assert addon.inputs["resolveConflictsOnCreate"] == "OVERWRITE"  # takes over the bootstrapped self-managed copy
    system = plan.one(NG, f"{site}-cluster-system")
    assert addon.key in system.dependencies


@pytest.mark.parametrize(("stack", "site"), [("aws-train", "use1"), ("hybrid", "cloud")])
def test_node_monitoring_agents_dcgm_server_runs_on_tainted_gpu_nodes(
    example_plans: dict[str, Plan], stack: str, site: str
) -> None:
    # aws/eks-node-monitoring-agent v1.7.0: the agent detects XIDs only through DCGM, and its dcgm-server DaemonSet
    # defaults to dcgmAgent.tolerations: [] while every GPU node carries nvidia.com/gpu=present:NoSchedule.
    addon = example_plans[stack].one(ADDON, f"{site}-cluster-eks-node-monitoring-agent")
    assert json.loads(addon.inputs["configurationValues"]) == {"dcgmAgent": {"tolerations": [{"operator": "Exists"}]}}


# -- item 12: in-cluster releases wait for the nodes they schedule on ------------------------------------------


@pytest.mark.parametrize(("stack", "site"), [("aws-train", "use1"), ("hybrid", "cloud")])
def test_kubernetes_provider_and_so_every_release_waits_for_the_system_nodes(
    example_plans: dict[str, Plan], stack: str, site: str
) -> None:
    # The Kueue controller (and the operators) need a node: a release created before the system node group
    # times out (Helm's default wait). Every object sent through the provider waits for it.
    plan = example_plans[stack]
    provider = plan.one("pulumi:providers:kubernetes", f"{site}-k8s")
    assert plan.one(NG, f"{site}-cluster-system").key in provider.dependencies
    releases = [r for r in plan.find("kubernetes:helm.sh/v3:Release") if r.provider == provider.key]
    assert any(r.inputs["chart"].endswith("kueue") for r in releases)


# -- item 15: adopting a cluster changes nothing of it ---------------------------------------------------------


def test_adopted_cluster_gets_no_addons_system_nodes_or_api_rules(adopted_plan: Plan) -> None:
    assert not adopted_plan.find(ADDON)
    assert not [ng for ng in adopted_plan.find(NG) if ng.name.endswith("-system")]
    assert not adopted_plan.find(SG, "use1-cluster-api")
    assert not [r for r in adopted_plan.find(INGRESS) if r.name.startswith("use1-cluster-api")]
    assert not adopted_plan.find(ENDPOINT)  # an adopted VPC's routes are not gpufleet's
    provider = adopted_plan.one("pulumi:providers:kubernetes", "use1-k8s")
    assert _deps(provider) == {"use1-cluster-eks"}  # the adopted cluster read for its kubeconfig, no nodes
    assert {ng.inputs["clusterName"] for ng in adopted_plan.find(NG)} == {"shared-prod"}  # GPU pools still join


# -- item 15: capacity blocks follow EKS's scale-to-zero -------------------------------------------------------


def test_capacity_block_node_group_leaves_its_desired_size_to_eks(tgw_plan: Plan) -> None:
    # EKS user guide, capacity-blocks-mng: EKS scales the node group to 0 forty minutes before the reservation
    # ends ("Amazon EKS Node Group Capacity Scaledown Before Reservation End").
    block = tgw_plan.one(NG, "cloud-block-h200-ng")
    assert block.inputs["capacityType"] == "CAPACITY_BLOCK"
    assert block.ignore_changes == ["scalingConfig.desiredSize"]
    assert block.inputs["scalingConfig"]["minSize"] == 0
    # a burst group's desired size is the cluster autoscaler's (tests/hybrid/test_capacity.py); a steady group's is the stack's
    assert tgw_plan.one(NG, "cloud-cluster-system").ignore_changes == []


def test_capacity_block_pool_with_a_minimum_above_zero_is_refused() -> None:
    estate = example_estate("aws-train")
    estate["sites"][0]["node_pools"].append(
        {"name": "h200-block", "role": "training", "instance_type": "p5en.48xlarge", "fabric": "train-efa",
         "capacity": {"type": "capacity-block", "reservation_id": RESERVATION}, "scaling": {"min": 1, "max": 2}}
    )  # fmt: skip
    with pytest.raises(SpecError) as err:
        parse_estate(estate, "stacks/Pulumi.aws-train.yaml")
    (problem,) = err.value.problems
    assert problem.startswith(
        "stacks/Pulumi.aws-train.yaml: config.gpufleet:estate.sites[0].node_pools[3].scaling.min: pool h200-block "
        "runs on a capacity block"
    )


# -- item 13: S3 traffic off NAT; interface endpoints where asked -----------------------------------------------


@pytest.mark.parametrize(("stack", "site", "azs"), [("aws-train", "use1", 3), ("hybrid", "cloud", 2)])
def test_s3_gateway_endpoint_serves_every_private_route_table(
    example_plans: dict[str, Plan], stack: str, site: str, azs: int
) -> None:
    # VPC user guide, gateway endpoints for S3: a route-table target, no hourly or data processing charge, where
    # NAT gateways bill per GB processed. Fabric subnets use their AZ's private route table, so EFA nodes too.
    plan = example_plans[stack]
    s3 = plan.one(ENDPOINT, f"{site}-net-s3")
    assert s3.inputs["serviceName"] == "com.amazonaws.us-east-1.s3" and s3.inputs["vpcEndpointType"] == "Gateway"
    private = sorted(f"{t.name}-id" for t in plan.find(ROUTE_TABLE) if "-private-" in t.name)
    assert sorted(s3.inputs["routeTableIds"]) == private and len(private) == azs
    assert [e.name for e in plan.find(ENDPOINT)] == [f"{site}-net-s3"]  # no interface endpoints unless asked


def test_interface_endpoints_answer_with_private_dns_in_the_private_subnets(tgw_plan: Plan) -> None:
    eps = {e.name: e.inputs for e in tgw_plan.find(ENDPOINT) if e.inputs["vpcEndpointType"] == "Interface"}
    assert set(eps) == {"cloud-net-ecr.api", "cloud-net-ecr.dkr", "cloud-net-sts"}
    for name, ep in eps.items():
        assert ep["serviceName"] == f"com.amazonaws.us-east-1.{name.removeprefix('cloud-net-')}"
        assert ep["privateDnsEnabled"] is True and ep["securityGroupIds"] == ["cloud-net-endpoints-id"]
        assert sorted(ep["subnetIds"]) == ["cloud-net-private-us-east-1a-id", "cloud-net-private-us-east-1b-id"]
    sg = tgw_plan.one(SG, "cloud-net-endpoints")
    assert [(r["fromPort"], r["cidrBlocks"]) for r in sg.inputs["ingress"]] == [(443, ["10.50.0.0/16"])]
