"""What a stack must change besides its pools for `size -s`'s recommendation to run (gpufleet/sizing/followups.py,
found by review): tenants' GPU quotas on raised and new pools, and the hourly budget at max size.

aws-train: policies.budget_usd_per_hour 400; tenants research and product hold gpu_quota on h100 (p5.48xlarge,
max 4 nodes) and l40s. The example workload file recommends three new pools there (inference on p5.48xlarge, the
batch on g6.xlarge spot, notebooks on g6.xlarge).
"""

from __future__ import annotations

import yaml

from gpufleet.render.sizing import node_pool_snippet
from gpufleet.review.cost.envelope import estate_cost
from gpufleet.sizing.report import size
from gpufleet.sizing.workloads import load_workloads
from model.load import parse_estate
from tests.conftest import ROOT, example_estate
from tests.sizing.test_cases import TODAY, on


def test_the_budget_note_prices_the_stack_as_the_snippet_would_leave_it() -> None:
    spec = parse_estate(example_estate("aws-train"), "aws-train")
    r = size(load_workloads(ROOT / "examples/workloads.yaml"), "w.yaml", spec, "aws-train", today=TODAY)
    # The same stack with the snippet's pools added by hand, through the loader and its rules, and priced as
    # `gpufleet cost` and the budget rule price it.
    raw = example_estate("aws-train")
    raw["sites"][0]["node_pools"] += yaml.safe_load(node_pool_snippet(r.pools))["node_pools"]
    before = estate_cost(spec).budget_hour()
    after = estate_cost(parse_estate(raw, "aws-train")).budget_hour()
    assert before is not None and after is not None and after > 400 > before
    note = next(n for n in r.notes if "budget_usd_per_hour" in n)
    assert note.startswith(f"At max size the stack costs ${before:,.2f}/h, ${after:,.2f}/h with the pools recommended")
    assert "over policies.budget_usd_per_hour ($400.00)" in note


def test_new_pools_and_a_raised_max_say_which_tenant_quotas_to_add() -> None:
    spec = parse_estate(example_estate("aws-train"), "aws-train")
    r = size(load_workloads(ROOT / "examples/workloads.yaml"), "w.yaml", spec, "aws-train", today=TODAY)
    assert any(n.startswith("No tenant has gpu_quota on the new pool interactive-g6-xlarge") for n in r.notes)
    # 40 runs a week of 8 GPUs × 40 h on H100 raise h100's max above its 4 nodes, past the tenants' quota there.
    big = {"name": "big", "kind": "training", "parameters_billion": 7, "runs_per_period": 40, "gpus_per_run": 8,
           "hours_per_run": 40, "measured_on": "H100-80GB", "deadline_hours": 48}  # fmt: skip
    r2 = on("aws-train", big, hours_per_device=168)
    (rec,) = [x for x in r2.pools if x.name == "h100"]
    to = rec.demand.raised
    assert to is not None and to.max > 4
    quota = sum(t.gpu_quota.get("h100", 0) for t in spec.tenants)
    assert quota < to.max * 8
    assert f"Tenants' gpu_quota on h100 adds up to {quota} GPUs, of the {to.max * 8} at its raised max" in " ".join(
        r2.notes
    )
