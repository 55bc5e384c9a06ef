"""The AWS site under mocks: what the example stacks and a variant with reserved capacity synthesize into."""

from __future__ import annotations

import base64
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from components.aws.storage import throughput_warning
from gpufleet.engine.plan import Plan, PlanResource
from gpufleet.engine.synth import synth
from tests.conftest import example_config, write_project

LT = "aws:ec2/launchTemplate:LaunchTemplate"
NG = "aws:eks/nodeGroup:NodeGroup"
ASG_TAG = "aws:autoscaling/tag:Tag"
REQUIRED_TAGS = ("owner", "cost-center", "env", "cluster", "tenant")
STATEFUL = ("aws:fsx/lustreFileSystem:LustreFileSystem", "aws:efs/fileSystem:FileSystem", "aws:s3/bucket:Bucket")
RESERVATION = "cr-0123456789abcdef0"


@pytest.fixture(scope="module")
def variant_plan(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    """aws-train plus an ODCR pool, a capacity-block pool, a pool whose pods need IMDS, and an undersized FSx."""
    config: dict[str, Any] = example_config("aws-train")
    site = config["gpufleet:estate"]["sites"][0]
    site["node_pools"] += [
        {"name": "h100-odcr", "role": "training", "instance_type": "p5.48xlarge", "fabric": "train-efa",
         "capacity": {"type": "capacity-reservation", "reservation_id": RESERVATION}, "scaling": {"max": 2}},
        {"name": "h200-block", "role": "training", "instance_type": "p5en.48xlarge", "fabric": "train-efa",
         "capacity": {"type": "capacity-block", "reservation_id": RESERVATION}, "scaling": {"max": 2}},
    ]  # fmt: skip
    site["node_pools"][1]["pods_need_imds"] = True  # l40s
    lustre = next(t for t in site["storage"] if t["kind"] == "fsx-lustre")
    lustre.update(capacity_gib=2400, throughput_per_tib=125)
    return synth(write_project(tmp_path_factory.mktemp("aws-variant"), config), "test")


def _pool_lt(plan: Plan, site: str, pool: str) -> PlanResource:
    return plan.one(LT, f"{site}-{pool}-lt")


def _pool_ng(plan: Plan, site: str, pool: str) -> PlanResource:
    return plan.one(NG, f"{site}-{pool}-ng")


def _gpu_pools(plan: Plan) -> list[tuple[PlanResource, PlanResource]]:
    out = []
    for ng in plan.find(NG):
        if ng.inputs.get("amiType") != "AL2023_x86_64_NVIDIA":
            continue
        lt = plan.one(LT, ng.name.removesuffix("-ng") + "-lt")
        out.append((lt, ng))
    return out


# -- what the example stacks contain --------------------------------------------------------------------


@pytest.mark.parametrize("stack", ["aws-train", "hybrid"])
def test_example_synthesizes_the_aws_building_blocks(example_plans: dict[str, Plan], stack: str) -> None:
    types = example_plans[stack].type_counts()
    for t in ("aws:eks/cluster:Cluster", NG, LT, "aws:ec2/placementGroup:PlacementGroup",
              "aws:ec2/securityGroup:SecurityGroup", "aws:s3/bucket:Bucket", "aws:kms/key:Key"):  # fmt: skip
        assert types[t] >= 1, t
    if stack == "aws-train":
        assert types["aws:fsx/lustreFileSystem:LustreFileSystem"] == 1
        assert types["aws:efs/fileSystem:FileSystem"] == 1


def test_a_pool_is_one_launch_template_and_one_node_group(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["aws-train"]
    assert len(_gpu_pools(plan)) == 3  # h100, l40s, agents-l40s
    for lt, ng in _gpu_pools(plan):
        pool_component = plan.get(ng.parent or "")
        assert {r.type for r in plan.children(pool_component.key)} - {ASG_TAG} == {LT, NG}
        assert lt.parent == ng.parent


def test_eks_cluster_is_private_or_restricted_encrypted_and_logs_everything(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["aws-train"]
    cluster = plan.one("aws:eks/cluster:Cluster", "use1-cluster-eks")
    vpc = cluster.inputs["vpcConfig"]
    assert vpc["endpointPrivateAccess"] is True
    assert vpc["endpointPublicAccess"] is True and vpc["publicAccessCidrs"] == ["203.0.113.0/24"]
    assert cluster.inputs["encryptionConfig"]["resources"] == ["secrets"]
    assert sorted(cluster.inputs["enabledClusterLogTypes"]) == sorted(
        ["api", "audit", "authenticator", "controllerManager", "scheduler"]
    )
    assert cluster.inputs["accessConfig"]["authenticationMode"] == "API"
    assert cluster.inputs["version"] == "1.34"
    key = plan.one("aws:kms/key:Key", "use1-cluster-key")
    assert key.inputs["enableKeyRotation"] is True and key.key in cluster.dependencies
    assert '"*"' not in json.dumps(json.loads(key.inputs["policy"])["Statement"][0]["Principal"])
    hybrid = example_plans["hybrid"].one("aws:eks/cluster:Cluster", "cloud-cluster-eks")
    assert hybrid.inputs["vpcConfig"]["endpointPublicAccess"] is False  # no CIDRs listed: private only


def test_admin_roles_get_an_access_entry_with_cluster_admin(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["aws-train"]
    entry = plan.one("aws:eks/accessEntry:AccessEntry", "use1-cluster-admin-platform-admin")
    assoc = plan.one("aws:eks/accessPolicyAssociation:AccessPolicyAssociation", "use1-cluster-admin-platform-admin")
    arn = "arn:aws:iam::123456789012:role/platform-admin"
    assert entry.inputs["principalArn"] == arn and assoc.inputs["principalArn"] == arn
    assert assoc.inputs["policyArn"] == "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
    assert assoc.inputs["accessScope"] == {"type": "cluster"}


def test_kubernetes_provider_gets_a_secret_kubeconfig_from_the_cluster(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["aws-train"]
    provider = plan.one("pulumi:providers:kubernetes", "use1-k8s")
    assert provider.inputs["kubeconfig"] == "[secret]"
    assert any(d.endswith("aws:eks/cluster:Cluster::use1-cluster-eks") for d in provider.dependencies)


def test_nodes_run_in_private_subnets_only(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["aws-train"]
    public = {s.key for s in plan.find("aws:ec2/subnet:Subnet") if "-public-" in s.name}
    for subnet in plan.find("aws:ec2/subnet:Subnet"):
        assert subnet.inputs["mapPublicIpOnLaunch"] is False
    for ng in plan.find(NG):
        assert not any(dep in public for dep in ng.dependencies)
        assert all("private" in s or "efa-subnet" in s for s in ng.inputs["subnetIds"])


# -- every GPU pool's launch template and node group ------------------------------------------------


@pytest.mark.parametrize("stack", ["aws-train", "hybrid"])
def test_every_gpu_launch_template_requires_imdsv2_and_encrypts_its_root_volume(
    example_plans: dict[str, Plan], stack: str
) -> None:
    plan = example_plans[stack]
    key = next(k for k in plan.find("aws:kms/key:Key") if k.name.endswith("-cluster-key"))
    for lt, _ in _gpu_pools(plan):
        meta = lt.inputs["metadataOptions"]
        assert meta["httpTokens"] == "required" and meta["httpPutResponseHopLimit"] == 1
        ebs = lt.inputs["blockDeviceMappings"][0]["ebs"]
        assert ebs["encrypted"] == "true" and ebs["volumeType"] == "gp3"
        assert key.key in lt.dependencies  # kmsKeyId is the site key's ARN (unknown offline)


def test_hop_limit_two_only_for_the_pool_whose_pods_need_imds(variant_plan: Plan) -> None:
    limits = {lt.name: lt.inputs["metadataOptions"]["httpPutResponseHopLimit"] for lt, _ in _gpu_pools(variant_plan)}
    assert limits.pop("use1-l40s-lt") == 2
    assert set(limits.values()) == {1}


@pytest.mark.parametrize("stack", ["aws-train", "hybrid"])
def test_every_gpu_node_group_is_tainted_labelled_repaired_and_tagged(
    example_plans: dict[str, Plan], stack: str
) -> None:
    plan = example_plans[stack]
    for lt, ng in _gpu_pools(plan):
        assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"} in ng.inputs["taints"]
        assert ng.inputs["labels"]["nvidia.com/gpu.present"] == "true"
        repair = ng.inputs["nodeRepairConfig"]
        assert repair["enabled"] is True and repair["maxParallelNodesRepairedCount"] == 1, repair
        assert ng.inputs["labels"]["gpufleet.io/remediator"] == "eks-node-repair"
        for tags in [ng.tags, lt.tags, *(spec["tags"] for spec in lt.inputs["tagSpecifications"])]:
            assert all(k in tags for k in REQUIRED_TAGS), tags
        assert sorted(s["resourceType"] for s in lt.inputs["tagSpecifications"]) == [
            "instance", "network-interface", "volume"
        ]  # fmt: skip


def test_node_repair_carries_the_pools_limits_and_overrides(example_plans: dict[str, Plan]) -> None:
    repairs = {ng.name: ng.inputs["nodeRepairConfig"] for _, ng in _gpu_pools(example_plans["aws-train"])}
    assert repairs["use1-h100-ng"] == {
        "enabled": True,
        "maxUnhealthyNodeThresholdCount": 1,
        "maxParallelNodesRepairedCount": 1,
        "nodeRepairConfigOverrides": [
            {
                "nodeMonitoringCondition": "AcceleratedHardwareReady",
                "nodeUnhealthyReason": "NvidiaXID79Error",
                "repairAction": "Replace",
                "minRepairWaitTimeMins": 5,
            }
        ],
    }
    # No threshold unless set: a default 20% would stop repair at the first bad node of a 2-node pool (AWS
    # NodeRepairConfig: "above which node auto repair actions will stop").
    assert repairs["use1-l40s-ng"] == {"enabled": True, "maxParallelNodesRepairedCount": 1}


def test_another_remediator_turns_eks_node_repair_off(tmp_path: Path) -> None:
    config: dict[str, Any] = example_config("aws-train")
    config["gpufleet:estate"]["sites"][0]["node_pools"][1]["health"] = {"remediator": "nvsentinel-janitor"}
    plan = synth(write_project(tmp_path, config), "test")
    ng = next(ng for _, ng in _gpu_pools(plan) if ng.name == "use1-l40s-ng")
    assert ng.inputs["nodeRepairConfig"] == {"enabled": False}
    assert ng.inputs["labels"]["gpufleet.io/remediator"] == "nvsentinel-janitor"


def test_dedicated_pool_is_tagged_and_tainted_for_its_tenant(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["aws-train"]
    lt, ng = _pool_lt(plan, "use1", "agents-l40s"), _pool_ng(plan, "use1", "agents-l40s")
    assert ng.tags["tenant"] == "agents" and lt.inputs["tagSpecifications"][0]["tags"]["tenant"] == "agents"
    assert {"key": "tenant", "value": "agents", "effect": "NO_SCHEDULE"} in ng.inputs["taints"]


def test_gpu_nodes_stripe_instance_store_nvme_as_scratch(example_plans: dict[str, Plan]) -> None:
    lt = _pool_lt(example_plans["aws-train"], "use1", "h100")
    text = base64.b64decode(lt.inputs["userData"]).decode()
    assert "kind: NodeConfig" in text and "strategy: RAID0" in text and "mountPath: /scratch" in text


def test_efa_pool_launch_template_lays_out_the_catalog_interfaces(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["aws-train"]
    lt, ng = _pool_lt(plan, "use1", "h100"), _pool_ng(plan, "use1", "h100")
    nics = lt.inputs["networkInterfaces"]
    assert len([n for n in nics if n["interfaceType"] == "efa-only"]) == 32
    assert (nics[0]["networkCardIndex"], nics[0]["deviceIndex"], nics[0]["interfaceType"]) == (0, 0, "interface")
    efa_sg = plan.one("aws:ec2/securityGroup:SecurityGroup", "use1-train-efa-sg")
    assert all("use1-train-efa-sg-id" in n["securityGroups"] for n in nics)
    assert all("subnetId" not in n for n in nics)  # EKS rejects a subnet in a node group's launch template
    assert efa_sg.key in lt.dependencies
    assert ng.inputs["subnetIds"] == ["use1-train-efa-subnet-id"]  # the fabric's one subnet
    assert lt.inputs["placement"]["groupName"] == "train-prod-use1-train-efa"
    non_efa = _pool_lt(plan, "use1", "l40s")
    assert "networkInterfaces" not in non_efa.inputs and "placement" not in non_efa.inputs


def test_efa_security_group_is_open_only_to_itself(example_plans: dict[str, Plan]) -> None:
    sg = example_plans["aws-train"].one("aws:ec2/securityGroup:SecurityGroup", "use1-train-efa-sg")
    for rule in [*sg.inputs["ingress"], *sg.inputs["egress"]]:
        assert rule["self"] is True and rule["protocol"] == "-1"
        assert "cidrBlocks" not in rule and "ipv6CidrBlocks" not in rule and rule["description"]


def test_fabric_subnet_sits_in_the_fabric_az(example_plans: dict[str, Plan]) -> None:
    subnet = example_plans["aws-train"].one("aws:ec2/subnet:Subnet", "use1-train-efa-subnet")
    assert subnet.inputs["availabilityZone"] == "us-east-1a" and subnet.inputs["cidrBlock"] == "10.40.128.0/20"


# -- capacity --------------------------------------------------------------------------------------------


def test_capacity_reservation_pool_targets_its_reservation_without_a_placement_group(variant_plan: Plan) -> None:
    lt, ng = _pool_lt(variant_plan, "use1", "h100-odcr"), _pool_ng(variant_plan, "use1", "h100-odcr")
    target = lt.inputs["capacityReservationSpecification"]["capacityReservationTarget"]
    assert target["capacityReservationId"] == RESERVATION
    assert "placement" not in lt.inputs and "instanceMarketOptions" not in lt.inputs
    assert ng.inputs["capacityType"] == "ON_DEMAND"
    assert "placement" in _pool_lt(variant_plan, "use1", "h100").inputs  # the on-demand pool keeps the group


def test_capacity_block_pool_uses_the_block_market_and_capacity_type(variant_plan: Plan) -> None:
    lt, ng = _pool_lt(variant_plan, "use1", "h200-block"), _pool_ng(variant_plan, "use1", "h200-block")
    assert lt.inputs["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert lt.inputs["capacityReservationSpecification"]["capacityReservationTarget"]["capacityReservationId"] == (
        RESERVATION
    )
    assert ng.inputs["capacityType"] == "CAPACITY_BLOCK"
    assert "placement" not in lt.inputs
    assert len([n for n in lt.inputs["networkInterfaces"] if n["interfaceType"] == "efa-only"]) == 16


# -- autoscaling ------------------------------------------------------------------------------------------


def _asg_tags(plan: Plan, site: str, pool: str) -> dict[str, str]:
    """The tags gpufleet sets on a pool's Auto Scaling group."""
    ng = _pool_ng(plan, site, pool)
    return {t.inputs["tag"]["key"]: t.inputs["tag"]["value"] for t in plan.find(ASG_TAG) if t.parent == ng.parent}


def _autoscaler_values(plan: Plan, site: str) -> dict[str, Any]:
    release = plan.one("kubernetes:helm.sh/v3:Release", f"{site}-autoscaler-release")
    return dict(release.inputs["values"])


def _discovered(plan: Plan, site: str) -> set[str]:
    """Pools whose Auto Scaling group carries every tag the site's autoscaler discovers groups by."""
    keys = _autoscaler_values(plan, site)["autoDiscovery"]["tags"]
    out = set()
    for ng in plan.find(NG):
        tags = {t.inputs["tag"]["key"] for t in plan.find(ASG_TAG) if t.parent == ng.parent}
        if ng.parent and set(keys) <= tags:
            out.add(ng.inputs["labels"]["gpufleet.io/pool"])
    return out


def test_aws_train_autoscaler_discovers_every_pool_that_can_grow(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["aws-train"]
    # h100 0-4, l40s 1-6, agents-l40s 0-4: every pool whose min is below its max, and not the system nodes.
    assert _discovered(plan, "use1") == {"h100", "l40s", "agents-l40s"}
    values = _autoscaler_values(plan, "use1")
    assert values["autoDiscovery"]["clusterName"] == "train-prod-use1"
    assert values["extraArgs"]["expander"] == "least-waste"
    # a quarantined node picked as the group's template must not stop its scale-up: a status taint is sanitized
    assert values["extraArgs"]["status-taint"] == "gpufleet.io/quarantine"


def test_a_fixed_size_pool_is_neither_discovered_nor_left_to_the_autoscaler(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    config = example_config("aws-train")
    pools = config["gpufleet:estate"]["sites"][0]["node_pools"]
    pools[1]["scaling"] = {"min": 6, "desired": 6, "max": 6}  # l40s at a fixed size (its quota is 24 GPUs)
    plan = synth(write_project(tmp_path_factory.mktemp("one"), config), "test")
    assert _discovered(plan, "use1") == {"h100", "agents-l40s"}
    assert _asg_tags(plan, "use1", "l40s") == {}
    assert "scalingConfig.desiredSize" not in _pool_ng(plan, "use1", "l40s").ignore_changes
    assert "scalingConfig.desiredSize" in _pool_ng(plan, "use1", "h100").ignore_changes
    # With every pool at a fixed size nothing is scaled, so no autoscaler is deployed.
    for p in pools:
        p["scaling"] = {"min": p["scaling"]["max"], "max": p["scaling"]["max"]}
    fixed = synth(write_project(tmp_path_factory.mktemp("all"), config), "test")
    assert not fixed.find("kubernetes:helm.sh/v3:Release", "use1-autoscaler-release")
    assert not fixed.find(ASG_TAG)


def test_h100_scales_from_zero_with_8_gpus_and_32_efa_interfaces(example_plans: dict[str, Plan]) -> None:
    tags = _asg_tags(example_plans["aws-train"], "use1", "h100")
    template = "k8s.io/cluster-autoscaler/node-template"
    assert tags[f"{template}/resources/nvidia.com/gpu"] == "8"
    assert tags[f"{template}/resources/vpc.amazonaws.com/efa"] == "32"
    assert tags[f"{template}/label/gpufleet.io/pool"] == "h100"
    assert tags[f"{template}/taint/nvidia.com/gpu"] == "present:NoSchedule"
    assert tags["gpufleet.io/autoscaled-pool"] == "h100"


def test_the_autoscaler_may_scale_only_this_clusters_autoscaled_groups(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["aws-train"]
    policy = json.loads(plan.one("aws:iam/rolePolicy:RolePolicy", "use1-autoscaler-policy").inputs["policy"])
    scale = next(s for s in policy["Statement"] if "autoscaling:SetDesiredCapacity" in s["Action"])
    assert scale["Condition"] == {
        "StringEquals": {"aws:ResourceTag/k8s.io/cluster-autoscaler/train-prod-use1": "owned"},
        "Null": {"aws:ResourceTag/gpufleet.io/autoscaled-pool": "false"},
    }
    # The system node group, which EKS tags as the cluster's too, carries no gpufleet tag.
    system = [ng for ng in plan.find(NG) if ng.inputs.get("amiType") != "AL2023_x86_64_NVIDIA"]
    assert system and not [t for t in plan.find(ASG_TAG) for ng in system if t.parent == ng.parent]


def test_kueue_quota_on_each_pool_is_capacity_the_plan_can_reach(example_plans: dict[str, Plan]) -> None:
    """Every tenant's nominal GPU quota on a pool fits the nodes the pool can have: its max where the autoscaler
    discovers it, else the size it is given."""
    plan = example_plans["aws-train"]
    discovered = _discovered(plan, "use1")
    nominal: dict[str, int] = {}
    for cq in plan.find("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"):
        for f in cq.inputs["spec"]["resourceGroups"][0]["flavors"]:
            gpus = next(r for r in f["resources"] if r["name"] == "nvidia.com/gpu")
            nominal[f["name"]] = nominal.get(f["name"], 0) + int(gpus["nominalQuota"])
    per_node = {"h100": 8, "l40s": 4, "agents-l40s": 1}
    for pool, quota in nominal.items():
        scaling = _pool_ng(plan, "use1", pool).inputs["scalingConfig"]
        nodes = scaling["maxSize"] if pool in discovered else scaling["desiredSize"]
        assert quota <= nodes * per_node[pool], pool


# -- burst ------------------------------------------------------------------------------------------------


def test_hybrid_burst_pool_is_at_zero_without_a_window(example_plans: dict[str, Plan]) -> None:
    scaling = _pool_ng(example_plans["hybrid"], "cloud", "burst-h100").inputs["scalingConfig"]
    assert scaling["minSize"] == 0 and scaling["desiredSize"] == 0


def test_hybrid_burst_pool_takes_the_open_windows_cap_and_starts_at_zero(tmp_path: Path) -> None:
    config = example_config("hybrid")
    start = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(hours=1)  # open now, within the budget
    config["gpufleet:burstWindow"] = {
        "pool": "burst-h100", "nodes": 3, "instance_type": "p5.48xlarge", "availability_zone": "us-east-1a",
        "start": start.isoformat(), "expires": (start + dt.timedelta(hours=8)).isoformat(),
    }  # fmt: skip
    plan = synth(write_project(tmp_path, config), "test")
    assert _pool_ng(plan, "cloud", "burst-h100").inputs["scalingConfig"] == {
        "minSize": 0, "desiredSize": 0, "maxSize": 3
    }  # fmt: skip


# -- storage ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ["aws-train", "hybrid"])
def test_stateful_tiers_and_their_keys_are_protected_and_retained(example_plans: dict[str, Plan], stack: str) -> None:
    plan = example_plans[stack]
    stateful = [r for t in STATEFUL for r in plan.find(t)]
    stateful += [k for k in plan.find("aws:kms/key:Key") if not k.name.endswith("-cluster-key")]
    assert stateful
    for r in stateful:
        assert r.protect and r.retain_on_delete, r.key


def test_fsx_is_persistent_2_in_the_fabric_subnet_with_its_own_key(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["aws-train"]
    fs = plan.one("aws:fsx/lustreFileSystem:LustreFileSystem", "use1-storage-lustre")
    assert fs.inputs["deploymentType"] == "PERSISTENT_2"
    assert fs.inputs["perUnitStorageThroughput"] == 1000 and fs.inputs["storageCapacity"] == 24000
    assert fs.inputs["subnetIds"] == "use1-train-efa-subnet-id"
    assert plan.one("aws:kms/key:Key", "use1-storage-lustre-key").key in fs.dependencies  # kmsKeyId: its ARN
    dra = plan.one("aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation", "use1-storage-lustre-s3")
    assert dra.inputs["dataRepositoryPath"] == "s3://train-prod-datasets"
    sg = plan.one("aws:ec2/securityGroup:SecurityGroup", "use1-storage-lustre-sg")
    ingress = [
        r.inputs
        for r in plan.find("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
        if r.inputs.get("securityGroupId") == "use1-storage-lustre-sg-id"
    ]
    ports = {(r["fromPort"], r["toPort"]) for r in ingress}
    assert ports == {(988, 988), (1018, 1023)} and all(r["description"] for r in ingress)
    assert len(ingress) == 4  # from the group itself and from the nodes, each port range
    assert not sg.inputs.get("ingress") and all("cidrIpv4" not in r for r in ingress)


def test_efs_is_elastic_encrypted_with_tenant_access_points(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["aws-train"]
    fs = plan.one("aws:efs/fileSystem:FileSystem", "use1-storage-home")
    assert fs.inputs["encrypted"] is True and fs.inputs["throughputMode"] == "elastic"
    assert len(plan.find("aws:efs/mountTarget:MountTarget")) == 3  # one per private subnet
    aps = {ap.name: ap.inputs for ap in plan.find("aws:efs/accessPoint:AccessPoint")}
    # The untrusted tenant `agents` declares no file systems, so it gets none.
    assert set(aps) == {"use1-storage-home-research", "use1-storage-home-product"}
    ap = aps["use1-storage-home-product"]
    assert ap["rootDirectory"]["path"] == "/tenants/product" and ap["posixUser"]["uid"] == ap["posixUser"]["gid"]
    sc = plan.one("kubernetes:storage.k8s.io/v1:StorageClass", "use1-storage-home-sc")
    assert sc.inputs["provisioner"] == "efs.csi.aws.com" and sc.inputs["parameters"]["provisioningMode"] == "efs-ap"


def test_s3_buckets_are_private_kms_encrypted_versioned_logged_and_tls_only(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["aws-train"]
    names = {b.inputs["bucket"] for b in plan.find("aws:s3/bucket:Bucket")}
    assert names == {"train-prod-datasets", "train-prod-checkpoints", "train-prod-models", "train-prod-access-logs"}
    for purpose in ("datasets", "checkpoints", "models"):
        r = f"use1-storage-objects-{purpose}"
        pab = plan.one("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", r).inputs
        assert all(pab[k] is True for k in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls",
                                            "restrictPublicBuckets"))  # fmt: skip
        sse = plan.one("aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration", r)
        rule = sse.inputs["rules"][0]
        assert rule["applyServerSideEncryptionByDefault"]["sseAlgorithm"] == "aws:kms" and rule["bucketKeyEnabled"]
        versioning = plan.one("aws:s3/bucketVersioning:BucketVersioning", r).inputs["versioningConfiguration"]
        assert versioning["status"] == "Enabled"
        lifecycle = plan.one("aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration", r).inputs["rules"]
        assert any("noncurrentVersionExpiration" in x for x in lifecycle)
        assert any("abortIncompleteMultipartUpload" in x for x in lifecycle)
        logging = plan.one("aws:s3/bucketLogging:BucketLogging", r).inputs
        assert logging["targetBucket"] == "use1-storage-objects-access-logs-id"
        policy = json.loads(plan.one("aws:s3/bucketPolicy:BucketPolicy", r).inputs["policy"])
        deny = policy["Statement"][0]
        assert deny["Effect"] == "Deny" and deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_csi_drivers_are_pinned_helm_releases(example_plans: dict[str, Plan]) -> None:
    from model import versions

    releases = {r.inputs["chart"]: r.inputs for r in example_plans["aws-train"].helm_releases()}
    assert releases["aws-fsx-csi-driver"]["version"] == versions.AWS_FSX_CSI_DRIVER.version
    assert releases["aws-efs-csi-driver"]["version"] == versions.AWS_EFS_CSI_DRIVER.version


def test_throughput_warning_fires_for_an_undersized_fsx_and_not_for_the_example(
    example_plans: dict[str, Plan], variant_plan: Plan
) -> None:
    fsx_warnings = [w for w in variant_plan.warnings if "FSx for Lustre delivers" in w]
    assert len(fsx_warnings) == 1
    assert "lustre" in fsx_warnings[0] and "0.3 GB/s" in fsx_warnings[0] and "40.0 GB/s" in fsx_warnings[0]
    assert not any("FSx for Lustre delivers" in w for w in example_plans["aws-train"].warnings)
    assert throughput_warning is not None


# -- tags -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ["aws-train", "hybrid"])
def test_every_taggable_aws_resource_of_the_site_carries_the_required_tags(
    example_plans: dict[str, Plan], stack: str
) -> None:
    doc = json.loads((Path(__file__).parents[2] / "policies/cost_tags/aws_taggable_types.json").read_text())
    taggable = set(doc["types"])
    plan = example_plans[stack]
    site = next(r for r in plan.resources if r.type == "gpufleet:aws:Site")
    checked = 0
    for r in plan.descendants(site.key):
        if r.type in taggable:
            assert all(k in r.tags for k in REQUIRED_TAGS), (r.key, r.tags)
            checked += 1
    assert checked > 20


# -- adoption -----------------------------------------------------------------------------------------------


def test_adopted_cluster_and_vpc_synthesize_without_creating_them(tmp_path: Path) -> None:
    config = example_config("aws-train")
    site = config["gpufleet:estate"]["sites"][0]
    site["cluster"]["adopt_name"] = "shared-prod"
    site["kubernetes"]["network_policy_cni"] = "vpc-cni"  # its owners run vpc-cni with enableNetworkPolicy
    site["vpc"] = {"vpc_id": "vpc-0abc", "private_subnet_ids": ["subnet-0a", "subnet-0b", "subnet-0c"]}
    site["fabrics"][0] = {"kind": "efa", "name": "train-efa", "availability_zone": "us-east-1a",
                          "subnet_id": "subnet-0efa"}  # fmt: skip
    plan = synth(write_project(tmp_path, config), "test")  # a read by id: no invoke that synth cannot answer
    assert not plan.find("aws:eks/cluster:Cluster") and not plan.find("aws:ec2/vpc:Vpc")
    assert not plan.find("aws:ec2/subnet:Subnet")
    ng = _pool_ng(plan, "use1", "h100")
    assert ng.inputs["clusterName"] == "shared-prod" and ng.inputs["subnetIds"] == ["subnet-0efa"]
    assert _pool_ng(plan, "use1", "l40s").inputs["subnetIds"] == ["subnet-0a", "subnet-0b", "subnet-0c"]
    assert plan.one("pulumi:providers:kubernetes", "use1-k8s").inputs["kubeconfig"] == "[secret]"
    # Tenants' S3 identities still come, with a warning: the adopted cluster's Pod Identity agent is its owners'.
    assert len(plan.find("aws:eks/podIdentityAssociation:PodIdentityAssociation")) >= 2
    assert any("eks-pod-identity-agent" in w and "shared-prod" in w for w in plan.warnings)


def test_node_groups_carry_the_kubernetes_cost_labels(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["aws-train"]
    for ng in plan.find(NG):
        labels = ng.inputs["labels"]
        assert labels["gpufleet.io/cost-center"] == "cc-4100" and labels["gpufleet.io/cluster"] == "train"
    assert _pool_ng(plan, "use1", "agents-l40s").inputs["labels"]["gpufleet.io/tenant"] == "agents"
    assert _pool_ng(plan, "use1", "h100").inputs["labels"]["gpufleet.io/tenant"] == "shared"


def test_fsx_is_shared_through_one_pre_bound_volume_per_tenant_never_provisioned(
    example_plans: dict[str, Plan],
) -> None:
    plan = example_plans["aws-train"]
    sc = plan.one("kubernetes:storage.k8s.io/v1:StorageClass", "use1-storage-lustre-sc")
    assert sc.inputs["provisioner"] == "kubernetes.io/no-provisioner"  # a claim can never create a file system
    pvs = [pv for pv in plan.find("kubernetes:core/v1:PersistentVolume") if pv.name.startswith("use1-storage-lustre-")]
    assert {pv.inputs["spec"]["claimRef"]["namespace"] for pv in pvs} == {"research", "product"}  # not `agents`
    for pv in pvs:
        spec = pv.inputs["spec"]
        assert spec["csi"]["driver"] == "fsx.csi.aws.com"
        assert spec["csi"]["volumeHandle"].startswith("use1-storage-lustre-id::")  # the file system, then the volume
        assert spec["persistentVolumeReclaimPolicy"] == "Retain" and spec["storageClassName"] == "lustre"
        assert pv.provider and pv.provider.endswith("pulumi:providers:kubernetes::use1-k8s")
