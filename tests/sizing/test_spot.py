"""Spot in `gpufleet size` (#32, purchase options): offered to interruptible classes whose runs fit one node.

Prices: model/catalog/aws_prices.json, us-east-1. p5.48xlarge on demand $55.04/h; on spot the mean of the six AZ
IDs the catalog's dated snapshot records (model.catalog.spot_price), the figure `gpufleet cost` prices a spot pool
at (model.pricing.pool_rate). EC2 reclaims a spot node with a two-minute warning (EC2 User Guide, "Spot Instance
interruption notices", https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html).
"""

from __future__ import annotations

from fractions import Fraction

import yaml

from gpufleet.render.sizing import node_pool_snippet, sizing_text
from gpufleet.sizing.report import size
from model import catalog
from model.load import parse_estate
from model.pricing import pool_rate
from model.spec import AwsNodePool, AwsSite
from tests.conftest import example_estate
from tests.sizing.helpers import wfile
from tests.sizing.test_cases import TODAY, on

# 70B in bf16: 140 GB + 20 % = 168 GB, three H100s at least; eight GPUs a run, on one p5.48xlarge.
BATCH = {"name": "nightly-eval", "kind": "batch-inference", "parameters_billion": 70, "precision": "bf16",
         "runs_per_period": 10, "gpus_per_run": 8, "hours_per_run": 4, "measured_on": "H100-80GB",
         "deadline_hours": 24, "interruptible": True}  # fmt: skip


def test_an_interruptible_batch_class_is_placed_on_spot_at_the_catalogs_dated_figure() -> None:
    r = on(None, BATCH)
    (cs,) = r.classes
    ch = cs.chosen
    assert ch is not None and ch.placement.name == "p5.48xlarge spot" and ch.placement.spot
    spot = catalog.spot_price("p5.48xlarge", "us-east-1")
    assert spot is not None and spot.zones == 6
    # 4 h × the node's spot hour (8 GPUs, the whole node): (55.04 + 19.2531 + 21.1543 + 55.04 + 25.7522 + 17.6289)
    # ÷ 6 = $32.3114 an hour, $129.25 a run; on demand 4 × $55.04 = $220.16.
    assert f"{float(ch.cost_per_run or 0):,.2f}" == f"{spot.usd_per_hour * 4:,.2f}" == "129.25"
    od = next(x for x in cs.choices if x.placement.name == "p5.48xlarge")
    assert f"{float(od.cost_per_run or 0):,.2f}" == "220.16"
    (rec,) = r.pools
    assert rec.name == "batch-p5-48xlarge-spot"
    (entry,) = yaml.safe_load(node_pool_snippet(r.pools))["node_pools"]
    assert entry["capacity"] == {"type": "spot"}  # the catalog prices it: no discount to declare
    assert "spot: a node can be reclaimed at two minutes' notice" in sizing_text(r)


def test_a_class_not_interruptible_is_never_placed_on_spot() -> None:
    r = on(None, {**BATCH, "interruptible": False})
    (cs,) = r.classes
    assert cs.chosen is not None and cs.chosen.placement.name == "p5.48xlarge"
    assert not any(ch.placement.spot for ch in cs.choices)


def test_a_run_over_two_nodes_stays_on_demand_even_when_interruptible() -> None:
    # One reclaimed node stops the whole 16-GPU gang; spot is offered for runs within one node.
    gang = {"name": "ft", "kind": "fine-tuning", "parameters_billion": 8, "runs_per_period": 2, "gpus_per_run": 16,
            "hours_per_run": 10, "measured_on": "H100-80GB", "gang": True, "deadline_hours": 24, "interruptible": True}  # fmt: skip
    r = on(None, gang)
    (cs,) = r.classes
    assert cs.chosen is not None and cs.chosen.placement.name == "p5.48xlarge" and not cs.chosen.placement.spot
    assert not any(ch.placement.spot for ch in cs.choices)


def test_a_declared_discount_prices_spot_where_the_catalog_has_no_figure_and_the_snippet_carries_it() -> None:
    # An 8B model in bf16 on one L40S (g6e.xlarge, $1.861/h on demand, no spot figure in the catalog): at 60 % off,
    # $0.7444/h; 3 h a run, $2.23. The stack-file snippet carries spot_discount, so `gpufleet cost` prices the
    # pool it creates as `size` did (pool_rate on aws-train's site).
    small = {"name": "evals", "kind": "batch-inference", "parameters_billion": 8, "precision": "bf16",
             "runs_per_period": 20, "gpus_per_run": 1, "hours_per_run": 3, "measured_on": "L40S-48GB",
             "deadline_hours": 24, "interruptible": True}  # fmt: skip
    assert catalog.spot_price("g6e.xlarge", "us-east-1") is None
    r = on(None, small, spot_discount=0.6)
    ch = r.classes[0].chosen
    assert ch is not None and ch.placement.name == "g6e.xlarge spot"
    assert f"{float(ch.cost_per_run or 0):,.2f}" == f"{1.861 * 0.4 * 3:,.2f}" == "2.23"
    (entry,) = yaml.safe_load(node_pool_snippet(r.pools))["node_pools"]
    assert entry["capacity"] == {"type": "spot", "spot_discount": 0.6}
    site = parse_estate(example_estate("aws-train"), "aws-train").sites[0]
    assert isinstance(site, AwsSite) and site.region == r.region == "us-east-1"
    rate = pool_rate(site, AwsNodePool.model_validate(entry), "g6e.xlarge")
    assert rate is not None and Fraction(str(rate.usd)) == ch.placement.usd_per_gpu_hour
    # Without a declared discount there is no spot candidate for the type, never spot at the on-demand rate.
    names = {x.placement.name for x in on(None, small).classes[0].choices}
    assert "g6e.xlarge" in names and "g6e.xlarge spot" not in names and "p5.48xlarge spot" in names


