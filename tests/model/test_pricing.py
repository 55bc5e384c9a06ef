"""components/model/pricing.py is the one home for amortised on-prem prices: `gpufleet cost` and `gpufleet size`
quote the same $/GPU-hour for a pool, that of the servers actually in the pool."""

from __future__ import annotations

from typing import Any

import pytest

from components.model.load import parse_estate
from components.model.pricing import HOURS_PER_MONTH, HOURS_PER_YEAR, server_hour_usd
from components.model.spec import BaremetalSite, EstateSpec
from gpufleet.review.cost import estate_cost
from gpufleet.sizing.core import stack_placements
from tests.conftest import example_estate


def onprem_with_a_four_gpu_server() -> EstateSpec:
    """The onprem example with one of the `train` pool's six 8-GPU servers swapped for a 4-GPU one."""
    estate: dict[str, Any] = example_estate("onprem")
    estate["sites"][0]["inventory"][0]["gpu_count"] = 4  # gpu-r1-01, pool train
    estate["tenants"][0]["gpu_quota"]["train"] = 28  # quotas 28 + 16 fit the 44 GPUs left
    return parse_estate(estate, "stacks/Pulumi.onprem.yaml")


def test_cost_and_size_quote_the_same_gpu_hour_price_for_a_pool_with_uneven_servers() -> None:
    spec = onprem_with_a_four_gpu_server()
    site = spec.sites[0]
    assert isinstance(site, BaremetalSite) and site.cost is not None
    # 320,000 / (4 x 8,760) + 11 x 0.11 + 900 / 730 = 11.5753 USD a server-hour; 6 servers over 5 x 8 + 4 GPUs
    per_server = 320000 / (4 * 8760) + 11 * 0.11 + 900 / 730
    expected = 6 * per_server / 44
    assert expected == pytest.approx(1.5784, abs=1e-4)  # dividing by 8 GPUs per node gave 1.4469

    cost = next(p for p in estate_cost(spec).pools if p.pool == "train")
    placements, _ = stack_placements(spec)
    size = next(p for p in placements if p.pool == "train")

    assert cost.usd_per_gpu_hour == pytest.approx(expected)
    assert float(size.usd_per_gpu_hour or 0) == pytest.approx(expected)


def test_server_hour_is_depreciation_power_and_operations_over_a_730_hour_month() -> None:
    site = parse_estate(example_estate("onprem"), "stacks/Pulumi.onprem.yaml").sites[0]
    assert isinstance(site, BaremetalSite) and site.cost is not None
    assert (HOURS_PER_YEAR, HOURS_PER_MONTH) == (8760, 730)
    assert server_hour_usd(site.cost) == pytest.approx(320000 / 35040 + 1.21 + 900 / 730)
