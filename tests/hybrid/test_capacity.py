"""Capacity follows demand inside a window: the window raises a cap, the cluster autoscaler grows the burst pool
for work Kueue admitted (ProvisioningRequest), and expiry stops admission, drains after the grace, shrinks to zero.

Upstream facts: cluster-autoscaler FAQ ("Enabling ProvisioningRequest Support", "Supported ProvisioningClasses")
and cloudprovider/aws/README.md at the tag of versions.CLUSTER_AUTOSCALER_APP; the cluster-autoscaler chart at
versions.CLUSTER_AUTOSCALER; Kueue's ProvisioningRequest admission check
(site/content/en/docs/concepts/admission_check/provisioning_request.md) and ClusterQueue stopPolicy
(apis/kueue/v1beta2/clusterqueue_types.go) at versions.KUEUE.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from gpufleet.engine.plan import Plan, PlanResource
from model import versions
from model.conventions import NODE_GROUP
from model.kinds.aws import AUTOSCALED_TAG, CA_TAG_PREFIX, NODE_TEMPLATE
from model.load import WINDOW_KEY
from model.nodes import POOL_LABEL
from tests.burst.helpers import hybrid_config, window
from tests.hybrid.plan_helpers import cluster, depends_on, kueue_objects, named, quota, releases
from tests.hybrid.upstream import chart_dir


def burst_group(plan: Plan) -> PlanResource:
    (ng,) = [r for r in plan.find(NODE_GROUP) if "burst-h100" in r.name]
    return ng


def cloud_queue(plan: Plan) -> dict[str, Any]:
    spec: dict[str, Any] = named(plan, "ClusterQueue", "research", "cloud").inputs["spec"]
    return spec


def cohort_gpus(plan: Plan) -> Any:
    (cohort,) = kueue_objects(plan, "Cohort", "cloud")
    return quota(cohort.inputs["spec"]["resourceGroups"], "nvidia.com/gpu")


def at(synth_config: Callable[[dict[str, Any]], Plan], start: dt.datetime, hours: float) -> Plan:
    config = hybrid_config()
    config[WINDOW_KEY] = json.dumps(window(start, hours, nodes=2))  # as `gpufleet burst open` stores it
    return synth_config(config)


def test_without_a_window_nothing_is_admitted_in_the_cloud_and_the_pool_stays_at_zero(
    example_plans: dict[str, Plan],
) -> None:
    plan = example_plans["hybrid"]
    assert cloud_queue(plan)["stopPolicy"] == "HoldAndDrain" and cohort_gpus(plan) == 0
    assert burst_group(plan).inputs["scalingConfig"] == {"minSize": 0, "desiredSize": 0, "maxSize": 1}


def test_open_window_raises_the_cap_and_starts_no_node(synth_config: Callable[[dict[str, Any]], Plan]) -> None:
    plan = at(synth_config, dt.datetime.now(dt.UTC) - dt.timedelta(hours=1), 8)
    ng = burst_group(plan)
    assert ng.inputs["scalingConfig"] == {"minSize": 0, "desiredSize": 0, "maxSize": 2}
    assert ng.ignore_changes == ["scalingConfig.desiredSize"]  # the autoscaler's from now on; no `up` resets it
    assert cloud_queue(plan)["stopPolicy"] == "None" and cohort_gpus(plan) == 16
    assert quota(cloud_queue(plan)["resourceGroups"], "nvidia.com/gpu") == 0  # tenants borrow the window


def test_expired_window_stops_admission_first_and_keeps_the_nodes_for_the_grace(
    synth_config: Callable[[dict[str, Any]], Plan],
) -> None:
    plan = at(synth_config, dt.datetime.now(dt.UTC) - dt.timedelta(hours=8, minutes=10), 8)  # 10 of 30 min grace
    assert cloud_queue(plan)["stopPolicy"] == "Hold"  # admitted work runs on; nothing new starts
    assert cohort_gpus(plan) == 16
    assert burst_group(plan).inputs["scalingConfig"]["maxSize"] == 2


def test_after_the_grace_cloud_work_goes_back_to_the_manager_and_the_pool_empties(
    synth_config: Callable[[dict[str, Any]], Plan],
) -> None:
    plan = at(synth_config, dt.datetime.now(dt.UTC) - dt.timedelta(hours=9), 8)
    assert cloud_queue(plan)["stopPolicy"] == "HoldAndDrain" and cohort_gpus(plan) == 0
    # max falls from the cap to EKS's floor of 1, and EKS receives desired 0 with it
    assert burst_group(plan).inputs["scalingConfig"] == {"minSize": 0, "desiredSize": 0, "maxSize": 1}


def test_cloud_queues_ask_the_autoscaler_for_the_nodes_before_admitting(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["hybrid"]
    (check,) = cloud_queue(plan)["admissionChecksStrategy"]["admissionChecks"]
    ac = named(plan, "AdmissionCheck", check["name"], "cloud")
    assert ac.inputs["spec"]["controllerName"] == "kueue.x-k8s.io/provisioning-request"
    config = named(plan, "ProvisioningRequestConfig", ac.inputs["spec"]["parameters"]["name"], "cloud")
    assert config.inputs["spec"]["provisioningClassName"] == "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
    assert config.inputs["spec"]["managedResources"] == ["nvidia.com/gpu"]


def test_cluster_autoscaler_runs_on_the_burst_site_with_provisioning_requests(example_plans: dict[str, Plan]) -> None:
    plan = example_plans["hybrid"]
    ca = releases(plan, "cluster-autoscaler")
    assert set(ca) == {"cloud"}
    values = ca["cloud"].inputs["values"]
    assert ca["cloud"].inputs["version"] == versions.CLUSTER_AUTOSCALER.version
    assert values["extraArgs"]["enable-provisioning-requests"] == "true"
    assert values["extraArgs"]["kube-api-content-type"] == "application/json"
    rules = {r for rule in values["rbac"]["additionalRules"] for r in rule["resources"]}
    assert {"provisioningrequests", "provisioningrequests/status", "podtemplates"} <= rules
    (identity,) = plan.find("aws:eks/podIdentityAssociation:PodIdentityAssociation", "cloud-autoscaler-identity")
    assert (identity.inputs["namespace"], identity.inputs["serviceAccount"]) == (
        "kube-system",
        values["rbac"]["serviceAccount"]["name"],
    )
    (policy,) = plan.find("aws:iam/rolePolicy:RolePolicy", "cloud-autoscaler-policy")
    scale = json.loads(policy.inputs["policy"])["Statement"][1]
    assert scale["Condition"] == {
        "StringEquals": {f"aws:ResourceTag/{CA_TAG_PREFIX}/hyb-prod-cloud": "owned"},
        "Null": {f"aws:ResourceTag/{AUTOSCALED_TAG}": "false"},
    }
    assert releases(plan, "cluster-autoscaler").keys() == {"cloud"}


def test_cloud_kueue_starts_after_the_provisioning_request_crd(example_plans: dict[str, Plan]) -> None:
    # Kueue enables its ProvisioningRequest check only if the CRD exists when it starts (cmd/kueue/main.go).
    plan = example_plans["hybrid"]
    (crd,) = plan.find("kubernetes:yaml/v2:ConfigFile")
    assert cluster(crd) == "cloud"
    assert f"/cluster-autoscaler-{versions.CLUSTER_AUTOSCALER_APP}/" in crd.inputs["file"]
    kueue = releases(plan, "kueue")["cloud"]
    assert depends_on(plan, kueue, crd) and depends_on(plan, releases(plan, "cluster-autoscaler")["cloud"], crd)
    assert kueue.inputs["values"]["controllerManager"]["manager"]["podAnnotations"]  # restarts when it appears


def _asg_tags(plan: Plan) -> dict[str, str]:
    return {r.inputs["tag"]["key"]: r.inputs["tag"]["value"] for r in plan.find("aws:autoscaling/tag:Tag")}


def test_burst_group_carries_what_the_autoscaler_needs_to_scale_it_from_zero(
    synth_config: Callable[[dict[str, Any]], Plan],
) -> None:
    plan = at(synth_config, dt.datetime.now(dt.UTC) - dt.timedelta(hours=1), 8)  # a window open: the group is found
    tags = _asg_tags(plan)
    values = releases(plan, "cluster-autoscaler")["cloud"].inputs["values"]
    assert set(values["autoDiscovery"]["tags"]) <= set(tags)  # discovered: every listed tag is on the group
    flavor = named(plan, "ResourceFlavor", "burst-h100", "cloud").inputs["spec"]
    for key, value in flavor["nodeLabels"].items():  # what Kueue's pods select, the template node has
        assert tags[f"{NODE_TEMPLATE}/label/{key}"] == value
    for t in flavor["tolerations"]:
        assert tags[f"{NODE_TEMPLATE}/taint/{t['key']}"] == f"{t['value']}:{t['effect']}"
    labels = burst_group(plan).inputs["labels"]
    assert labels["k8s.amazonaws.com/accelerator"] and labels[POOL_LABEL] == "burst-h100"
    # only autoscaled groups are discovered: the cloud site's one pool is its burst pool
    assert [r.inputs["tag"]["value"] for r in plan.find("aws:autoscaling/tag:Tag")
            if r.inputs["tag"]["key"] == AUTOSCALED_TAG] == ["burst-h100"]  # fmt: skip


@pytest.mark.parametrize("minor", list(versions.EKS_MINORS))
def test_autoscaler_values_are_settings_of_the_chart_pinned_for_each_minor(
    minor: str, example_plans: dict[str, Plan]
) -> None:
    pinned = versions.EKS_MINORS[minor]
    chart = chart_dir(pinned.cluster_autoscaler)
    defaults = yaml.safe_load((chart / "values.yaml").read_text())
    values = releases(example_plans["hybrid"], "cluster-autoscaler")["cloud"].inputs["values"]
    for key, value in values.items():
        assert key in defaults, key
        free_form = {"extraArgs", "nodeSelector", "resources", "securityContext", "containerSecurityContext"}
        if isinstance(value, dict) and key not in free_form:
            assert set(value) <= set(defaults[key]), key
    templates = "".join(p.read_text() for p in (chart / "templates").glob("*.yaml"))
    for used in (".Values.rbac.additionalRules", ".Values.extraArgs", ".Values.autoDiscovery.tags",
                 ".Values.rbac.serviceAccount.name", ".Values.nodeSelector", ".Values.awsRegion",
                 ".Values.resources", ".Values.securityContext", ".Values.containerSecurityContext"):  # fmt: skip
        assert used in templates or used in (chart / "templates" / "_helpers.tpl").read_text(), used
    assert yaml.safe_load((chart / "Chart.yaml").read_text())["appVersion"] == pinned.cluster_autoscaler_app


def test_the_1_35_autoscaler_may_read_the_dra_objects_it_always_handles(
    synth_config: Callable[[dict[str, Any]], Plan],
) -> None:
    """cluster-autoscaler 1.35 locks --enable-dynamic-resource-allocation to true (cluster-autoscaler/config/flags/
    flags.go at cluster-autoscaler-1.35.0), so the ClusterRole its release renders on a 1.35 site must grant
    get/list/watch on resource.k8s.io resourceslices, deviceclasses and resourceclaims (templates/clusterrole.yaml at
    cluster-autoscaler-chart-9.54.0 grants it; 9.53.0 does not)."""
    from gpufleet.charts.cache import ChartCache
    from gpufleet.charts.render import render_release
    from tests.conftest import example_config

    chart = chart_dir(versions.EKS_MINORS["1.35"].cluster_autoscaler)
    config = example_config("aws-train")
    config["gpufleet:estate"]["sites"][0]["cluster"]["version"] = "1.35"
    (release,) = releases(synth_config(config), "cluster-autoscaler").values()
    rendered = render_release(release, ChartCache(chart.parent))
    assert rendered.rendered, rendered.error
    (role,) = [o.manifest for o in rendered.objects if o.kind == "ClusterRole"]
    (dra,) = [r for r in role["rules"] if r.get("apiGroups") == ["resource.k8s.io"]]
    assert {"resourceslices", "deviceclasses", "resourceclaims"} <= set(dra["resources"])
    assert {"get", "list", "watch"} <= set(dra["verbs"])
    # and it runs cluster-autoscaler 1.35: chart 9.54.0's values.yaml alone would run v1.34.2 (`image.tag`)
    (deployment,) = [o.manifest for o in rendered.objects if o.kind == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"].endswith(":v1.35.0")


def test_each_site_runs_the_cluster_autoscaler_of_its_minor(example_plans: dict[str, Plan]) -> None:
    """The release names the image of the minor's autoscaler: a chart's default image can lag its appVersion."""
    (release,) = releases(example_plans["aws-train"], "cluster-autoscaler").values()
    pinned = versions.EKS_MINORS["1.34"]
    assert release.inputs["values"]["image"]["tag"] == f"v{pinned.cluster_autoscaler_app}"
    assert release.inputs["version"] == pinned.cluster_autoscaler.version


@pytest.mark.parametrize("minutes", [0, 29])
def test_the_cost_note_states_what_an_open_or_draining_window_may_cost_at_most(
    minutes: int, synth_config: Callable[[dict[str, Any]], Plan]
) -> None:
    from gpufleet.review.cost.envelope import estate_cost
    from model.load import parse_estate, parse_window
    from tests.conftest import example_estate

    spec = parse_estate(example_estate("hybrid"), "hybrid")
    start = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)
    w = parse_window(window(start, 8, nodes=2, usd_per_hour=55.04), "hybrid")
    now = start + dt.timedelta(hours=8 if minutes else 1, minutes=minutes)
    (pool,) = [p for p in estate_cost(spec, w, now).pools if p.pool == "burst-h100"]
    assert f"may cost at most ${55.04 * 2 * (8.5 + 16 / 60):,.2f}" in " ".join(pool.notes)
    assert pool.nodes == {"min": 0, "desired": 0, "max": 2}


def test_a_burst_group_on_efa_offers_its_efa_interfaces_to_the_autoscaler(example_plans: dict[str, Plan]) -> None:
    # A pending gang asks for vpc.amazonaws.com/efa; scaling a group from zero, the autoscaler sees only what its
    # node-template tags offer (cluster-autoscaler cloudprovider/aws/README.md, "Auto-Discovery Setup":
    # k8s.io/cluster-autoscaler/node-template/resources/<resource>), so without the tag it never starts a node.
    from model.efa import efa_interfaces
    from model.rdma import EFA_RESOURCE
    from tests.conftest import example_estate

    pools = [p for s in example_estate("hybrid")["sites"] for p in s.get("node_pools", []) if p.get("burst")]
    (instance,) = {p["instance_type"] for p in pools}
    tags = _asg_tags(example_plans["hybrid"])
    expected = sum(1 for s in efa_interfaces(instance) if s.is_efa)
    assert expected > 0 and tags[f"{NODE_TEMPLATE}/resources/{EFA_RESOURCE}"] == str(expected)


def test_the_cloud_worker_waits_for_cold_nodes_before_it_evicts_a_gang(
    example_plans: dict[str, Plan], synth_config: Callable[[dict[str, Any]], Plan]
) -> None:
    """A burst gang is admitted once its scale-up is requested, before its nodes exist: on AWS that scale-up is not
    atomic (cloudprovider/aws/aws_cloud_provider.go: "AtomicIncreaseSize is not implemented"; the FAQ's
    best-effort-atomic class then "doesn't guarantee atomicity"), and cold nodes take time to boot. So the cloud
    worker's waitForPodsReady adds `burst.node_boot_minutes` (default 15, the autoscaler's
    --max-node-provision-time) to the usual 10 minutes; on-prem keeps 10."""
    from tests.hybrid.plan_helpers import kueue_config

    kueue = releases(example_plans["hybrid"], "kueue")
    assert kueue_config(kueue["cloud"])["waitForPodsReady"]["timeout"] == "25m"
    assert kueue_config(kueue["onprem"])["waitForPodsReady"]["timeout"] == "10m"
    config = hybrid_config()
    config["gpufleet:estate"]["burst"]["node_boot_minutes"] = 40
    assert kueue_config(releases(synth_config(config), "kueue")["cloud"])["waitForPodsReady"]["timeout"] == "50m"
