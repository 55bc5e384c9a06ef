"""Usage profiles (`usage.<stack>.yaml`): the user's reference in docs/usage-profiles.md covers every key and its
example prices what it says; a figure that prices nothing is refused naming the file and YAML path; and an
envelope that leaves usage-billed items out says where a profile goes (the newcomer issue: messages said "give ...
in a usage profile" and nothing a user reads said what that is)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.review.cost.envelope import estate_cost
from gpufleet.review.cost.usage import PROFILE_HINT, USAGE_DOC, SiteUsage, TierUsage
from gpufleet.review.cost.usage_file import read_usage
from model.kinds.aws import UNPRICED as AWS_UNPRICED
from model.load import SpecError, parse_estate
from tests.conftest import ROOT, example_estate
from tests.review.estates import NOW, small

DOC = ROOT / USAGE_DOC


def _doc() -> str:
    return " ".join(DOC.read_text().split())  # prose wraps anywhere


def _example() -> str:
    """The YAML example of the reference."""
    (block,) = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), flags=re.S)
    return block


def test_the_reference_documents_every_key_of_a_usage_profile() -> None:
    text = _doc()
    keys = [f"sites.<site>.{k}" for k in SiteUsage.model_fields if k != "storage"]
    keys += [f"sites.<site>.storage.<tier>.{k}" for k in TierUsage.model_fields]
    for key in keys:
        assert f"`{key}`" in text, key
    assert "stacks/usage.<stack>.yaml" in text
    for item in AWS_UNPRICED:  # what a profile does not price is named too
        assert item.split(" (")[0] in text, item


def test_the_documented_example_prices_what_the_reference_says(tmp_path: Path) -> None:
    spec = parse_estate(example_estate("aws-train"), "aws-train")
    path = tmp_path / "usage.aws-train.yaml"
    path.write_text(_example())
    usage = read_usage(path, spec)
    assert usage is not None
    priced, bare = estate_cost(spec, None, NOW, usage), estate_cost(spec, None, NOW)
    assert priced.total().unpriced == ()  # every usage-billed item of aws-train has its figure
    assert [t.status for t in priced.storage if t.kind in ("s3", "efs")] == ["priced", "priced"]
    storage = sum(t.monthly_usd or 0 for t in priced.storage) - sum(t.monthly_usd or 0 for t in bare.storage)
    bill = sum(ln.hourly.monthly("max") or 0 for ln in priced.bill if ln.hourly) - sum(
        ln.hourly.monthly("max") or 0 for ln in bare.bill if ln.hourly
    )
    assert "adds $1,295 a month" in _doc()
    assert storage + bill == pytest.approx(1295)  # 90 + 45 + 920 + 240, as the reference works it


def test_a_figure_that_prices_nothing_is_refused_naming_the_file_and_yaml_path(tmp_path: Path) -> None:
    estate = small()
    path = tmp_path / "usage.small.yaml"
    profile = {
        "sites": {
            "use2": {"nat_gb_processed": 1},
            "dc": {"data_transfer_out_gb": 1},
            "use1": {"storage": {"lustre": {"gb_stored": 1}, "homes": {"gb_stored": 1}, "objects": {"gb_stored": 1}}},
        }
    }
    path.write_text(yaml.safe_dump(profile, sort_keys=False))
    with pytest.raises(SpecError) as err:
        read_usage(path, parse_estate(estate, "small"))
    assert err.value.problems == [
        f"{path}: sites.use2: use2 is not a site of the estate (its sites: use1, dc)",
        f"{path}: sites.dc: site dc is bare metal; a usage profile prices AWS usage only",
        f"{path}: sites.use1.storage.lustre: lustre is a fsx-lustre tier, not billed on GB stored, of site use1 "
        "(its EFS and S3 tiers: home, objects)",
        f"{path}: sites.use1.storage.homes: homes is not a storage tier of site use1 (its EFS and S3 tiers: home, "
        "objects)",
    ]


def test_nat_data_on_a_site_that_adopts_its_vpc_is_refused(tmp_path: Path) -> None:
    estate = small()
    site = estate["sites"][0]
    site["vpc"] = {"vpc_id": "vpc-0123", "private_subnet_ids": ["subnet-1", "subnet-2"]}
    site["fabrics"][0]["subnet_id"] = "subnet-3"
    site["interconnect"] = {"kind": "existing", "site": "dc", "onprem_cidrs": ["10.1.0.0/16"]}
    path = tmp_path / "usage.small.yaml"
    path.write_text("sites:\n  use1:\n    nat_gb_processed: 2000\n")
    with pytest.raises(SpecError) as err:
        read_usage(path, parse_estate(estate, "small"))
    assert err.value.problems == [
        f"{path}: sites.use1.nat_gb_processed: site use1 adopts VPC vpc-0123, where gpufleet creates no NAT "
        "gateway; remove it"
    ]


def test_cost_says_where_a_usage_profile_goes_when_usage_billed_items_have_no_figure() -> None:
    result = CliRunner().invoke(app, ["cost", "-s", "aws-train", "-C", str(ROOT), "--summary"])
    assert result.exit_code == 0, result.output
    assert PROFILE_HINT in result.stdout and "usage.<stack>.yaml" in PROFILE_HINT and DOC.exists()
    markdown = CliRunner().invoke(app, ["cost", "-s", "aws-train", "-C", str(ROOT), "-f", "markdown", "--summary"])
    assert PROFILE_HINT in markdown.stdout


@pytest.mark.parametrize("figure", [".inf", "-.inf", ".nan", "1e308", "inf", "1e10"])
def test_a_figure_that_is_not_a_finite_amount_is_refused_naming_the_file_and_key(tmp_path: Path, figure: str) -> None:
    """inf, NaN or 1e308 GB would make the cost JSON carry Infinity, which is not JSON."""
    path = tmp_path / "usage.aws-train.yaml"
    path.write_text(f"sites:\n  use1:\n    data_transfer_out_gb: {figure}\n")
    with pytest.raises(SpecError) as err:
        read_usage(path, parse_estate(example_estate("aws-train"), "aws-train"))
    (problem,) = err.value.problems
    assert problem.startswith(f"{path}: sites.use1.data_transfer_out_gb: ")
