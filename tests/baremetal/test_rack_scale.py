"""Owned GB200 NVL72 racks take the same ComputeDomain path as EKS UltraServers.

NVIDIA's DRA driver runs IMEX per ComputeDomain (its README at versions.NVIDIA_DRA_DRIVER), and the preflight
refuses a host IMEX service for that reason; so a bare-metal pool whose NVLink domains span servers must get the
driver, the Kueue device-class mappings and the IMEX channel quota, and a gang must claim a channel.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from components.kubernetes.dra_driver import OPERATOR_DRIVER_ROOT, dra_driver_values
from gpufleet.engine.plan import Plan
from gpufleet.engine.synth import synth
from gpufleet.review import review
from gpufleet.review.review import Review
from model import dra, queues, versions
from model.conventions import HELM_RELEASE
from model.load import SpecError
from tests.baremetal.helpers import nvl72, onprem_spec
from tests.conftest import example_config, write_project

NOW = dt.datetime(2026, 12, 3, 12, 0, tzinfo=dt.UTC)


def _config() -> dict[str, Any]:
    config = example_config("onprem")
    nvl72(config["gpufleet:estate"])
    return config


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_project(tmp_path_factory.mktemp("nvl72"), _config())


@pytest.fixture(scope="module")
def plan(project: Path) -> Plan:
    return synth(project, "test")


@pytest.fixture(scope="module")
def reviewed(project: Path) -> Review:
    return review.build(project, "test", NOW)


def test_an_owned_nvl72_pool_is_rack_scale_and_an_hgx_pool_is_not() -> None:
    site = onprem_spec(nvl72).sites[0]
    assert [p.name for p in dra.rack_scale_pools(site)] == ["train"]
    assert dra.rack_scale_pools(onprem_spec().sites[0]) == []  # HGX H100: each server is its own NVLink domain


def test_the_dra_driver_runs_on_the_nvl72_pool_with_the_driver_root_of_who_installs_the_driver(plan: Plan) -> None:
    (release,) = [r for r in plan.find(HELM_RELEASE) if r.inputs.get("chart") == versions.NVIDIA_DRA_DRIVER.name]
    values = release.inputs["values"]
    assert values["resources"] == {"gpus": {"enabled": False}, "computeDomains": {"enabled": True}}
    assert values["kubeletPlugin"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "gpufleet.io/pool", "operator": "In", "values": ["train"]}]}
        ]
    }
    assert values["nvidiaDriverRoot"] == "/"  # the host image's driver

    def operator_driver(estate: dict[str, Any]) -> None:
        nvl72(estate)
        estate["sites"][0]["kubernetes"]["driver_managed_by"] = "operator"
        del estate["sites"][0]["kubernetes"]["gpudirect_rdma"]
        for server in estate["sites"][0]["inventory"]:
            server.pop("driver_version", None)

    # nvidia-dra-driver-gpu values.yaml: the GPU Operator's driver container puts the driver at /run/nvidia/driver.
    assert dra_driver_values(onprem_spec(operator_driver).sites[0])["nvidiaDriverRoot"] == OPERATOR_DRIVER_ROOT


def test_tenants_queue_imex_channels_on_the_nvl72_flavor_only() -> None:
    spec = onprem_spec(nvl72)
    site = spec.sites[0]
    cq = queues.tenant_cluster_queue_spec(spec, site, spec.tenant("research"))
    group = cq["resourceGroups"][0]
    assert dra.IMEX_CHANNEL_RESOURCE in group["coveredResources"]
    quota = {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in group["flavors"]}
    assert quota["train"][dra.IMEX_CHANNEL_RESOURCE] == quota["train"]["nvidia.com/gpu"] > 0
    assert all(q[dra.IMEX_CHANNEL_RESOURCE] == 0 for name, q in quota.items() if name != "train")


def test_the_nvl72_gang_runs_in_one_compute_domain_with_no_finding_or_first_up_problem(reviewed: Review) -> None:
    assert reviewed.findings is not None and list(reviewed.findings) == []
    assert reviewed.first_up is not None and reviewed.first_up.problems == []
    assert reviewed.journeys is not None
    assert [j.title for j in reviewed.journeys if j.verdict != j.expected] == []
    gangs = [j for j in reviewed.journeys if "gang on train" in j.title]
    assert gangs and all(j.title.endswith("in one ComputeDomain") and j.verdict == "runs" for j in gangs)


def test_nvlink_domains_over_servers_are_refused_where_the_gpu_cannot_join_them() -> None:
    def hgx(estate: dict[str, Any]) -> None:
        estate["sites"][0]["node_pools"][0]["nvlink_domain_nodes"] = 2
        for server in estate["sites"][0]["inventory"]:
            server["nvlink_domain"] = server["rack"]

    with pytest.raises(SpecError, match=r"node_pools\[0\]\.nvlink_domain_nodes: pool train: H100-80GB's NVLink domain"):
        onprem_spec(hgx)

    def nvl76(estate: dict[str, Any]) -> None:
        nvl72(estate)
        estate["sites"][0]["node_pools"][0]["nvlink_domain_nodes"] = 19  # 76 GPUs: more than an NVL72 joins

    with pytest.raises(SpecError, match=r"19 servers of 4 GB200-185GB GPUs are 76 GPUs, more than one NVLink domain"):
        onprem_spec(nvl76)
