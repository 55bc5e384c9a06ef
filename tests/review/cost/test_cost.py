"""The cost envelope: hand-checked figures, unpriced pools, burst windows, tenants, storage."""

from __future__ import annotations

import datetime as dt

import pytest

from gpufleet.review.cost.envelope import UNASSIGNED, EstateCost, estate_cost
from model import catalog
from model.load import SpecError, parse_estate
from model.spec import BurstWindow
from tests.conftest import example_estate
from tests.review.estates import NOW, small

P5 = 55.04  # us-east-1 on-demand $/h, catalog (Karpenter price table, 2026-07-20)
G6E_XL = 1.861
# Bare metal, per server-hour: 200,000 / (4 y × 8,760 h) + 10 kW × $0.10 + $730 / 730 h
SERVER_HOUR = 200_000 / (4 * 8760) + 10 * 0.1 + 730 / 730  # = 5.70776 + 1 + 1 = 7.70776
FSX_MONTH = 2400 * 0.145  # 2,400 GB × $0.145/GB-month (PERSISTENT_2, 125 MB/s/TiB) = $348/month
FSX_HOUR = FSX_MONTH / 730  # = $0.47671/h
# The rest of use1's bill (2 AZs, created VPC and cluster; catalog `services` and `cpu_instances`, us-east-1):
# EKS $0.10 + 2 NAT × $0.045 + 2 IPv4 × $0.005 = $0.20/h flat; system pool 2/2/4 × m7i.xlarge $0.2016;
# gp3 roots at $0.08/GB-month: (h100 1/2/3 + agents 0/1/2) × 200 GB + system 2/2/4 × 100 GB = 400/800/1400 GB.
# KMS: the site key and one per FSx, EFS and S3 tier, 4 × $1/key-month ÷ 730 h = $0.0054795/h.
FIXED = 0.10 + 2 * 0.045 + 2 * 0.005 + 4 * 1.0 / 730  # = 0.2054795
BILL = {
    "min": FIXED + 2 * 0.2016 + 400 * 0.08 / 730,  # 0.2054795 + 0.4032 + 0.043836 = 0.652516
    "desired": FIXED + 2 * 0.2016 + 800 * 0.08 / 730,  # 0.2054795 + 0.4032 + 0.087671 = 0.696351
    "max": FIXED + 4 * 0.2016 + 1400 * 0.08 / 730,  # 0.2054795 + 0.8064 + 0.153425 = 1.165305
}


def small_cost() -> EstateCost:
    return estate_cost(parse_estate(small(), "test"), None, NOW)


def test_pool_figures_are_price_times_nodes_at_each_size() -> None:
    cost = small_cost()
    h100 = next(p for p in cost.pools if p.pool == "h100")
    # nodes 1 / 2 / 3 at $55.04 -> $55.04 / $110.08 / $165.12 per hour; $120,537.60 a month at max
    assert h100.nodes == {"min": 1, "desired": 2, "max": 3}
    assert h100.hourly.at("min") == pytest.approx(55.04)
    assert h100.hourly.at("desired") == pytest.approx(110.08)
    assert h100.hourly.at("max") == pytest.approx(165.12)
    assert h100.hourly.monthly("max") == pytest.approx(120_537.60)
    assert h100.price is not None and h100.price.date == "2026-07-20"
    assert "karpenter" in h100.price.source


def test_bare_metal_pool_costs_its_servers_at_the_amortised_rate_at_every_size() -> None:
    cost = small_cost()
    owned = next(p for p in cost.pools if p.pool == "owned")
    # 2 servers × $7.70776/h = $15.41553/h at min, desired and max (owned servers cost the same)
    assert owned.nodes == {"min": 2, "desired": 2, "max": 2}
    for level in ("min", "desired", "max"):
        assert owned.hourly.at(level) == pytest.approx(2 * SERVER_HOUR)
    assert owned.price is not None and owned.price.unit == "server-hour"
    assert "sites.dc.cost" in owned.price.source


