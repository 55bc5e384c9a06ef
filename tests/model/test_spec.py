"""The estate schema: the examples are valid, and each kind of bad input gets one message naming the field."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from model.load import SpecError, parse_estate
from model.spec import EstateSpec
from tests.conftest import EXAMPLES, example_estate

SRC = "stacks/Pulumi.test.yaml"


def problems(estate: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as err:
        parse_estate(estate, SRC)
    return err.value.problems


@pytest.mark.parametrize("stack", EXAMPLES)
def test_example_stacks_are_valid(stack: str) -> None:
    assert isinstance(parse_estate(example_estate(stack), SRC), EstateSpec)


def aws(e: dict[str, Any]) -> dict[str, Any]:
    return e["sites"][0]


# Each case: how to break the aws-train estate, and the YAML path + words the message must contain.
BAD: dict[str, tuple[Callable[[dict[str, Any]], None], str, str]] = {
    "typo_key": (
        lambda e: aws(e)["node_pools"][0].update(instance_typ="p5.48xlarge"),
        "config.gpufleet:estate.sites[0].node_pools[0].instance_typ",
        "unknown key",
    ),
    "wrong_type": (
        lambda e: aws(e)["node_pools"][0]["scaling"].update(max="four"),
        "sites[0].node_pools[0].scaling.max",
        "integer",
    ),
    "unknown_instance_type": (
        lambda e: aws(e)["node_pools"][0].update(instance_type="p9.96xlarge"),
        "sites[0].node_pools[0].instance_type",
        "p9.96xlarge",
    ),
    "unknown_gpu_model": (
        lambda e: None,  # replaced below: uses the onprem estate
        "",
        "",
    ),
    "duplicate_pool": (
        lambda e: aws(e)["node_pools"].append(dict(aws(e)["node_pools"][1])),
        "config.gpufleet:estate.sites",
        "duplicated: l40s",
    ),
    "dangling_fabric": (
        lambda e: aws(e)["node_pools"][0].update(fabric="nope"),
        "sites[0].node_pools[0].fabric",
        "fabric nope does not exist",
    ),
    "efa_pool_in_other_az": (
        lambda e: aws(e)["node_pools"][0].update(availability_zone="us-east-1b"),
        "sites[0].node_pools[0].availability_zone",
        "EFA",
    ),
    "non_efa_type_on_efa_fabric": (
        # g6e.xlarge has one GPU: 24 nodes keep the l40s quotas (24 GPUs) within the pool
        lambda e: aws(e)["node_pools"][1].update(
            fabric="train-efa", instance_type="g6e.xlarge", scaling={"min": 1, "max": 24}
        ),
        "sites[0].node_pools[1].fabric",
        "does not support EFA",
    ),
    "bad_dns_name": (
        lambda e: aws(e)["node_pools"][0].update(name="H100_Pool"),
        "sites[0].node_pools[0].name",
        "pattern",
    ),
    "quota_above_capacity": (
        lambda e: e["tenants"][0]["gpu_quota"].update(h100=40),
        "sites[0].node_pools[0]",
        "add up to 48, but the pool offers only 32",
    ),
    "quota_on_missing_pool": (
        lambda e: e["tenants"][0]["gpu_quota"].update(a100=8),
        "tenants[0].gpu_quota.a100",
        "pool a100 does not exist",
    ),
    "untrusted_on_shared_pool": (
        # product gives up 2 of its l40s GPUs so that only the untrusted placement is wrong
        lambda e: e["tenants"][2]["gpu_quota"].update(l40s=2) or e["tenants"][1]["gpu_quota"].update(l40s=14),
        "tenants[2].gpu_quota.l40s",
        "untrusted",
    ),
    "time_slicing_without_dedication": (
        lambda e: aws(e)["node_pools"][1].update(sharing={"mode": "time-slicing", "replicas": 4}),
        "sites[0].node_pools[1].sharing.mode",
        "dedicated_to",
    ),
    "invalid_mig_profile": (
        lambda e: aws(e)["node_pools"][0].update(sharing={"mode": "mig", "mig_profile": "3g.71gb"}),
        "sites[0].node_pools[0].sharing.mig_profile",
        "not a MIG profile of H100-80GB",
    ),
    "min_above_max": (
        lambda e: aws(e)["node_pools"][0].update(scaling={"min": 5, "max": 4}),
        "sites[0].node_pools[0].scaling",
        "min (5) must not exceed max (4)",
    ),
    "spot_training_without_checkpointing": (
        lambda e: aws(e)["node_pools"][0].update(capacity={"type": "spot"}),
        "sites[0].node_pools[0].capacity.checkpointing",
        "checkpointing",
    ),
    "public_endpoint_open_to_world": (
        lambda e: aws(e)["cluster"].update(endpoint_public_cidrs=["0.0.0.0/0"]),
        "sites[0].cluster.endpoint_public_cidrs",
        "0.0.0.0/0 is not allowed",
    ),
    "missing_required_key": (
        lambda e: e["metadata"].pop("owner"),
        "config.gpufleet:estate.metadata.owner",
        "required key is missing",
    ),
    "fsx_on_missing_fabric": (
        lambda e: aws(e)["storage"][0].update(fabric="other"),
        "sites[0].storage[0].fabric",
        "not an efa fabric",
    ),
}


@pytest.mark.parametrize("case", sorted(k for k in BAD if k != "unknown_gpu_model"))
def test_bad_input_names_the_field(case: str) -> None:
    breaker, path, words = BAD[case]
    estate = example_estate("aws-train")
    breaker(estate)
    found = problems(estate)
    assert len(found) == 1, found
    assert found[0].startswith(f"{SRC}: config.gpufleet:estate"), found
    assert path in found[0], found
    assert words in found[0], found


def test_unknown_gpu_model_on_a_server_names_the_field_and_lists_known_models() -> None:
    estate = example_estate("onprem")
    estate["sites"][0]["inventory"][3]["gpu_model"] = "H800"
    [msg] = problems(estate)
    assert "sites[0].inventory[3].gpu_model" in msg
    assert "unknown GPU model 'H800'" in msg and "H100-80GB" in msg


def test_pool_selecting_no_server_is_rejected() -> None:
    estate = example_estate("onprem")
    estate["sites"][0]["node_pools"][1]["selector"] = {"pool": "gone"}
    [msg] = problems(estate)
    assert "sites[0].node_pools[1].selector" in msg and "selects no server" in msg


def test_two_problems_give_two_messages() -> None:
    estate = example_estate("aws-train")
    aws(estate)["node_pools"][0]["instance_typ"] = "x"
    estate["metadata"]["owner"] = ""
    found = problems(estate)
    assert len(found) == 2
    assert any("metadata.owner" in p for p in found)
    assert any("instance_typ" in p for p in found)


def test_burst_pool_needs_a_burst_policy() -> None:
    estate = example_estate("hybrid")
    estate.pop("burst")
    [msg] = problems(estate)
    assert "config.gpufleet:estate.burst" in msg and "burst-h100" in msg


@pytest.mark.parametrize("name", ["kubeflow.org/mpijob", "kubeflow.org/pytorchjob", "trainer.kubeflow.org/trainjob"])
def test_job_frameworks_refuses_an_operator_kind_naming_what_is_offered_and_the_jobset_way(name: str) -> None:
    estate = example_estate("aws-train")
    aws(estate).setdefault("kubernetes", {})["job_frameworks"] = ["batch/job", name]
    (problem,) = problems(estate)
    assert "sites[0].kubernetes.job_frameworks[1]:" in problem
    assert "does not install" in problem and "offered: batch/job, pod, deployment, statefulset" in problem
    assert "jobset.x-k8s.io/jobset" in problem and "as a JobSet" in problem


def test_job_frameworks_refuses_an_unknown_name_listing_the_offered_ones() -> None:
    estate = example_estate("aws-train")
    aws(estate).setdefault("kubernetes", {})["job_frameworks"] = ["jobset"]
    (problem,) = problems(estate)
    assert "unknown job framework 'jobset'" in problem and "jobset.x-k8s.io/jobset" in problem
