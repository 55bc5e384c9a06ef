"""components/model/capacity.py: GPUs per node and at max size from the catalog or the inventory, and
schedulable units (MIG slices, time-sliced replicas) counted the one way the schema, Kueue and cost use."""

from __future__ import annotations

from typing import Any

from components.model import catalog
from components.model.capacity import units_per_gpu
from components.model.load import parse_estate
from components.model.spec import Sharing
from tests.conftest import example_estate
from tests.model.helpers import example_spec

SRC = "stacks/Pulumi.test.yaml"


def test_gpu_units_count_mig_slices() -> None:
    spec = parse_estate(example_estate("onprem"), SRC)
    # 2 servers x 8 H100 x 7 slices of 1g.10gb
    assert spec.pool_gpu_units("dev") == 112
    assert spec.pool_gpu_capacity("train") == 48


def test_gpu_counts_come_from_the_catalog() -> None:
    spec = parse_estate(example_estate("aws-train"), SRC)
    assert spec.pool_gpus_per_node("h100") == 8
    assert spec.pool_gpu_capacity("h100") == 32  # max 4 nodes
    assert spec.pool_gpu_model("l40s").id == "L40S-48GB"


def test_units_per_gpu_by_sharing_mode() -> None:
    h100 = catalog.gpu_model("H100-80GB")
    assert units_per_gpu(Sharing(), h100) == 1
    assert units_per_gpu(Sharing(mode="time-slicing", replicas=4), h100) == 4
    assert units_per_gpu(Sharing(mode="mig", mig_profile="1g.10gb"), h100) == 7  # components/model/catalog/gpus.yaml
    assert units_per_gpu(Sharing(mode="mig", mig_profile="3g.40gb"), h100) == 2


def test_uneven_servers_count_each_servers_gpus_and_the_largest_per_node() -> None:
    def four_gpu_server(raw: dict[str, Any]) -> None:
        raw["sites"][0]["inventory"][0]["gpu_count"] = 4  # one of train's six servers
        raw["tenants"][0]["gpu_quota"]["train"] = 28

    spec = example_spec("onprem", four_gpu_server)
    assert spec.pool_gpu_capacity("train") == 44
    assert spec.pool_gpus_per_node("train") == 8