def test_estate_total_adds_pools_fsx_storage_and_the_rest_of_the_bill() -> None:
    total = small_cost().total()
    # min:     55.04 + 0     + 15.41553 + 0.47671 + 0.65252 =  71.58476
    # desired: 110.08 + 1.861 + 15.41553 + 0.47671 + 0.69635 = 128.52959
    # max:     165.12 + 3.722 + 15.41553 + 0.47671 + 1.16531 = 185.89955
    assert total.hourly.at("min") == pytest.approx(P5 + 2 * SERVER_HOUR + FSX_HOUR + BILL["min"])
    assert total.hourly.at("desired") == pytest.approx(2 * P5 + G6E_XL + 2 * SERVER_HOUR + FSX_HOUR + BILL["desired"])
    assert total.hourly.at("max") == pytest.approx(3 * P5 + 2 * G6E_XL + 2 * SERVER_HOUR + FSX_HOUR + BILL["max"])
    assert total.hourly.at("max") == pytest.approx(185.89955, abs=1e-4)
    assert total.hourly.monthly("desired") == pytest.approx(128.52959 * 730, abs=0.1)
    # Without a usage profile the usage-billed items are named, never $0.
    assert total.unpriced == ("NAT data processing (use1, usage-based)", "data transfer out (use1, usage-based)")


def test_site_totals_split_the_estate() -> None:
    cost = small_cost()
    use1, dc = cost.site_total("use1"), cost.site_total("dc")
    assert use1.hourly.at("desired") == pytest.approx(2 * P5 + G6E_XL + FSX_HOUR + BILL["desired"])
    assert dc.hourly.at("desired") == pytest.approx(2 * SERVER_HOUR)
    assert use1.hourly.at("max") + dc.hourly.at("max") == pytest.approx(cost.total().hourly.at("max"))  # type: ignore[operator]


def test_tenants_pay_their_quota_share_and_the_rest_is_unassigned() -> None:
    tenants = {t: total.hourly for t, total in small_cost().tenants().items()}
    # h100 offers 3 × 8 = 24 GPUs at max: research 16/24 = 2/3, product 4/24 = 1/6, unassigned 1/6.
    # owned offers 16 GPUs: research 16/16. agents-g6e offers 2: agents 2/2.
    assert tenants["research"].at("desired") == pytest.approx(2 / 3 * 2 * P5 + 2 * SERVER_HOUR)
    assert tenants["product"].at("max") == pytest.approx(1 / 6 * 3 * P5)
    assert tenants[UNASSIGNED].at("max") == pytest.approx(1 / 6 * 3 * P5)
    assert tenants["agents"].at("desired") == pytest.approx(G6E_XL)
    pools_only = small_cost().pool_total(small_cost().pools).hourly.at("max")
    assert sum(f.at("max") or 0 for f in tenants.values()) == pytest.approx(pools_only)


def test_fsx_is_priced_by_capacity_and_throughput_tier_with_its_source() -> None:
    cost = small_cost()
    fsx = next(t for t in cost.storage if t.kind == "fsx-lustre")
    assert fsx.status == "priced"
    assert fsx.monthly_usd == pytest.approx(348.0)
    assert fsx.price is not None and fsx.price.date == "2026-11-29" and fsx.price.verified
    tiers = {t.kind: t for t in cost.storage}
    assert tiers["efs"].status == "usage-based" and tiers["efs"].monthly_usd is None
    assert tiers["s3"].status == "usage-based" and tiers["s3"].monthly_usd is None
    assert tiers["scratch"].status == "included"
    assert tiers["nfs"].status == "external"


