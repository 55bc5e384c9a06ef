"""model/capacity.py: GPUs per node and at max size from the catalog or the inventory, and
schedulable units (MIG slices, time-sliced replicas) counted the one way the schema, Kueue and cost use."""

from __future__ import annotations

from typing import Any

from model import catalog
from model.capacity import units_per_gpu
from model.load import parse_estate
from model.spec import Sharing
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
    assert units_per_gpu(Sharing(mode="mig", mig_profile="1g.10gb"), h100) == 7  # model/catalog/gpus.yaml
    assert units_per_gpu(Sharing(mode="mig", mig_profile="3g.40gb"), h100) == 2


def test_uneven_servers_count_each_servers_gpus_and_the_largest_per_node() -> None:
    def four_gpu_server(raw: dict[str, Any]) -> None:
        raw["sites"][0]["inventory"][0]["gpu_count"] = 4  # one of train's six servers
        raw["tenants"][0]["gpu_quota"]["train"] = 28

    spec = example_spec("onprem", four_gpu_server)
    assert spec.pool_gpu_capacity("train") == 44
    assert spec.pool_gpus_per_node("train") == 8


def test_b300_has_the_six_mig_profiles_aws_configures_for_p6_b300() -> None:
    # github.com/aws/sagemaker-hyperpod-cli at 011ca927 (2026-06-22):
    # helm_chart/HyperPodHelmChart/charts/gpu-operator/config/default-mig-config.yaml, "P6-B300 ... Profiles:
    # 1g.34gb (x7), 1g.67gb (x4), 2g.67gb (x3), 3g.135gb (x2), 4g.135gb (x1), 7g.269gb (x1)"; and
    # src/sagemaker/hyperpod/training/constants.py lists the same six names for ml.p6-b300.48xlarge.
    # NVIDIA MIG User Guide, Supported MIG Profiles (https://docs.nvidia.com/datacenter/tesla/mig-user-guide/) is the
    # primary reference; gpus.yaml says why the counts are AWS's.
    b300 = catalog.instance_type("p6-b300.48xlarge").gpu
    assert {p.name: p.per_gpu for p in b300.mig_profiles} == {
        "1g.34gb": 7, "1g.67gb": 4, "2g.67gb": 3, "3g.135gb": 2, "4g.135gb": 1, "7g.269gb": 1,
    }  # fmt: skip
    # The whole-GPU profile is the memory EC2 reports: 275,040 MiB ÷ 1,024 = 268.6 GiB -> "269gb".
    assert round(b300.memory_mib / 1024) == 269
    # 8 B300 per node × 7 slices of 1g.34gb = 56 schedulable units per node.
    assert 8 * units_per_gpu(Sharing(mode="mig", mig_profile="1g.34gb"), b300) == 56


def test_a_p6_b300_pool_may_be_shared_by_mig() -> None:
    def b300_mig(raw: dict[str, Any]) -> None:
        pool = raw["sites"][0]["node_pools"][1]
        pool.update(instance_type="p6-b300.48xlarge", sharing={"mode": "mig", "mig_profile": "2g.67gb"})
        pool.pop("fabric", None)

    spec = example_spec("aws-train", b300_mig)
    name = example_estate("aws-train")["sites"][0]["node_pools"][1]["name"]
    # max nodes × 8 B300 × 3 slices of 2g.67gb
    assert spec.pool_gpu_units(name) == spec.pool_gpu_capacity(name) * 3
