"""The catalog of the instance types and Regions EC2 describes the network topology of (model.catalog.topology)."""

from __future__ import annotations

import unicodedata

from model import catalog
from model.catalog import topology


def _plain(name: str) -> str:
    return unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()


def test_each_listed_region_is_the_region_of_that_name() -> None:
    # The page names Regions; the codes are the commercial Regions of those names (botocore's endpoints data), and
    # GovCloud (US-West), which a stack cannot name.
    known = catalog.aws_regions()
    for code, name in topology.REGIONS.items():
        if code.startswith("us-gov-"):
            continue
        assert _plain(known[code]) == _plain(name), code


def test_a_type_has_its_layers_only_in_a_listed_region() -> None:
    assert topology.network_layers("p5.48xlarge", "us-east-1") == 3
    assert topology.network_layers("p6-b200.48xlarge", "us-west-2") == 4
    # Europe (Milan), Asia Pacific (Malaysia), Mexico (Central): commercial Regions the page does not list
    for region in ("eu-south-1", "ap-southeast-5", "mx-central-1"):
        assert region in catalog.aws_regions() and region not in topology.REGIONS
        assert topology.network_layers("p5.48xlarge", region) == 0, region
    assert topology.type_layers("p5.48xlarge") == 3
    assert topology.network_layers("g5.48xlarge", "us-east-1") == topology.type_layers("g5.48xlarge") == 0


def test_the_groups_share_no_type() -> None:
    types = [t for g in topology.GROUPS for t in g.instance_types]
    assert len(types) == len(set(types))
