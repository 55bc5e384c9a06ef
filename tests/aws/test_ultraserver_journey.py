"""The GB200 canonical gang as Kueue judges DRA (kubernetes-sigs/kueue v0.19.2 pkg/dra/claims.go): it runs only
with its ComputeDomain applied (whose controller creates the channel template), the channel class mapped in
`resources.deviceClassMappings` and IMEX channels covered by the tenant's ClusterQueue; and the tenant's Role
lets it create that ComputeDomain."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
import yaml

from gpufleet.charts.cache import ChartCache
from gpufleet.engine.synth import synth
from gpufleet.review.reality.checks import render
from gpufleet.review.reality.journeys.canonical import canonical_by_site, promised
from gpufleet.review.reality.journeys.core import ClusterView, Journey
from gpufleet.review.reality.journeys.estate import clusters
from gpufleet.review.reality.journeys.walk import walk
from gpufleet.review.reality.journeys.workloads import workload
from model import dra
from model.load import parse_estate
from model.spec import EstateSpec
from tests.aws.ultraserver import gb200_config
from tests.conftest import write_project

SITE = "use1"


@pytest.fixture(scope="module")
def spec() -> EstateSpec:
    return parse_estate(gb200_config()["gpufleet:estate"], "stacks/Pulumi.test.yaml")


@pytest.fixture(scope="module")
def views(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ClusterView]:
    plan = synth(write_project(tmp_path_factory.mktemp("gb200j"), gb200_config()), "test")
    return clusters(plan, render(plan, ChartCache()))


def _gang(spec: EstateSpec, views: dict[str, ClusterView]) -> Journey:
    (gang,) = [j for j in promised(spec, None, views) if "gang on gb200" in j.title]
    return gang


def _site(views: dict[str, ClusterView]) -> tuple[str, ClusterView]:
    return next((n, v) for n, v in views.items() if v.site == SITE)


def test_the_gang_applies_its_compute_domain_and_runs(spec: EstateSpec, views: dict[str, ClusterView]) -> None:
    (c,) = [c.canonical for c in canonical_by_site(spec) if "gang on gb200" in c.canonical.title]
    (domain,) = c.companions
    assert domain == dra.compute_domain("gang-gb200", "research", "gang-gb200-channel")
    gang = _gang(spec, views)
    assert gang.verdict == "runs", gang.blocked_at


def test_without_its_compute_domain_the_channel_template_does_not_exist(
    spec: EstateSpec, views: dict[str, ClusterView]
) -> None:
    (c,) = [c.canonical for c in canonical_by_site(spec) if "gang on gb200" in c.canonical.title]
    journey = walk(workload(c.manifest, "test"), views, spec, SITE)
    stop = journey.blocked_at
    assert stop is not None and stop.name == "queueing"
    assert stop.blocker == "ResourceClaimTemplate/research/gang-gb200-channel"


def test_an_unmapped_channel_class_makes_the_gang_inadmissible(spec: EstateSpec, views: dict[str, ClusterView]) -> None:
    name, view = _site(views)
    values = copy.deepcopy(view.releases["kueue"])
    manager = values["managerConfig"]
    config = yaml.safe_load(manager["controllerManagerConfigYaml"])
    config["resources"].pop("deviceClassMappings")
    manager["controllerManagerConfigYaml"] = yaml.safe_dump(config)
    gang = _gang(spec, {**views, name: replace(view, releases={**view.releases, "kueue": values})})
    stop = gang.blocked_at
    assert stop is not None and stop.name == "queueing"
    assert f"DeviceClass {dra.CHANNEL_DEVICE_CLASS} is not mapped in DRA configuration" in stop.detail


def test_a_cluster_queue_without_channel_quota_blocks_the_gang(spec: EstateSpec, views: dict[str, ClusterView]) -> None:
    name, view = _site(views)
    objects = []
    for o in view.objects:
        if o.get("kind") == "ClusterQueue" and o["metadata"]["name"] == "research":
            o = copy.deepcopy(o)
            for group in o["spec"]["resourceGroups"]:
                group["coveredResources"].remove(dra.IMEX_CHANNEL_RESOURCE)
                for f in group["flavors"]:
                    f["resources"] = [r for r in f["resources"] if r["name"] != dra.IMEX_CHANNEL_RESOURCE]
        objects.append(o)
    gang = _gang(spec, {**views, name: replace(view, objects=tuple(objects))})
    stop = gang.blocked_at
    assert stop is not None and stop.name == "queueing"
    assert f"resource {dra.IMEX_CHANNEL_RESOURCE} unavailable in ClusterQueue research" in stop.detail


def test_the_tenant_role_may_create_compute_domains_on_a_rack_scale_site(views: dict[str, ClusterView]) -> None:
    _, view = _site(views)
    role = view.get("Role", "tenant-member", "research")
    assert role is not None
    rules = [r for r in role["rules"] if "resource.nvidia.com" in r["apiGroups"]]
    assert rules and "computedomains" in rules[0]["resources"] and "create" in rules[0]["verbs"]


def test_the_gang_is_blocked_when_the_tenant_may_not_create_its_compute_domain(
    spec: EstateSpec, views: dict[str, ClusterView]
) -> None:
    name, view = _site(views)
    objects = []
    for o in view.objects:
        if o.get("kind") == "Role" and o["metadata"]["name"] == "tenant-member":
            o = {**o, "rules": [r for r in o["rules"] if "resource.nvidia.com" not in r["apiGroups"]]}
        objects.append(o)
    gang = _gang(spec, {**views, name: replace(view, objects=tuple(objects))})
    stop = gang.blocked_at
    assert stop is not None and stop.name == "api"
    assert "computedomains" in stop.detail and stop.blocker == "Role/research/tenant-member"
