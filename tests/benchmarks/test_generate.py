"""The benchmark's synthetic estates pass the schema (fleet-scale synthesis itself stays in `benchmarks.run`)."""

from __future__ import annotations

from collections import Counter

import pytest

from benchmarks.generate import BASE, fleet
from benchmarks.generate import estate as scaled_estate
from model.load import parse_estate
from model.spec import AwsNodePool, BaremetalSite, EstateSpec


def _spec(config: dict[str, object]) -> EstateSpec:
    return parse_estate(config["gpufleet:estate"], "stacks/Pulumi.bench.yaml")  # type: ignore[arg-type]


def test_fleet_of_10000_gpus_is_a_valid_hybrid_estate_of_1250_eight_gpu_nodes() -> None:
    spec = _spec(fleet(10_000))
    pools = spec.pools()
    assert sum(spec.pool_gpu_capacity(p.name) for _, p in pools) == 10_000
    assert {spec.pool_gpus_per_node(p.name) for _, p in pools} == {8}
    assert Counter(s.kind for s in spec.sites) == {"baremetal": 1, "aws": 3}
    (dc,) = (s for s in spec.sites if isinstance(s, BaremetalSite))
    assert len(dc.inventory) == 750 and {f.kind for f in dc.fabrics} == {"infiniband", "roce"}
    modes = Counter(p.sharing.mode for _, p in pools)
    assert modes["mig"] >= 2 and modes["time-slicing"] == 1
    burst = [p for _, p in pools if isinstance(p, AwsNodePool) and p.burst]
    assert burst and spec.burst is not None and spec.burst.cloud_site == "burst"
    assert len(spec.tenants) == 250
    assert any(t.trust == "untrusted" for t in spec.tenants) and any(t.burst for t in spec.tenants)


@pytest.mark.parametrize("gpus", [640, 2_000, 5_000])
def test_smaller_fleets_are_valid_and_hold_the_gpus_asked_for(gpus: int) -> None:
    spec = _spec(fleet(gpus))
    assert sum(spec.pool_gpu_capacity(p.name) for _, p in spec.pools()) == gpus


def test_fleet_size_must_be_whole_eight_gpu_nodes() -> None:
    with pytest.raises(ValueError, match="multiple of 8"):
        fleet(1_001)


def test_resource_scaled_estate_is_valid() -> None:
    spec = _spec(scaled_estate(BASE.times(2)))
    assert len(spec.tenants) == BASE.times(2).tenants


@pytest.mark.parametrize("gpus", [50_000])
def test_the_largest_fleets_are_valid_their_fabrics_holding_every_server(gpus: int) -> None:
    spec = _spec(fleet(gpus))
    assert sum(spec.pool_gpu_capacity(p.name) for _, p in spec.pools()) == gpus
