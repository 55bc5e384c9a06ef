"""The whole bill of an AWS site: EKS control plane, NAT gateways, the system pool, EBS root volumes, and the
usage-billed items a usage profile (usage.<stack>.yaml next to the stack file) prices. Figures worked by hand from
the catalog's `services` / `cpu_instances` (us-east-1): EKS $0.10/cluster-hour, NAT $0.045/gateway-hour and
$0.045/GB, public IPv4 $0.005/address-hour, m7i.xlarge $0.2016/h, gp3 $0.08/GB-month, data out $0.09/GB."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.review.cost.envelope import estate_cost
from gpufleet.review.cost.usage import UsageProfile
from model import clock
from model.load import parse_estate
from tests.conftest import ROOT, example_estate, write_project
from tests.review.estates import NOW, small
from tests.review.repos import stack_config


def _lines(usage: UsageProfile | None = None) -> dict[str, object]:
    cost = estate_cost(parse_estate(small(), "test"), None, NOW, usage)
    return {ln.item: ln for ln in cost.bill}


def test_aws_train_json_prices_control_plane_nat_system_pool_and_root_volumes_with_date_and_source() -> None:
    result = CliRunner().invoke(app, ["cost", "-s", "aws-train", "-C", str(ROOT), "-f", "json"])
    assert result.exit_code == 0, result.output
    bill = {ln["item"]: ln for ln in json.loads(result.stdout)["bill"]}
    # aws-train: 3 AZs; pools h100 0/2/4, l40s 1/2/6, agents-l40s 0/1/4 with 200 GB roots; system 2/2/4 × 100 GB.
    # 1.34 is past standard support from 2026-12-02, and support_type defaults to EXTENDED: $0.60 a cluster-hour
    assert bill["EKS control plane"]["hourly"]["max"] == pytest.approx(0.60)
    assert bill["NAT gateways"]["hourly"]["max"] == pytest.approx(3 * 0.045)  # 0.135
    assert bill["NAT public IPv4 addresses"]["hourly"]["max"] == pytest.approx(3 * 0.005)
    assert bill["system node pool"]["hourly"]["min"] == pytest.approx(2 * 0.2016)  # 0.4032
    assert bill["system node pool"]["hourly"]["max"] == pytest.approx(4 * 0.2016)  # 0.8064
    # roots at max: 14 GPU nodes × 200 + 4 × 100 = 3,200 GB × $0.08 = $256/month = $0.350685/h
    assert bill["EBS root volumes"]["monthly"]["max"] == pytest.approx(256.0)
    assert bill["EBS root volumes"]["hourly"]["max"] == pytest.approx(0.3507, abs=1e-4)
    for item in ("EKS control plane", "NAT gateways", "system node pool", "EBS root volumes"):
        price = bill[item]["price"]
        extended = item == "EKS control plane"  # eks-cluster-extended, checked 2026-12-02
        assert price["date"] == ("2026-12-02" if extended else "2026-11-30") and price["source"] and price["verified"]


def test_usage_billed_items_are_named_not_zero_without_a_usage_profile() -> None:
    lines = _lines()
    nat = lines["NAT data processing"]
    assert nat.hourly is None and nat.status == "usage-based"  # type: ignore[attr-defined]
    assert "nat_gb_processed" in nat.note  # type: ignore[attr-defined]


def test_a_usage_profile_prices_nat_data_transfer_and_usage_storage() -> None:
    usage = UsageProfile.model_validate(
        {
            "sites": {
                "use1": {
                    "nat_gb_processed": 2000,
                    "data_transfer_out_gb": 500,
                    "storage": {"objects": {"gb_stored": 40000}, "home": {"gb_stored": 800}},
                }
            }
        }
    )
    cost = estate_cost(parse_estate(small(), "test"), None, NOW, usage)
    lines = {ln.item: ln for ln in cost.bill}
    # 2,000 GB × $0.045 = $90/month; 500 GB × $0.09 = $45/month
    assert lines["NAT data processing"].hourly is not None
    assert lines["NAT data processing"].hourly.monthly("max") == pytest.approx(90.0)
    assert lines["data transfer out"].hourly.monthly("min") == pytest.approx(45.0)  # type: ignore[union-attr]
    tiers = {t.tier: t for t in cost.storage if t.site == "use1"}
    assert tiers["objects"].status == "priced" and tiers["objects"].monthly_usd == pytest.approx(
        920.0
    )  # 40,000 × 0.023
    assert tiers["home"].monthly_usd == pytest.approx(240.0)  # 800 × $0.30
    # Everything priced now: the totals leave nothing usage-billed out, and carry the new $1,295/month.
    assert cost.total().unpriced == ()
    bare = estate_cost(parse_estate(small(), "test"), None, NOW)
    delta = (cost.total().hourly.monthly("max") or 0) - (bare.total().hourly.monthly("max") or 0)
    assert delta == pytest.approx(90 + 45 + 920 + 240)


def test_cost_cli_reads_the_usage_file_next_to_the_stack_and_rejects_a_bad_one(tmp_path: Path) -> None:
    project = write_project(tmp_path, stack_config(small()), stack="small")
    usage = project / "stacks" / "usage.small.yaml"
    usage.write_text("sites:\n  use1:\n    nat_gb_processed: 1000\n")
    result = CliRunner().invoke(app, ["cost", "-s", "small", "-C", str(project), "-f", "json"])
    assert result.exit_code == 0, result.output
    bill = {ln["item"]: ln for ln in json.loads(result.stdout)["bill"]}
    assert bill["NAT data processing"]["monthly"]["max"] == pytest.approx(45.0)  # 1,000 GB × $0.045
    # Every problem at once, each naming the file and YAML path; exit 2, no traceback.
    usage.write_text("sites:\n  use1:\n    nat_gb_processed: -1\n    storage:\n      objects: {gb: 3}\n")
    result = CliRunner().invoke(app, ["cost", "-s", "small", "-C", str(project), "-f", "json"])
    assert result.exit_code == 2
    assert "sites.use1.nat_gb_processed" in result.stderr
    assert "sites.use1.storage.objects.gb" in result.stderr
    assert "usage.small.yaml" in result.stderr and "Traceback" not in result.output


def test_an_adopted_cluster_and_vpc_bill_no_control_plane_nat_or_system_pool() -> None:
    estate = small()
    estate["sites"][0]["cluster"] = {"adopt_name": "theirs"}
    estate["sites"][0]["vpc"] = {"vpc_id": "vpc-0123", "private_subnet_ids": ["subnet-1", "subnet-2"]}
    estate["sites"][0]["fabrics"][0]["subnet_id"] = "subnet-3"
    estate["sites"][0]["interconnect"] = {"kind": "existing", "site": "dc", "onprem_cidrs": ["10.1.0.0/16"]}
    estate["sites"][0]["kubernetes"] = {"network_policy_cni": "vpc-cni"}
    cost = estate_cost(parse_estate(estate, "test"), None, NOW)
    items = {ln.item for ln in cost.bill}
    assert "EKS control plane" not in items and "NAT gateways" not in items and "system node pool" not in items
    roots = next(ln for ln in cost.bill if ln.item == "EBS root volumes")
    assert roots.quantity.startswith("200/600/1000 GB")  # GPU nodes only: (1/2/3 + 0/1/2) × 200


def test_the_budget_line_and_the_budget_cap_finding_state_one_max_hourly_cost(tmp_path: Path) -> None:
    """aws-train with a $300/h cap: the envelope at max is pools 290.56 + FSx 24,000 GB × $0.60 / 730 = 19.726
    + the rest of the bill 1.912 = $312.20/h (its 1.34 control plane at the extended rate from 2026-12-02; its 4 KMS
    keys 4 × $1 / 730 h = $0.0055/h: 312.1930 + 0.0055 = 312.1984). The rule used to sum GPU node groups only ($290.56/h: within) while
    the budget line said $311.69/h: OVER. Now the finding judges the envelope's figure."""
    from gpufleet.render.cost import budget_line
    from gpufleet.review.review import build
    from tests.conftest import example_config

    config = example_config("aws-train")
    config["gpufleet:estate"]["policies"] = {
        **config["gpufleet:estate"].get("policies", {}),
        "budget_usd_per_hour": 300,
    }
    review = build(write_project(tmp_path, config, stack="aws-train"), "aws-train")
    at_max = review.cost.total().hourly.at("max")
    assert at_max == pytest.approx(312.1984, abs=0.0001)
    assert review.findings is not None
    (finding,) = [f for f in review.findings if f.rule == "budget-cap"]
    assert f"${at_max:,.2f}" in finding.message and "$312.20" in finding.message
    assert any("$312.20/h" in line for line in budget_line(300, at_max))