def test_a_spot_training_pool_from_the_snippet_is_accepted_by_the_stack_file_rules() -> None:
    # An interruptible 8-GPU fine-tune on one p5.48xlarge: the snippet's pool says checkpointing (the stack's rule
    # for spot training pools, model/rules/aws.py) and parses into aws-train with no problem.
    ft = {"name": "ft8b", "kind": "fine-tuning", "parameters_billion": 8, "runs_per_period": 4, "gpus_per_run": 8,
          "hours_per_run": 6, "measured_on": "H100-80GB", "deadline_hours": 12, "interruptible": True}  # fmt: skip
    r = on(None, ft)
    (rec,) = r.pools
    assert rec.demand.placement.name == "p5.48xlarge spot" and rec.role == "training"
    (entry,) = yaml.safe_load(node_pool_snippet(r.pools))["node_pools"]
    assert entry["capacity"] == {"type": "spot", "checkpointing": True}
    raw = example_estate("aws-train")
    raw["sites"][0]["node_pools"].append(entry)
    spec = parse_estate(raw, "aws-train")  # raises SpecError on any problem
    assert any(p.name == rec.name for p in spec.sites[0].node_pools)


FT8B = {"name": "ft8b", "kind": "fine-tuning", "parameters_billion": 8, "runs_per_period": 4, "gpus_per_run": 8,
        "hours_per_run": 6, "measured_on": "H100-80GB", "deadline_hours": 12}  # fmt: skip


def test_an_interruptible_class_takes_a_new_spot_pool_over_the_stacks_on_demand_pool_of_its_type() -> None:
    # aws-train's h100 (p5.48xlarge, on demand) ranks before a new on-demand p5 pool, but a spot pool is bought
    # another way: 6 h × $32.3114 = $193.87 a run against h100's 6 h × $55.04 = $330.24.
    r = on("aws-train", {**FT8B, "interruptible": True})
    ch = r.classes[0].chosen
    assert ch is not None and ch.placement.name == "p5.48xlarge spot"
    assert f"{float(ch.cost_per_run or 0):,.2f}" == "193.87"
    ranked = [x.placement.name for x in r.classes[0].choices if x.status == "ok"]
    assert ranked.index("p5.48xlarge spot") < ranked.index("h100") < ranked.index("p5.48xlarge")
    # not interruptible: the stack's own pool
    plain = on("aws-train", FT8B).classes[0].chosen
    assert plain is not None and plain.placement.name == "h100"


def test_a_stack_pool_on_spot_takes_only_interruptible_work() -> None:
    raw = example_estate("aws-train")
    h100 = next(p for p in raw["sites"][0]["node_pools"] if p["name"] == "h100")
    h100["capacity"] = {"type": "spot", "checkpointing": True}
    spec = parse_estate(raw, "spotpool")
    plain = size(wfile(FT8B), "w.yaml", spec, "spotpool", today=TODAY).classes[0]
    assert not any(x.placement.name == "h100" for x in plain.choices)
    spot = size(wfile({**FT8B, "interruptible": True}), "w.yaml", spec, "spotpool", today=TODAY).classes[0]
    assert spot.chosen is not None and spot.chosen.placement.name in ("h100", "p5.48xlarge spot")
    assert any(x.placement.name == "h100" and x.placement.spot for x in spot.choices)


def test_gangs_across_nodes_and_online_serving_are_not_offered_spot() -> None:
    gang = {**FT8B, "name": "ft3", "gang": True, "runs_started_together": 3, "interruptible": True}
    serve = {"name": "chat", "kind": "online-inference", "parameters_billion": 8, "kv_cache_gb": 2,
             "runs_per_period": 2, "gpus_per_run": 1, "hours_per_run": 168, "latency_p95_ms": 500,
             "measured_on": "H100-80GB", "interruptible": True}  # fmt: skip
    for cls in (gang, serve):
        r = on(None, cls, hours_per_device=168)
        assert not any(ch.placement.spot for ch in r.classes[0].choices), cls["name"]
