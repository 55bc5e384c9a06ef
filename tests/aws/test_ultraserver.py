"""GB200 UltraServer pools on EKS: the catalog's facts, the node group and launch template EKS prescribes, NVIDIA's
DRA driver with ComputeDomains, Kueue counting IMEX channels, and the rules that refuse what EKS cannot run."""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.kubernetes.device_plugin import device_plugin_values
from gpufleet.charts.cache import ChartCache
from gpufleet.charts.render import render_release
from gpufleet.engine.plan import Plan, PlanResource
from gpufleet.engine.synth import synth
from gpufleet.review import review
from gpufleet.review.reality import validate
from gpufleet.review.review import Review
from model import catalog, dra, rdma, versions
from model.conventions import DRA_DRIVER_NAMESPACE, HELM_RELEASE
from model.load import SpecError, parse_estate
from model.spec import EstateSpec
from tests.aws.ultraserver import BLOCK, gb200_config
from tests.conftest import write_project

LT = "aws:ec2/launchTemplate:LaunchTemplate"
NG = "aws:eks/nodeGroup:NodeGroup"
NOW = dt.datetime(2026, 12, 2, 12, 0, tzinfo=dt.UTC)  # before the block starts


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_project(tmp_path_factory.mktemp("gb200"), gb200_config())


@pytest.fixture(scope="module")
def plan(project: Path) -> Plan:
    return synth(project, "test")


@pytest.fixture(scope="module")
def reviewed(project: Path) -> Review:
    return review.build(project, "test", NOW)


def note_text() -> str:
    return str(json.loads(catalog.INSTANCES_FILE.read_text())[catalog.PUBLISHED_KEY]["p6e-gb200.36xlarge"]["source"])


def plan_spec() -> EstateSpec:
    return parse_estate(gb200_config()["gpufleet:estate"], "stacks/Pulumi.test.yaml")


def _release(plan: Plan, chart: str) -> PlanResource:
    (r,) = [r for r in plan.find(HELM_RELEASE) if r.inputs.get("chart") == chart]
    return r


def test_the_catalog_knows_p6e_gb200_as_a_rack_scale_arm_capacity_block_type() -> None:
    it = catalog.instance_type("p6e-gb200.36xlarge")
    assert (it.gpu.id, it.gpu_count, it.vcpus, it.memory_mib, it.architecture) == (
        "GB200-185GB",
        4,
        144,
        960 * 1024,
        "arm64",
    )
    assert (it.nvlink_domain_gpus, it.rack_scale, it.capacity_block_only) == (72, True, True)
    # nvidia-smi on a GB200: 189471MiB per GPU (EC2: 740 GiB, 4 x 185 GiB), not 185e9 B (176429 MiB).
    assert it.gpu.memory_mib == 189471
    # 8 EFA-only interfaces at 400 Gbps (EC2's P6e-GB200 EFA section); the note says where the figure is unverified.
    assert it.network_performance == "3200 Gigabit"
    assert "no refresh account could describe it" not in note_text()
    # Not rack-scale: an HGX node's NVLink domain is its own 8 GPUs; a GPU without NVLink is alone.
    assert [catalog.instance_type(t).nvlink_domain_gpus for t in ("p5.48xlarge", "g6e.xlarge")] == [8, 1]
    assert not catalog.instance_type("p5.48xlarge").rack_scale
    note = json.loads(catalog.INSTANCES_FILE.read_text())[catalog.PUBLISHED_KEY]["p6e-gb200.36xlarge"]
    assert "ml-eks-nvidia-ultraserver" in note["source"] and note["verified"] is False
    # The block rate: the x72 UltraServer's $761.904/h over its 18 instances.
    rate = catalog.capacity_block_price("p6e-gb200.36xlarge", "us-east-1")
    assert rate is not None and rate.usd == pytest.approx(761.904 / 18)


