"""Pure helpers of the AWS site: subnet maths, placement, scaling, node-group labels, throughput, user data."""

from __future__ import annotations

import datetime as dt
import ipaddress

import pytest
import yaml

from components.aws.fabric import fabric_needs_placement_group, pool_placement_group
from components.aws.launch import nodeadm_user_data
from components.aws.node_pool import ignored_changes, imds_hop_limit, mng_labels, mng_scaling
from components.aws.storage import tenant_uid, throughput_warning
from model import clock, versions
from model.conventions import TENANT_NODE_LABEL
from model.load import parse_estate
from model.nodes import pool_labels
from model.spec import AwsNodePool, AwsSite, BurstWindow, EfaFabric, FsxLustreTier, Scaling
from model.subnets import plan_subnets
from tests.conftest import example_estate

NOW = dt.datetime(2026, 11, 29, 12, tzinfo=dt.UTC)


def _train() -> tuple[AwsSite, dict]:
    spec = parse_estate(example_estate("aws-train"), "aws-train")
    site = spec.sites[0]
    assert isinstance(site, AwsSite)
    return site, {"spec": spec}


def test_subnets_do_not_overlap_each_other_or_the_fabric_subnet() -> None:
    plan = plan_subnets("10.40.0.0/16", ["us-east-1a", "us-east-1b", "us-east-1c"], ["10.40.128.0/20"])
    nets = [ipaddress.ip_network(c) for c in [*plan.private.values(), *plan.public.values(), "10.40.128.0/20"]]
    for i, a in enumerate(nets):
        for b in nets[i + 1 :]:
            assert not a.overlaps(b), (a, b)
    assert all(ipaddress.ip_network(c).prefixlen == 19 for c in plan.private.values())
    assert all(ipaddress.ip_network(c).subnet_of(ipaddress.ip_network("10.40.0.0/16")) for c in plan.public.values())


def test_subnets_rejected_when_the_vpc_is_too_small() -> None:
    with pytest.raises(ValueError, match="too small"):
        plan_subnets("10.0.0.0/24", ["a", "b", "c"], ["10.0.0.0/25"])


def _efa_pool(capacity: dict) -> AwsNodePool:
    return AwsNodePool.model_validate(
        {"name": "p", "role": "training", "instance_type": "p5.48xlarge", "fabric": "f", "capacity": capacity,
         "scaling": {"max": 2}}
    )  # fmt: skip


def test_placement_group_skipped_for_capacity_reservation_and_block_pools() -> None:
    fabric = EfaFabric(kind="efa", name="f", availability_zone="us-east-1a", subnet_cidr="10.0.0.0/20")
    odcr = _efa_pool({"type": "capacity-reservation", "reservation_id": "cr-0123456789abcdef0"})
    block = _efa_pool({"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0"})
    on_demand = _efa_pool({"type": "on-demand"})
    assert pool_placement_group(odcr, fabric, "est-prod-site-f") is None
    assert pool_placement_group(block, fabric, "est-prod-site-f") is None
    assert pool_placement_group(on_demand, fabric, "est-prod-site-f") == "est-prod-site-f"
    assert not fabric_needs_placement_group(fabric, [odcr, block])  # nobody would use it
    assert fabric_needs_placement_group(fabric, [odcr, on_demand])


def test_named_placement_group_is_used_even_by_reserved_pools() -> None:
    fabric = EfaFabric(kind="efa", name="f", availability_zone="us-east-1a", placement_group_name="odcr-pg")
    odcr = _efa_pool({"type": "capacity-reservation", "reservation_id": "cr-0123456789abcdef0"})
    assert pool_placement_group(odcr, fabric, None) == "odcr-pg"
    # Capacity Blocks don't support placement groups (EC2 user guide, ec2-capacity-blocks, Considerations).
    block = _efa_pool({"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0"})
    assert pool_placement_group(block, fabric, None) is None
    assert not fabric_needs_placement_group(fabric, [odcr, _efa_pool({"type": "on-demand"})])