@pytest.mark.parametrize("adopt", [(), ("cluster",), ("vpc",), ("cluster", "vpc")])
def test_the_bill_takes_exactly_the_prices_the_refusal_checks(adopt: tuple[str, ...]) -> None:
    # pricing.price_needs is what a stack is refused for; the bill, storage and pools must price the same lines
    from model.pricing import price_needs, storage_price_key
    from model.spec import AwsSite

    raw = example_estate("aws-train")
    site = raw["sites"][0]
    if "cluster" in adopt:
        site["cluster"] = {**site["cluster"], "adopt_name": "existing"}
        site["kubernetes"] = {**site["kubernetes"], "network_policy_cni": "calico"}
    if "vpc" in adopt:
        site["vpc"] = {"vpc_id": "vpc-0123456789abcdef0", "private_subnet_ids": ["subnet-0a", "subnet-0b"]}
        site["fabrics"][0]["subnet_id"] = "subnet-0a"
    spec = parse_estate(raw, "aws-train")
    cost = estate_cost(spec, None, NOW)
    (aws,) = [s for s in spec.sites if isinstance(s, AwsSite)]
    billed = {ln.key for ln in cost.bill} | {p.instance_type for p in cost.pools if p.instance_type}
    billed |= {k for t in aws.storage if (k := storage_price_key(t)) is not None}
    with clock.frozen(NOW):  # the control plane's key follows the day (standard or extended support)
        assert billed == {n.key for n in price_needs(aws)}