def test_the_variant_previews_with_no_findings_no_first_up_problem_and_every_journey_as_promised(
    reviewed: Review,
) -> None:
    assert reviewed.findings is not None and list(reviewed.findings) == []
    assert reviewed.first_up is not None and reviewed.first_up.problems == []
    # The DRA driver's chart rendered and its objects (CRDs, DeviceClasses, DaemonSet) were checked.
    assert any("nvidia-dra-driver-gpu" in k for k in reviewed.first_up.rendered)
    assert reviewed.journeys is not None
    wrong = [j.title for j in reviewed.journeys if j.verdict != j.expected]
    assert wrong == []
    (gang,) = [j for j in reviewed.journeys if "gang on gb200" in j.title]
    assert gang.verdict == "runs" and gang.title.endswith("in one ComputeDomain")
    pod = gang.workload.manifest["spec"]["template"]["spec"]
    assert pod["resourceClaims"] == [{"name": "imex", "resourceClaimTemplateName": "gang-gb200-channel"}]


def test_the_ultraserver_node_group_runs_the_arm_nvidia_ami_on_its_block_at_desired_zero(plan: Plan) -> None:
    ng = plan.one(NG, "use1-gb200-ng")
    assert ng.inputs["amiType"] == "AL2023_ARM_64_NVIDIA"  # Grace is arm64 (EKS user guide, ml-eks-nvidia-ultraserver)
    assert ng.inputs["capacityType"] == "CAPACITY_BLOCK"
    assert ng.inputs["scalingConfig"]["desiredSize"] == 0  # before the block starts
    assert plan.one(NG, "use1-h100-ng").inputs["amiType"] == "AL2023_x86_64_NVIDIA"


def test_the_ultraserver_launch_template_is_the_one_eks_prescribes(plan: Plan) -> None:
    lt = plan.one(LT, "use1-gb200-lt")
    assert lt.inputs["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert lt.inputs["capacityReservationSpecification"]["capacityReservationTarget"]["capacityReservationId"] == BLOCK
    assert "placement" not in lt.inputs  # an UltraServer block is co-located; no cluster placement group
    nics = lt.inputs["networkInterfaces"]
    # Card 0 is the ENA primary (EKS: "the primary NCI (index 0) must be of type interface"); EC2's "EFA
    # configuration for P6e-GB200 instances" (efa-acc-inst-types#efa-for-p6e): EFA-only only on odd cards, the
    # recommended 4 on cards 1, 5, 9 and 13, which the EKS page's "4 allocatable EFA devices per node" expects.
    assert (nics[0]["networkCardIndex"], nics[0]["interfaceType"]) == (0, "interface")
    assert [n["networkCardIndex"] for n in nics[1:]] == [1, 5, 9, 13]
    assert {n["interfaceType"] for n in nics[1:]} == {"efa-only"}
    assert {n["deviceIndex"] for n in nics[1:]} == {0}
    assert catalog.instance_type("p6e-gb200.36xlarge").max_efa_interfaces == 8  # every odd card, 1-15
    assert (
        rdma.fabric_requests(plan_spec(), plan_spec().sites[0], plan_spec().sites[0].node_pools[-1])[
            "vpc.amazonaws.com/efa"
        ]
        == "4"
    )
    # The three 7.5 TB instance stores are striped RAID0 by nodeadm (EKS: NodeConfig localStorage RAID0).
    assert "strategy: RAID0" in base64.b64decode(lt.inputs["userData"]).decode()


def test_the_dra_driver_runs_compute_domains_without_gpu_allocation_on_the_ultraserver_nodes(plan: Plan) -> None:
    r = _release(plan, versions.NVIDIA_DRA_DRIVER.name)
    assert (r.inputs["version"], r.inputs["namespace"]) == ("25.12.0", DRA_DRIVER_NAMESPACE)
    values = r.inputs["values"]
    assert values["resources"] == {"gpus": {"enabled": False}, "computeDomains": {"enabled": True}}
    terms = values["kubeletPlugin"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "gpufleet.io/pool", "operator": "In", "values": ["gb200"]}]}
    ]
    assert values["controller"]["tolerations"] == []  # EKS has no control-plane nodes to tolerate
    (ns,) = [
        n for n in plan.find("kubernetes:core/v1:Namespace") if n.inputs["metadata"]["name"] == DRA_DRIVER_NAMESPACE
    ]
    assert ns.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"


def test_aws_train_without_a_rack_scale_pool_installs_no_dra_driver(example_plans: dict[str, Plan]) -> None:
    charts = {r.inputs.get("chart") for r in example_plans["aws-train"].find(HELM_RELEASE)}
    assert versions.NVIDIA_DRA_DRIVER.name not in charts