def _burst_pool() -> AwsNodePool:
    return AwsNodePool.model_validate(
        {"name": "burst-h100", "role": "training", "instance_type": "p5.48xlarge", "burst": True,
         "scaling": {"min": 0, "max": 4}}
    )  # fmt: skip


def _window(start: dt.datetime, hours: int, nodes: int = 3) -> BurstWindow:
    return BurstWindow(
        pool="burst-h100", nodes=nodes, instance_type="p5.48xlarge", availability_zone="us-east-1a",
        start=start, expires=start + dt.timedelta(hours=hours),
    )  # fmt: skip


def test_burst_node_group_starts_at_zero_under_the_window_cap_and_leaves_desired_to_the_autoscaler() -> None:
    spec = parse_estate(example_estate("hybrid"), "hybrid")
    pool = spec.pool("burst-h100")
    assert isinstance(pool, AwsNodePool)
    assert mng_scaling(spec, pool, None, NOW) == (0, 0, 1)  # EKS needs maxSize >= 1; nothing runs at desired 0
    expired = _window(NOW - dt.timedelta(hours=10), 8)
    assert mng_scaling(spec, pool, expired, NOW) == (0, 0, 1)
    open_window = _window(NOW - dt.timedelta(hours=1), 8, nodes=3)
    assert mng_scaling(spec, pool, open_window, NOW) == (0, 0, 3)
    assert ignored_changes(spec, pool, open_window, NOW) == ["scalingConfig.desiredSize"]  # the autoscaler's
    assert ignored_changes(spec, pool, None, NOW) == []  # idle: 0 is sent, so the group empties
    assert ignored_changes(spec, _fixed(_efa_pool({"type": "on-demand"})), None, NOW) == []


def test_reopening_over_draining_nodes_never_sends_a_desired_size_and_never_shrinks_the_max() -> None:
    """A window opened while a replaced window's 4 nodes drain: whatever figure the program sent as the desired size
    would be wrong (0 stops the draining nodes; the old cap starts idle ones when fewer ran). So inside a window it
    is never sent: Pulumi sends the state's value, which the burst commands' refresh makes the live count
    (https://www.pulumi.com/docs/iac/concepts/options/ignorechanges/). The max keeps room for the 4."""
    spec = parse_estate(example_estate("hybrid"), "hybrid")
    pool = spec.pool("burst-h100")
    assert isinstance(pool, AwsNodePool)
    until = NOW + dt.timedelta(minutes=30)
    reopened = _window(NOW, 8, nodes=2).model_copy(update={"draining_nodes": 4, "draining_until": until})
    for at in (NOW, NOW + dt.timedelta(hours=1)):
        assert mng_scaling(spec, pool, reopened, at) == (0, 0, 4)  # the bounds do not shrink mid-window
        assert ignored_changes(spec, pool, reopened, at) == ["scalingConfig.desiredSize"]
    bigger = reopened.model_copy(update={"nodes": 6})
    assert mng_scaling(spec, pool, bigger, NOW) == (0, 0, 6)


def _fixed(pool: AwsNodePool) -> AwsNodePool:
    """The pool at a fixed size: min == max, nothing to scale."""
    return pool.model_copy(update={"scaling": Scaling(min=2, desired=2, max=2)})


def test_a_pool_that_can_grow_leaves_its_desired_size_to_the_autoscaler_and_a_fixed_pool_keeps_its_own() -> None:
    site_spec = parse_estate(example_estate("aws-train"), "aws-train")
    h100 = site_spec.pool("h100")  # min 0, desired 2, max 4
    assert isinstance(h100, AwsNodePool)
    assert h100.autoscaled and not h100.burst
    assert ignored_changes(site_spec, h100, None, NOW) == ["scalingConfig.desiredSize"]
    fixed = _fixed(h100)
    assert not fixed.autoscaled
    assert ignored_changes(site_spec, fixed, None, NOW) == []


