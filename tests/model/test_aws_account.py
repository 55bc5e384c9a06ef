"""The EC2 vCPU quota each GPU pool launches under, named offline with the vCPUs its desired and largest sizes
need (issue 31: a fresh account has 0 vCPUs for P instances and the node group fails late with
VcpuLimitExceeded; https://docs.aws.amazon.com/ec2/latest/instancetypes/ec2-instance-quotas.html)."""

from __future__ import annotations

import copy

from model.aws_account import pool_quotas, quota_family, quota_notes, quota_totals
from model.spec import EstateSpec
from tests.conftest import example_estate


def _spec(stack: str) -> EstateSpec:
    return EstateSpec.model_validate(example_estate(stack))


def test_each_pool_names_its_on_demand_quota_and_the_vcpus_of_its_desired_and_max_sizes() -> None:
    needs = {n.pool: n for n in pool_quotas(_spec("aws-train"))}
    h100 = needs["h100"]  # p5.48xlarge: 192 vCPUs (catalog), desired 2, max 4
    assert (h100.code, h100.title) == ("L-417A185B", "Running On-Demand P instances")
    assert (h100.vcpus_per_node, h100.desired_vcpus, h100.max_vcpus) == (192, 384, 768)
    l40s = needs["l40s"]
    assert (l40s.code, l40s.title) == ("L-DB2E81BA", "Running On-Demand G and VT instances")
    assert (l40s.desired_vcpus, l40s.max_vcpus) == (96, 288)


def test_pools_of_one_region_add_up_on_the_quota_they_share() -> None:
    # Quotas are per account and region: the two L40S pools draw on the one G quota. While an update rolls, EKS adds
    # the larger of 2 x the group's AZs and maxUnavailable (managed-node-update-behavior, "Scale up phase"):
    # h100 (one AZ, its EFA fabric's) (4 + 2) x 192 = 1152; l40s (3 AZs) (6 + 6) x 48 = 576, agents (4 + 6) x 4 = 40.
    totals = quota_totals(pool_quotas(_spec("aws-train")))
    assert totals[("us-east-1", "L-417A185B")] == ("Running On-Demand P instances", 384, 768, 1152)
    assert totals[("us-east-1", "L-DB2E81BA")] == ("Running On-Demand G and VT instances", 100, 304, 616)


def test_spot_and_reserved_pools_name_their_own_quota_or_none() -> None:
    raw = copy.deepcopy(example_estate("hybrid"))
    cloud = next(s for s in raw["sites"] if s["kind"] == "aws")
    burst = cloud["node_pools"][0]
    burst["capacity"] = {"type": "spot"}
    cloud["node_pools"].append(
        {"name": "block-h200", "role": "training", "instance_type": "p5en.48xlarge", "fabric": burst["fabric"],
         "capacity": {"type": "capacity-block", "reservation_id": "cr-0123456789abcdef0"}, "scaling": {"max": 2}}
    )  # fmt: skip
    needs = {n.pool: n for n in pool_quotas(EstateSpec.model_validate(raw))}
    spot = needs[burst["name"]]
    assert (spot.code, spot.title) == ("L-7212CCBC", "All P Spot Instance Requests")
    assert spot.desired_vcpus == 0  # a burst pool idles at zero; its max is what a window can reach
    block = needs["block-h200"]
    assert block.code is None and "draws no vCPU quota" in block.sentence()


def test_quota_family_is_p_or_g_and_nothing_else() -> None:
    assert [quota_family(t) for t in ("p6-b200.48xlarge", "g6e.xlarge", "vt1.3xlarge", "m7i.large")] == [
        "P", "G", "G", None
    ]  # fmt: skip


def test_the_notes_say_what_to_request_per_quota() -> None:
    notes = quota_notes(_spec("aws-train"))
    assert (
        "quota: pool h100 of site use1 (4 x p5.48xlarge at most) needs EC2 quota L-417A185B (Running On-Demand P "
        "instances) in us-east-1: 384 vCPUs at desired size (2 nodes), 768 at most (4 x 192), 1152 while an update "
        "rolls its nodes (+2 nodes)"
    ) in notes
    assert any(n.startswith("quota: L-417A185B (Running On-Demand P instances) in us-east-1: the estate needs 384")
               and "gpufleet check --aws" in n for n in notes)  # fmt: skip
    assert quota_notes(_spec("onprem")) == []