def test_kueue_maps_the_channel_and_gpu_device_classes_and_queues_cover_imex_channels(plan: Plan) -> None:
    kueue = _release(plan, "oci://registry.k8s.io/kueue/charts/kueue")
    config = yaml.safe_load(kueue.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert config["resources"]["deviceClassMappings"] == [
        {"name": "gpufleet.io/imex-channel", "deviceClassNames": ["compute-domain-default-channel.nvidia.com"]},
        {"name": "nvidia.com/gpu", "deviceClassNames": ["gpu.nvidia.com"]},
    ]
    cq = next(
        r
        for r in plan.find("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue")
        if r.inputs["metadata"]["name"] == "research"
    )
    group = cq.inputs["spec"]["resourceGroups"][0]
    assert group["coveredResources"][-1] == dra.IMEX_CHANNEL_RESOURCE
    quota = {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in group["flavors"]}
    # A channel is held by a pod that holds a GPU of the pool: channels follow the GPU quota, 0 elsewhere.
    assert quota["gb200"][dra.IMEX_CHANNEL_RESOURCE] == quota["gb200"]["nvidia.com/gpu"] == 72
    assert quota["h100"][dra.IMEX_CHANNEL_RESOURCE] == 0


def test_the_dra_objects_validate_against_the_pinned_schemas() -> None:
    version = next(v for v in validate.bundled_versions() if v.startswith("1.34"))  # the oldest EKS minor pinned
    assert validate.builtin_issues(dra.channel_claim_template("cd-channel", "research"), version) == []
    # A v1beta1-shaped request (`deviceClassName` straight on the request) is what v1 no longer takes.
    old = dra.channel_claim_template("cd-channel", "research")
    old["spec"]["spec"]["devices"]["requests"][0] = {"name": "channel", "deviceClassName": dra.CHANNEL_DEVICE_CLASS}
    assert validate.builtin_issues(old, version)
    cache = Path(os.environ["GPUFLEET_CHART_CACHE"])
    crd = yaml.safe_load(
        (cache / "nvidia-dra-driver-gpu-25.12.0/crds/resource.nvidia.com_computedomains.yaml").read_text()
    )
    assert validate.crd_issues(dra.compute_domain("cd", "research", "cd-channel"), crd) == []


def _problems(config: dict[str, Any]) -> str:
    with pytest.raises(SpecError) as err:
        parse_estate(config["gpufleet:estate"], "stacks/Pulumi.test.yaml")
    return str(err.value)


def test_p6e_gb200_off_a_capacity_block_is_refused_with_the_reason() -> None:
    config = gb200_config()
    pool = config["gpufleet:estate"]["sites"][0]["node_pools"][-1]
    pool["capacity"] = {"type": "on-demand"}
    message = _problems(config)
    assert "node_pools[3].capacity.type: p6e-gb200.36xlarge is sold only through EC2 Capacity Blocks" in message


def test_an_ultraserver_pool_grows_by_whole_ultraservers() -> None:
    config = gb200_config()
    config["gpufleet:estate"]["sites"][0]["node_pools"][-1]["scaling"]["max"] = 10
    message = _problems(config)
    assert (
        "node_pools[3].scaling.max: pool gb200's p6e-gb200.36xlarge nodes come in whole UltraServers of 9 or 18"
        in message
    )
    config["gpufleet:estate"]["sites"][0]["node_pools"][-1]["scaling"]["max"] = 9  # one u-p6e-gb200x36
    config["gpufleet:estate"]["tenants"][0]["gpu_quota"]["gb200"] = 36
    parse_estate(config["gpufleet:estate"], "stacks/Pulumi.test.yaml")


def test_a_rack_scale_pool_on_kubernetes_before_1_34_is_refused_naming_the_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every EKS minor gpufleet pins serves resource.k8s.io/v1 today; the rule guards a pin below 1.34.
    monkeypatch.setattr(dra, "MIN_KUBERNETES", (1, 35))
    message = _problems(gb200_config())
    assert "sites[0].cluster.version: pool gb200 is rack-scale (72-GPU NVLink domain)" in message
    assert "resource.k8s.io/v1" in message


def _unknown_keys(ours: dict[str, Any], defaults: dict[str, Any], path: str = "") -> list[str]:
    """Keys of `ours` the chart's values.yaml lacks (Helm ignores an unknown key without a word). An `affinity` is
    a Kubernetes Affinity the chart passes through whole (templates/controller.yaml, kubeletplugin.yaml)."""
    out = []
    for key, value in ours.items():
        if key not in defaults:
            out.append(f"{path}{key}")
        elif key != "affinity" and isinstance(value, dict) and isinstance(defaults[key], dict) and defaults[key]:
            out += _unknown_keys(value, defaults[key], f"{path}{key}.")
    return out


def test_the_dra_driver_values_are_chart_keys_and_render_channels_but_no_gpu_class(plan: Plan) -> None:
    cache = ChartCache(Path(os.environ["GPUFLEET_CHART_CACHE"]))
    r = _release(plan, versions.NVIDIA_DRA_DRIVER.name)
    defaults = yaml.safe_load((cache.locate(versions.NVIDIA_DRA_DRIVER).path / "values.yaml").read_text())
    assert _unknown_keys(r.inputs["values"], defaults) == []
    rendered = render_release(r, cache)
    assert rendered.rendered, rendered.error
    classes = {o.name for o in rendered.objects if o.kind == "DeviceClass"}
    assert {dra.CHANNEL_DEVICE_CLASS, dra.DAEMON_DEVICE_CLASS} <= classes
    assert dra.GPU_DEVICE_CLASS not in classes  # GPU allocation off: GPUs stay with the device plugin
    (plugin,) = [o for o in rendered.objects if o.kind == "DaemonSet"]
    affinity = plugin.manifest["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    terms = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "gpufleet.io/pool", "operator": "In", "values": ["gb200"]}]}]


def test_gfd_and_nfd_run_on_a_site_with_a_rack_scale_pool_for_the_clique_label() -> None:
    # EKS user guide ml-eks-nvidia-ultraserver: NFD and GFD are required; GFD applies nvidia.com/gpu.clique. The GPU
    # Operator runs both always; the standalone device plugin must turn them on for a rack-scale pool too.
    config = gb200_config()
    config["gpufleet:estate"]["sites"][0].setdefault("kubernetes", {})["gpu_stack"] = "device-plugin"
    site = parse_estate(config["gpufleet:estate"], "stacks/Pulumi.test.yaml").sites[0]
    assert all(p.sharing.mode == "whole" for p in site.node_pools)  # no sharing pool asks for GFD here
    values = device_plugin_values(site, nfd_elsewhere=False)
    assert values["gfd"] == {"enabled": True} and values["nfd"]["enabled"] is True


def test_a_pool_of_one_x36_ultraserver_has_a_36_gpu_domain() -> None:
    # EKS user guide ml-eks-nvidia-ultraserver: u-p6e-gb200x36 is 9 instances (36 GPUs), u-p6e-gb200x72 18 (72).
    config = gb200_config()
    config["gpufleet:estate"]["sites"][0]["node_pools"][-1]["scaling"]["max"] = 9
    config["gpufleet:estate"]["tenants"][0]["gpu_quota"]["gb200"] = 36
    spec = parse_estate(config["gpufleet:estate"], "stacks/Pulumi.test.yaml")
    assert dra.domain_gpus(spec.sites[0].node_pools[-1]) == 36
    assert dra.domain_gpus(plan_spec().sites[0].node_pools[-1]) == 72


def test_the_rendered_channel_device_class_validates_against_the_pinned_schema(plan: Plan) -> None:
    # The DeviceClasses are the driver chart's (templates/deviceclass-*.yaml at v25.12.0), as the product installs them.
    version = next(v for v in validate.bundled_versions() if v.startswith("1.34"))
    rendered = render_release(
        _release(plan, versions.NVIDIA_DRA_DRIVER.name), ChartCache(Path(os.environ["GPUFLEET_CHART_CACHE"]))
    )
    (channel,) = [o for o in rendered.objects if o.kind == "DeviceClass" and o.name == dra.CHANNEL_DEVICE_CLASS]
    assert channel.manifest["apiVersion"] == dra.RESOURCE_API
    assert validate.builtin_issues(channel.manifest, version) == []
    # The channel template the journey walks (claims.templates) is the controller's, and validates too.
    assert validate.builtin_issues(dra.channel_claim_template("gang-gb200-channel", "research"), version) == []