def test_imds_hop_limit_is_two_only_where_pods_need_imds() -> None:
    pool = _burst_pool()
    assert imds_hop_limit(pool) == 1
    assert imds_hop_limit(pool.model_copy(update={"pods_need_imds": True})) == 2


def test_node_group_labels_drop_prefixes_the_eks_api_rejects() -> None:
    site, ctx = _train()
    pool = next(p for p in site.node_pools if p.dedicated_to == "agents")
    assert TENANT_NODE_LABEL in pool_labels(ctx["spec"], pool)
    labels = mng_labels(ctx["spec"], pool)
    assert TENANT_NODE_LABEL not in labels
    assert not any("kubernetes.io/" in k or "k8s.io/" in k for k in labels)
    assert labels["gpufleet.io/pool"] == "agents-l40s"


def test_throughput_warning_names_tier_numbers_and_fix_for_an_undersized_fsx() -> None:
    site, _ = _train()
    small = FsxLustreTier(
        kind="fsx-lustre", name="lustre", fabric="train-efa", capacity_gib=2400, throughput_per_tib=125
    )
    msg = throughput_warning(site, small)
    assert msg is not None
    assert "lustre" in msg and "0.3 GB/s" in msg and "20.0 GB/s" in msg  # 2400 GiB x 125 MB/s/TiB vs 4 x 5 GB/s
    assert "raise capacity_gib or throughput_per_tib" in msg


def test_throughput_warning_silent_for_the_example_tier() -> None:
    site, _ = _train()
    tier = next(t for t in site.storage if isinstance(t, FsxLustreTier))
    assert throughput_warning(site, tier) is None


def test_nodeadm_user_data_stripes_instance_store_raid0_in_mime() -> None:
    text = nodeadm_user_data("/scratch", local_storage=True, lustre_client=False)
    assert text is not None and text.startswith("MIME-Version: 1.0\n")
    part = text.split("Content-Type: application/node.eks.aws\n\n", 1)[1].split("\n--", 1)[0]
    doc = yaml.safe_load(part)
    assert doc["apiVersion"] == "node.eks.aws/v1alpha1" and doc["kind"] == "NodeConfig"
    assert doc["spec"]["instance"]["localStorage"] == {"strategy": "RAID0", "mountPath": "/scratch"}


def test_tenant_uid_is_stable_and_distinct_for_the_example_tenants() -> None:
    uids = {t: tenant_uid(t) for t in ("research", "product", "agents")}
    assert len(set(uids.values())) == 3
    assert uids["research"] == tenant_uid("research") and all(u >= 50_000 for u in uids.values())


def test_user_data_without_a_scratch_tier_keeps_nodeadms_default_mount() -> None:
    text = nodeadm_user_data(None, local_storage=True, lustre_client=False)
    assert text is not None and "strategy: RAID0" in text and "mountPath" not in text


def test_every_node_of_a_site_with_a_lustre_tier_installs_the_lustre_client(example_plans: dict) -> None:
    # AL2023 EKS AMIs ship no Lustre client, so the FSx CSI driver cannot mount (aws-fsx-csi-driver#437); every
    # launch template of aws-train (FSx tier) runs the install script, parsed as the MIME cloud-init reads.
    import base64
    import email

    templates = example_plans["aws-train"].find("aws:ec2/launchTemplate:LaunchTemplate")
    assert templates
    for lt in templates:
        raw = lt.inputs.get("userData")
        assert raw, lt.name
        message = email.message_from_string(base64.b64decode(raw).decode())
        assert message.is_multipart(), lt.name
        scripts = [p.get_payload() for p in message.get_payload() if p.get_content_type() == "text/x-shellscript"]
        assert sum("dnf install -y lustre-client" in s for s in scripts) == 1, lt.name
    # A site without one adds nothing: the hybrid cloud site has no Lustre tier.
    for lt in example_plans["hybrid"].find("aws:ec2/launchTemplate:LaunchTemplate"):
        assert "lustre-client" not in base64.b64decode(lt.inputs.get("userData") or "").decode(), lt.name


