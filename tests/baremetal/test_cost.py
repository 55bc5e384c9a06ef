"""Amortised on-prem price per GPU-hour, checked against hand arithmetic."""

from __future__ import annotations

from typing import Any

import pytest

from components.model.pricing import pool_gpu_hour_price
from components.model.spec import BaremetalSite
from tests.baremetal.helpers import onprem_spec

# Hand-picked inputs with round results: 87,600 USD over 1 year = 10 USD per hour (8,760 h); 10 kW at
# 0.10 USD/kWh = 1 USD per hour; 730 USD per month = 1 USD per hour (730 h). One server-hour: 12 USD.
ROUND = {
    "server_price_usd": 87600,
    "lifetime_years": 1,
    "power_kw": 10,
    "usd_per_kwh": 0.1,
    "ops_usd_per_server_month": 730,
}


def _site(mutate: Any) -> tuple[Any, BaremetalSite]:
    spec = onprem_spec(mutate)
    site = spec.sites[0]
    assert isinstance(site, BaremetalSite)
    return spec, site


def test_site_cost_gives_twelve_dollars_a_server_hour_and_one_fifty_a_gpu_hour() -> None:
    def round_cost(estate: dict[str, Any]) -> None:
        estate["sites"][0]["cost"] = ROUND

    spec, site = _site(round_cost)
    price = pool_gpu_hour_price(spec, site, site.node_pools[0])  # train: 6 servers x 8 GPUs
    assert price is not None
    assert price.source == "site"
    assert (price.servers, price.gpus) == (6, 48)
    assert price.usd_per_server_hour == pytest.approx(12.0)
    assert price.usd_per_hour == pytest.approx(72.0)
    assert price.usd_per_gpu_hour == pytest.approx(1.5)


def test_pool_cost_overrides_the_site_and_uneven_gpu_counts_share_the_bill() -> None:
    def uneven(estate: dict[str, Any]) -> None:
        site = estate["sites"][0]
        site["node_pools"][1]["cost"] = ROUND
        site["inventory"][7]["gpu_count"] = 4  # dev pool: one 8-GPU and one 4-GPU server
        estate["tenants"][0]["gpu_quota"]["dev"] = 28
        estate["tenants"][1]["gpu_quota"]["dev"] = 28

    spec, site = _site(uneven)
    price = pool_gpu_hour_price(spec, site, site.node_pools[1])
    assert price is not None
    assert price.source == "pool"
    # 2 servers x 12 USD = 24 USD an hour over 12 GPUs
    assert (price.servers, price.gpus) == (2, 12)
    assert price.usd_per_gpu_hour == pytest.approx(2.0)


def test_onprem_example_price_matches_hand_arithmetic() -> None:
    spec, site = _site(lambda estate: None)
    prices = {p.name: pool_gpu_hour_price(spec, site, p) for p in site.node_pools}
    # 320,000 / (4 x 8,760) + 11 x 0.11 + 900 / 730 = 9.13242 + 1.21 + 1.23288 = 11.57530 USD per server-hour
    per_server = 320000 / 35040 + 1.21 + 900 / 730
    assert per_server == pytest.approx(11.5753, abs=1e-4)
    train, dev = prices["train"], prices["dev"]
    assert train is not None and dev is not None
    assert train.usd_per_gpu_hour == pytest.approx(per_server / 8)
    assert dev.usd_per_gpu_hour == pytest.approx(1.44691, abs=1e-5)


def test_pool_without_cost_inputs_is_unpriced() -> None:
    def no_cost(estate: dict[str, Any]) -> None:
        del estate["sites"][0]["cost"]

    spec, site = _site(no_cost)
    assert pool_gpu_hour_price(spec, site, site.node_pools[0]) is None
    assert pool_gpu_hour_price(spec, site, site.node_pools[1]) is None
