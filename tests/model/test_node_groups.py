"""A change that replaces a burst pool's node group is refused while its window is open or draining: the group's
fixed name means delete before create, so every node of the window would stop at once."""

from __future__ import annotations

import copy
import datetime as dt
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app
from model import clock
from model.load import SpecError, check_window, parse_window
from model.spec import EstateSpec
from tests.burst.helpers import NOW, hybrid_config, window
from tests.conftest import example_estate, write_project

CLOUD = 1  # the hybrid example's aws site, its burst pool burst-h100 first, on EFA fabric burst-efa (us-east-1a)


def estate(**pool: object) -> EstateSpec:
    raw = copy.deepcopy(example_estate("hybrid"))
    raw["sites"][CLOUD]["node_pools"][0].update(pool)
    return EstateSpec.model_validate(raw)


def problems(spec: EstateSpec, at: dt.datetime, **over: object) -> list[str]:
    w = parse_window(window(NOW, 8, capacity_type="on-demand", **over), "f")
    with clock.frozen(at):
        try:
            check_window(spec, w, "f")
        except SpecError as err:
            return err.problems
    return []


@pytest.mark.parametrize(
    ("at", "phase"), [(NOW + dt.timedelta(hours=1), "open"), (NOW + dt.timedelta(hours=8, minutes=10), "draining")]
)
def test_moving_the_burst_pools_zone_under_a_live_window_is_refused_naming_pool_and_field(
    at: dt.datetime, phase: str
) -> None:
    spec = estate(fabric=None, availability_zone="us-east-1b")
    (line,) = problems(spec, at)
    assert line.startswith(
        f"f: config.gpufleet:estate.sites[{CLOUD}].node_pools[0].availability_zone: pool burst-h100 "
    )
    assert f"burst window {phase} until 2026-11-20 20:30 UTC" in line
    assert "(us-east-1a to us-east-1b) replaces its node group (input subnetIds" in line
    assert "Keep the old value until the window is over: close it (`gpufleet burst close`), wait until its drain" in (
        line
    )


def test_an_efa_pools_zone_is_named_where_the_stack_file_sets_it_its_fabric() -> None:
    raw = copy.deepcopy(example_estate("hybrid"))
    raw["sites"][CLOUD]["fabrics"][0]["availability_zone"] = "us-east-1b"
    (line,) = problems(EstateSpec.model_validate(raw), NOW + dt.timedelta(hours=1))
    assert line.startswith(f"f: config.gpufleet:estate.sites[{CLOUD}].fabrics[0].availability_zone: pool burst-h100 ")


def test_a_capacity_type_the_node_group_sends_differently_is_refused_one_it_sends_alike_is_not() -> None:
    at = NOW + dt.timedelta(hours=1)
    (line,) = problems(estate(capacity={"type": "spot"}), at)
    assert f"sites[{CLOUD}].node_pools[0].capacity.type: pool burst-h100" in line
    assert "(on-demand to spot) replaces its node group (input capacityType" in line
    # an ODCR is on-demand capacity to EKS (capacityType ON_DEMAND): the launch template changes, in place
    odcr = estate(capacity={"type": "capacity-reservation", "reservation_id": "cr-0123456789abcdef0"})
    assert problems(odcr, at) == []


def test_the_same_change_is_allowed_once_the_window_has_drained_or_before_it_starts() -> None:
    spec = estate(fabric=None, availability_zone="us-east-1b", capacity={"type": "spot"})
    assert problems(spec, NOW + dt.timedelta(hours=9)) == []
    assert problems(spec, NOW - dt.timedelta(hours=1)) == []


def test_validate_exits_2_on_a_replacing_change_under_a_live_window(tmp_path: Path) -> None:
    config = hybrid_config(window(NOW, 8, capacity_type="on-demand"))
    config["gpufleet:estate"]["sites"][CLOUD]["node_pools"][0]["capacity"] = {"type": "spot", "checkpointing": True}
    proj = write_project(tmp_path, config)
    with clock.frozen(NOW + dt.timedelta(hours=1)):
        result = CliRunner().invoke(app, ["validate", "--stack", "test", "--project", str(proj)])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "node_pools[0].capacity.type: pool burst-h100" in text and "gpufleet burst close" in text
    assert "Traceback" not in result.output


def test_preview_exits_2_on_a_replacing_change_under_a_live_window(tmp_path: Path) -> None:
    config = hybrid_config(window(NOW, 8, capacity_type="on-demand"))
    config["gpufleet:estate"]["sites"][CLOUD]["node_pools"][0]["capacity"] = {"type": "spot", "checkpointing": True}
    proj = write_project(tmp_path, config)
    with clock.frozen(NOW + dt.timedelta(hours=1)):
        result = CliRunner().invoke(app, ["preview", "--stack", "test", "--project", str(proj)])
    assert result.exit_code == 2, result.output
    assert "node_pools[0].capacity.type: pool burst-h100" in " ".join(result.output.split())


def test_diff_exits_2_on_a_replacing_change_under_a_live_window(tmp_path: Path) -> None:
    """Each side of a diff may run in a process of its own, so the window is live by the machine's clock."""
    from tests.review import repos

    start = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(hours=1)
    config = hybrid_config(window(start, 8, capacity_type="on-demand"))
    repo = repos.init_repo(tmp_path, repos.PROGRAM)
    repos.write_stack(repo, "review", config)
    repos.commit(repo, "base: on-demand")
    config["gpufleet:estate"]["sites"][CLOUD]["node_pools"][0]["capacity"] = {"type": "spot", "checkpointing": True}
    repos.write_stack(repo, "review", config)
    result = CliRunner().invoke(app, ["diff", "-s", "review", "--base", "main", "-C", str(repo)])
    assert result.exit_code == 2, result.output
    assert "node_pools[0].capacity.type: pool burst-h100" in " ".join(result.output.split())
