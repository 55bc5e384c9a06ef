"""Storage sizing in `gpufleet size`: the GB/s each training node needs and what feeds a recommended pool at its
peak (the arithmetic of gpufleet/sizing/needs.py). It follows the pool's site: on AWS (a catalog instance type or
an AWS site's pool) the FSx for Lustre file system per throughput tier; on a data centre's site the tiers that
site declares (parallel-fs, nfs, scratch, s3-onprem: model.spec.sites BAREMETAL_STORAGE), since FSx, EFS and S3
exist only on AWS."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from gpufleet.sizing.arithmetic import ceil, q
from gpufleet.sizing.placement import ClassSizing
from gpufleet.sizing.pools import PoolRecommendation
from model.catalog import FSX_LUSTRE_TIERS
from model.spec import FsxLustreTier, ParallelFsTier, StorageTier

GB_PER_TIB = Fraction(1024**4, 10**9)  # 1,099.51 GB in a TiB
FSX_STEP_GIB = 2400  # PERSISTENT_2 capacity: 1,200 GiB or a multiple of 2,400 (FsxLustreTier.capacity_gib)


def guidance_gbps() -> Fraction:
    """The estate's per-training-node need (FsxLustreTier's default), the floor a node is planned at."""
    return q(FsxLustreTier.model_fields["min_gbps_per_training_node"].default)


@dataclass(frozen=True)
class ClassStorage:
    name: str
    average_gbps_per_node: Fraction  # the run's bytes over its hours and nodes
    planned_gbps_per_node: Fraction  # the larger of that and the guidance
    gb_stored: Fraction


@dataclass(frozen=True)
class PoolStorage:
    pool: str
    nodes: int  # at peak
    gbps: Fraction  # planned GB/s per node × nodes
    gb_stored: Fraction
    capacity_gib: dict[int, int]  # AWS: per PERSISTENT_2 tier (MB/s/TiB), capacity that gives gbps and holds the data
    site: str | None = None  # on prem: the site whose own tiers feed the pool (no FSx there)
    site_tiers: tuple[StorageTier, ...] = ()  # on prem: the tiers that site declares


@dataclass(frozen=True)
class SiteStorage:
    """An on-prem site's own tiers against what its recommended pools need at their peak, added up."""

    site: str
    pools: tuple[str, ...]
    gbps: Fraction
    gb_stored: Fraction
    tiers: tuple[StorageTier, ...]

    @property
    def shared_hot(self) -> list[ParallelFsTier]:
        """The site's parallel file systems: the tiers that can feed training at a declared throughput."""
        return [t for t in self.tiers if isinstance(t, ParallelFsTier)]

    @property
    def carried_by(self) -> list[ParallelFsTier]:
        """Parallel file systems whose declared aggregate throughput covers the pools' peak."""
        return [t for t in self.shared_hot if q(t.throughput_gbps) >= self.gbps]


def class_storage(cs: ClassSizing) -> ClassStorage | None:
    ch, need = cs.chosen, cs.cls.storage
    if ch is None or need is None or not ch.hours_per_run:
        return None
    avg = need.gb_moved() / (ch.hours_per_run * 3600) / ch.nodes_per_run
    return ClassStorage(cs.cls.name, avg, max(avg, guidance_gbps()), need.gb_stored())


def fsx_capacity_gib(gbps: Fraction, gb_stored: Fraction, tier: int) -> int:
    """GiB of a PERSISTENT_2 file system at `tier` MB/s/TiB that delivers `gbps` and holds `gb_stored`."""
    tib = max(gbps * 1000 / tier, gb_stored / GB_PER_TIB)
    gib = ceil(tib * 1024)
    return 1200 if gib <= 1200 else ceil(Fraction(gib, FSX_STEP_GIB)) * FSX_STEP_GIB


def pool_storage(rec: PoolRecommendation, classes: list[ClassStorage]) -> PoolStorage | None:
    """What feeds a pool at its peak: FSx capacity per tier on AWS, the site's own tiers on prem."""
    mine = [c for c in classes if c.name in rec.demand.classes]
    if not mine:
        return None
    d, p = rec.demand, rec.demand.placement
    # A pool the stack has runs up to its (raised) max, the nodes preview's FSx check counts; a new cloud pool up
    # to its peak with spares; owned servers at the demand's peak.
    nodes = d.raised.max if d.raised is not None else d.scale_max_nodes if p.instance_type else d.max_nodes
    gbps = max(c.planned_gbps_per_node for c in mine) * nodes
    stored = sum((c.gb_stored for c in mine), Fraction(0))
    if p.on_premises:
        return PoolStorage(rec.name, nodes, gbps, stored, {}, p.site, p.site_storage)
    return PoolStorage(rec.name, nodes, gbps, stored, {t: fsx_capacity_gib(gbps, stored, t) for t in FSX_LUSTRE_TIERS})


def site_storage(pools: list[PoolStorage]) -> list[SiteStorage]:
    """The on-prem pools grouped by site: one file system feeds every pool of its site, so their peaks add up."""
    by_site: dict[str, list[PoolStorage]] = {}
    for p in pools:
        if p.site is not None:
            by_site.setdefault(p.site, []).append(p)
    return [
        SiteStorage(
            site,
            tuple(p.pool for p in mine),
            sum((p.gbps for p in mine), Fraction(0)),
            sum((p.gb_stored for p in mine), Fraction(0)),
            mine[0].site_tiers,
        )
        for site, mine in by_site.items()
    ]