def test_efa_pools_pre_allocate_the_huge_pages_efa_jobs_request(example_plans: dict) -> None:
    # EKS user guide (node-efa): EFA nodes "pre-allocate 5128 2MiB Huge Pages", which the public nccl-tests jobs
    # request (hugepages-2Mi: 5120Mi); gpufleet sets vm.nr_hugepages itself on every EFA pool's nodes, and the
    # Auto Scaling group's node template says so for scaling from zero (cluster-autoscaler AWS README).
    import base64

    plan = example_plans["aws-train"]
    pools = example_estate("aws-train")["sites"][0]["node_pools"]
    for lt in plan.find("aws:ec2/launchTemplate:LaunchTemplate"):
        pool = next((p for p in pools if lt.name.endswith(f"-{p['name']}-lt")), {})
        text = base64.b64decode(lt.inputs.get("userData") or "").decode()
        assert ("sysctl -w vm.nr_hugepages=5128" in text) == bool(pool.get("fabric")), lt.name
    tags = {
        t.inputs["tag"]["key"]: t.inputs["tag"]["value"]
        for t in plan.find("aws:autoscaling/tag:Tag")
        if "h100" in t.key
    }
    assert tags.get("k8s.io/cluster-autoscaler/node-template/resources/hugepages-2Mi") == str(5128 * 2 * 2**20)


def test_no_user_data_where_a_node_needs_none() -> None:
    assert nodeadm_user_data(None, local_storage=False, lustre_client=False) is None


def test_a_site_whose_pools_can_grow_runs_the_autoscaler_at_its_kubernetes_minor() -> None:
    """cluster-autoscaler's minor must match the control plane's (cluster-autoscaler README, "Releases"): each
    pinned EKS minor names a chart whose appVersion is of that minor."""
    for minor, pinned in versions.EKS_MINORS.items():
        assert versions.kubernetes_minor(pinned.cluster_autoscaler_app) == minor
    estate = example_estate("aws-train")
    estate["sites"][0]["cluster"]["version"] = "1.35"
    parse_estate(estate, "aws-train")  # autoscaled pools on 1.35


def _block_pool(start: dt.datetime | None) -> AwsNodePool:
    # EC2 blocks end at 11:30 UTC (EC2 user guide, ec2-capacity-blocks), so a start off 11:30 gives its end
    end = (start + dt.timedelta(days=7)).replace(hour=11, minute=30) if start else None
    block = {"days": 7, **({"start": start.isoformat(), "end": end.isoformat()} if start and end else {})}
    capacity = {"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0", "block": block}
    return _efa_pool(capacity).model_copy(update={"scaling": Scaling(min=0, desired=2, max=2)})


def test_a_capacity_block_node_group_starts_at_desired_zero_until_its_block_starts() -> None:
    """EKS user guide, capacity-blocks-mng: a group created before the reservation is active cannot launch into
    it. So the group is created at 0 and the autoscaler grows it inside the block. A block is judged by the
    program's clock, not the burst window's moment."""
    spec = _train()[1]["spec"]
    later = _block_pool(NOW + dt.timedelta(days=2))
    with clock.frozen(NOW):
        assert mng_scaling(spec, later, None, NOW) == (0, 0, 2)
        assert mng_scaling(spec, _block_pool(None), None, NOW) == (0, 0, 2)  # no start: not known to be active
        started = _block_pool(NOW - dt.timedelta(hours=1))
        assert mng_scaling(spec, started, None, NOW) == (0, 2, 2)
        assert ignored_changes(spec, later, None, NOW) == ["scalingConfig.desiredSize"]  # never sent again