def test_every_storage_price_in_the_catalog_has_a_date_and_a_source() -> None:
    storage = catalog.price_table()["storage"]
    for region, services in storage.items():
        if region.startswith("_"):
            continue
        for service, entry in services.items():
            figures = entry.get("by_throughput_per_tib", {"-": entry})
            for tier, fig in figures.items():
                assert fig["usd"] > 0, (region, service, tier)
                assert dt.date.fromisoformat(fig["date"]), (region, service, tier)
                assert len(fig["source"]) > 20 and isinstance(fig["verified"], bool), (region, service, tier)


def test_a_site_in_a_region_the_catalog_cannot_price_is_refused_line_by_line() -> None:
    raw = small()
    site = raw["sites"][0]
    site["region"] = "af-south-1"  # a region the catalog holds no GPU instance or regional service price for
    site["availability_zones"] = ["af-south-1a", "af-south-1b"]
    site["fabrics"][0]["availability_zone"] = "af-south-1a"
    with pytest.raises(SpecError) as e:
        parse_estate(raw, "test")
    refused = {line.split(": ")[1].removeprefix("config.gpufleet:estate.") for line in str(e.value).splitlines()}
    pools = {f"sites[0].node_pools[{j}].instance_type" for j in range(len(site["node_pools"]))}
    assert pools | {"sites[0].storage[0]", "sites[0].vpc", "sites[0].region"} <= refused
    assert "sites[0].cluster" not in refused  # EKS is one price in every region


def _hybrid_window(start: dt.datetime, hours: int, instance_type: str = "p5.48xlarge") -> BurstWindow:
    return BurstWindow(
        pool="burst-h100",
        nodes=2,
        instance_type=instance_type,
        availability_zone="us-east-1a",
        start=start,
        expires=start + dt.timedelta(hours=hours),
    )


def test_burst_pool_costs_up_to_the_window_cap_and_nothing_after_the_grace() -> None:
    spec = parse_estate(example_estate("hybrid"), "hybrid")
    window = _hybrid_window(NOW - dt.timedelta(hours=1), 8)
    during = next(p for p in estate_cost(spec, window, NOW).pools if p.pool == "burst-h100")
    assert during.nodes == {"min": 0, "desired": 0, "max": 2}  # grows on demand: nothing waiting, nothing runs
    assert during.hourly.at("max") == pytest.approx(2 * P5)
    after = next(p for p in estate_cost(spec, window, NOW + dt.timedelta(hours=9)).pools if p.pool == "burst-h100")
    assert after.nodes == {"min": 0, "desired": 0, "max": 0}
    assert after.hourly.at("max") == 0.0 and after.priced


def test_idle_burst_pool_states_what_a_window_could_cost() -> None:
    spec = parse_estate(example_estate("hybrid"), "hybrid")
    idle = next(p for p in estate_cost(spec, None, NOW).pools if p.pool == "burst-h100")
    assert idle.hourly.at("max") == 0.0
    # pool max 4 nodes x p5.48xlarge $55.04 = $220.16/h, bounded by the burst policy's monthly budget
    assert "a window may grow it to 4 × p5.48xlarge = $220.16/h, within the burst budget of $20,000/month" in idle.notes


def test_burst_window_with_another_instance_type_is_priced_at_that_type() -> None:
    spec = parse_estate(example_estate("hybrid"), "hybrid")
    window = _hybrid_window(NOW - dt.timedelta(hours=1), 8, "p5en.48xlarge")
    pool = next(p for p in estate_cost(spec, window, NOW).pools if p.pool == "burst-h100")
    assert pool.instance_type == "p5en.48xlarge"
    assert pool.hourly.at("max") == pytest.approx(2 * 63.296)


def test_gpu_hour_prices_put_cloud_and_owned_gpus_side_by_side() -> None:
    pools = {p.pool: p for p in small_cost().pools}
    assert pools["h100"].usd_per_gpu_hour == pytest.approx(P5 / 8)  # $6.88 per H100-hour on demand
    assert pools["owned"].usd_per_gpu_hour == pytest.approx(SERVER_HOUR / 8)  # $0.96 per owned H100-hour
