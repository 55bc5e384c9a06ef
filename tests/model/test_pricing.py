"""model/pricing.py, the one home for prices: the amortised on-prem price per GPU-hour against hand
arithmetic, and `gpufleet cost` and `gpufleet size` quoting the same price for a pool (that of the servers
actually in the pool)."""

from __future__ import annotations

from typing import Any

import pytest

from gpufleet.review.cost.envelope import estate_cost
from gpufleet.sizing.placement import stack_placements
from model.pricing import HOURS_PER_MONTH, HOURS_PER_YEAR, pool_gpu_hour_price, server_hour_usd
from model.spec import BaremetalSite, EstateSpec
from tests.model.helpers import example_spec

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
    spec = example_spec("onprem", mutate)
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


def onprem_with_a_four_gpu_server() -> EstateSpec:
    """The onprem example with one of the `train` pool's six 8-GPU servers swapped for a 4-GPU one."""

    def swap(estate: dict[str, Any]) -> None:
        estate["sites"][0]["inventory"][0]["gpu_count"] = 4  # gpu-r1-01, pool train
        estate["tenants"][0]["gpu_quota"]["train"] = 28  # quotas 28 + 16 fit the 44 GPUs left

    return example_spec("onprem", swap)


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
    site = example_spec("onprem").sites[0]
    assert isinstance(site, BaremetalSite) and site.cost is not None
    assert (HOURS_PER_YEAR, HOURS_PER_MONTH) == (8760, 730)
    assert server_hour_usd(site.cost) == pytest.approx(320000 / 35040 + 1.21 + 900 / 730)


def test_a_pool_cost_override_takes_its_unset_fields_from_the_site_not_the_global_defaults() -> None:
    def cheaper_power(estate: dict[str, Any]) -> None:
        estate["sites"][0]["node_pools"][1]["cost"] = {"usd_per_kwh": 0.2}  # dev pool; site: 0.11 $/kWh, $900 ops

    spec, site = _site(cheaper_power)
    price = pool_gpu_hour_price(spec, site, site.node_pools[1])
    assert price is not None and price.source == "pool"
    # the site's 320,000 over 4 y, 11 kW and 900 $/month ops; only the power price is the pool's
    assert price.usd_per_server_hour == pytest.approx(320000 / 35040 + 11 * 0.2 + 900 / 730)
    assert price.origins["usd_per_kwh"] == "pool" and price.origins["ops_usd_per_server_month"] == "site"
    dev = next(p for p in estate_cost(spec).pools if p.pool == "dev")
    assert dev.price is not None
    assert "sites.dc1.node_pools.dev.cost (from sites.dc1.cost: server_price_usd" in dev.price.source
    assert "defaults" not in dev.price.source


def test_cost_names_every_defaulted_input() -> None:
    def price_only(estate: dict[str, Any]) -> None:
        estate["sites"][0]["cost"] = {"server_price_usd": 320000, "power_kw": 11}

    spec, _ = _site(price_only)
    train = next(p for p in estate_cost(spec).pools if p.pool == "train")
    assert train.price is not None
    assert "(defaults, set nowhere: lifetime_years=4, usd_per_kwh=0.12, ops_usd_per_server_month=500)" in (
        train.price.source
    )


def test_a_pool_cost_without_a_server_price_needs_a_site_cost() -> None:
    from model.load import SpecError

    def no_site_cost(estate: dict[str, Any]) -> None:
        del estate["sites"][0]["cost"]
        estate["sites"][0]["node_pools"][1]["cost"] = {"usd_per_kwh": 0.2}

    with pytest.raises(SpecError) as err:
        _site(no_site_cost)
    assert "node_pools[1].cost.server_price_usd: unset, and the site has no `cost`" in str(err.value)


# -- the EKS control plane in extended support --------------------------------------------------------------------


def _control_plane(support_type: str, day: str) -> tuple[str, float | None]:
    import datetime as dt

    from model import clock

    spec = example_spec("aws-train")
    cluster = spec.sites[0].cluster.model_copy(update={"support_type": support_type})
    site = spec.sites[0].model_copy(update={"cluster": cluster})
    spec = spec.model_copy(update={"sites": [site]})
    at = dt.datetime.fromisoformat(day).replace(tzinfo=dt.UTC)
    with clock.frozen(at):
        [line] = [b for b in estate_cost(spec, now=at).bill if b.item == "EKS control plane"]
    return line.key, line.hourly.at("max")


def test_a_cluster_past_standard_support_under_extended_is_billed_the_extended_rate() -> None:
    """EKS: "clusters running on a Kubernetes version in the extended support window will be charged a total of
    $0.60 per cluster per hour" (aws.amazon.com/blogs/containers/amazon-eks-extended-support-for-kubernetes-versions-
    pricing); 1.34's standard support ends 2026-12-02 (model.versions.EKS_MINORS)."""
    assert _control_plane("EXTENDED", "2026-12-01") == ("eks-cluster", 0.1)
    assert _control_plane("EXTENDED", "2026-12-02") == ("eks-cluster-extended", 0.6)
    # Under STANDARD, EKS upgrades the control plane instead: the standard rate holds.
    assert _control_plane("STANDARD", "2026-12-03") == ("eks-cluster", 0.1)
