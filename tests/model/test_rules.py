"""Cross-field rules (model/rules/estate.py) report every problem at once, one line each, and a rule
whose precondition is broken elsewhere neither crashes nor reports the same mistake twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app
from model.load import SpecError, parse_estate
from tests.conftest import example_config, example_estate, write_project

SRC = "stacks/Pulumi.test.yaml"
BASE = "config.gpufleet:estate"


def problems(estate: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as err:
        parse_estate(estate, SRC)
    return err.value.problems


def test_three_independent_cross_field_mistakes_give_three_messages_and_exit_2(tmp_path: Path) -> None:
    config = example_config("aws-train")
    estate = config["gpufleet:estate"]
    site = estate["sites"][0]
    site["node_pools"][0]["capacity"] = {"type": "spot"}  # spot training pool without checkpointing
    site["storage"][0]["fabric"] = "other"  # FSx for Lustre on a fabric that does not exist
    estate["tenants"][0]["gpu_quota"]["a100"] = 8  # quota on a pool that does not exist
    write_project(tmp_path, config)

    result = CliRunner().invoke(app, ["preview", "-s", "test", "-C", str(tmp_path)])

    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    stack = tmp_path / "stacks" / "Pulumi.test.yaml"
    lines = [line for line in result.stderr.splitlines() if line.startswith(f"error: {stack}: ")]
    assert len(lines) == 3, result.stderr
    assert any(f"{BASE}.sites[0].node_pools[0].capacity.checkpointing: " in x for x in lines), lines
    assert any(f"{BASE}.sites[0].storage[0].fabric: other is not an efa fabric" in x for x in lines), lines
    assert any(f"{BASE}.tenants[0].gpu_quota.a100: pool a100 does not exist" in x for x in lines), lines


def test_a_pool_on_a_missing_fabric_is_not_also_judged_by_that_fabrics_zone() -> None:
    estate = example_estate("aws-train")
    pool = estate["sites"][0]["node_pools"][0]
    pool.update(fabric="nope", capacity={"type": "capacity-reservation", "reservation_id": "cr-0123456789abcdef0"})
    assert problems(estate) == [
        f"{SRC}: {BASE}.sites[0].node_pools[0].fabric: fabric nope does not exist on site use1 (fabrics: train-efa)"
    ]


def test_a_baremetal_pool_selecting_no_server_is_reported_once_without_crashing_mig_and_quota_rules() -> None:
    estate = example_estate("onprem")
    dev = next(i for i, p in enumerate(estate["sites"][0]["node_pools"]) if p["name"] == "dev")
    estate["sites"][0]["node_pools"][dev]["selector"] = {"pool": "gone"}  # a MIG pool tenants have quota on
    found = problems(estate)
    assert found == [
        f"{SRC}: {BASE}.sites[0].node_pools[{dev}].selector: selects no server of site dc1 ({{'pool': 'gone'}})"
    ]


def test_duplicate_names_are_reported_alone_since_every_other_rule_looks_things_up_by_name() -> None:
    estate = example_estate("aws-train")
    site = estate["sites"][0]
    site["node_pools"].append(dict(site["node_pools"][0]))  # duplicate pool h100
    estate["tenants"][0]["gpu_quota"]["a100"] = 8  # would be reported if the other rules ran
    assert problems(estate) == [f"{SRC}: {BASE}.sites: node pool names must be unique; duplicated: h100"]


def test_an_efa_fabric_outside_the_sites_zones_is_reported_where_it_is_set_not_again_on_its_pools() -> None:
    estate = example_estate("aws-train")
    estate["sites"][0]["fabrics"][0]["availability_zone"] = "us-east-1f"
    [msg] = problems(estate)
    assert f"{BASE}.sites[0].fabrics[0].availability_zone: us-east-1f is not one of the site's" in msg


def test_a_multikueue_worker_pool_with_an_nvlink_clique_is_accepted_and_the_managers_topology_has_the_level() -> None:
    # The manager's dispatch Topology holds every level a worker can have (model.dispatch.manager_topology_levels),
    # so a gang asking for the clique passes there (Kueue refuses a level the flavor's Topology lacks: "does not contain
    # the requested level").
    from model import conventions, dispatch
    from model.spec import EstateSpec

    estate = example_estate("hybrid")
    pool = next(p for s in estate["sites"] for p in s["node_pools"] if "selector" in p)
    pool["nvlink_domain_nodes"] = 2
    assert not [p for p in problems(estate) if "MultiKueue worker" in p]
    levels = dispatch.manager_topology_levels(EstateSpec.model_validate(estate))  # the other rules' problems aside
    assert levels is not None and conventions.GPU_CLIQUE_LABEL in levels
