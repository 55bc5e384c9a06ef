"""The "Shared storage" section of `gpufleet size`: per training class the GB/s a node needs; per pool what feeds
its peak, following its site. AWS pools get the FSx for Lustre capacity per throughput tier; an on-prem site gets
its own declared tiers, each with its part, and what to add when no parallel file system carries the peak."""

from __future__ import annotations

from gpufleet.render.blocks import Block, Heading, Para, Table
from gpufleet.render.sizing_record import num
from gpufleet.sizing.arithmetic import q
from gpufleet.sizing.report import SizingReport
from gpufleet.sizing.storage import SiteStorage, class_storage, guidance_gbps, pool_storage, site_storage
from model.spec import NfsTier, OnPremS3Tier, ParallelFsTier, ScratchTier, StorageTier


def storage_blocks(r: SizingReport) -> list[Block]:
    classes = [c for cs in r.classes if (c := class_storage(cs)) is not None]
    pools = [p for rec in r.pools if (p := pool_storage(rec, classes)) is not None]
    if not pools:
        return []
    rows = [[c.name, num(c.average_gbps_per_node, 3), num(c.planned_gbps_per_node, 3), num(c.gb_stored)]
            for c in classes]  # fmt: skip
    blocks: list[Block] = [
        Heading(2, "Shared storage"),
        Table(["class", "average GB/s per node", "planned GB/s per node", "GB stored"], rows),
        Para(
            "Average: dataset × passes + checkpoint × checkpoints per run, over the run's hours and nodes. Planned: "
            f"at least {num(guidance_gbps())} GB/s per training node (the estate's FsxLustreTier "
            "min_gbps_per_training_node, the figure the FSx throughput warning and gpufleet verify use)."
        ),
    ]
    aws = [p for p in pools if p.site is None]
    if aws:
        tiers = sorted(aws[0].capacity_gib)
        blocks += [
            Table(
                ["pool", "nodes at peak", "GB/s", "GB stored", *[f"FSx GiB at {t} MB/s/TiB" for t in tiers]],
                [
                    [p.pool, str(p.nodes), num(p.gbps), num(p.gb_stored), *[f"{p.capacity_gib[t]:,}" for t in tiers]]
                    for p in aws
                ],
            ),
            Para(
                "FSx for Lustre PERSISTENT_2 delivers its tier in MB/s per TiB stored (FSx for Lustre User Guide, "
                "https://docs.aws.amazon.com/fsx/latest/LustreGuide/ssd-storage.html): capacity is the larger of "
                "GB/s × 1,000 ÷ tier and the data, in 1,200 GiB or 2,400 GiB steps (a storage tier's capacity_gib)."
            ),
        ]
    for s in site_storage(pools):
        blocks += _site(s)
    return blocks


def _site(s: SiteStorage) -> list[Block]:
    """An on-prem site's declared tiers and their part for its pools (FSx, EFS and S3 exist only on AWS)."""
    head = (
        f"On-prem site {s.site} (pools {', '.join(s.pools)}: {num(s.gbps)} GB/s at peak, {num(s.gb_stored)} GB "
        "stored) is fed by the tiers its stack file declares:"
    )
    rows = [[f"{t.name} ({t.kind})", _tier_use(t, s)] for t in s.tiers]
    return [Para(head), Table(["tier", "part"], rows or [["none", "the site declares no storage"]]), Para(_verdict(s))]


def _tier_use(t: StorageTier, s: SiteStorage) -> str:
    match t:
        case ParallelFsTier():
            have, need = q(t.throughput_gbps), num(s.gbps)
            if have >= s.gbps:
                return f"shared-hot, {num(have)} GB/s declared: carries the {need} GB/s at peak (dataset, checkpoints)"
            return f"shared-hot, {num(have)} GB/s declared: {num(s.gbps - have)} GB/s short of the {need} GB/s at peak"
        case NfsTier():
            return "shared-warm, no throughput declared: code, configs and results, not planned for the training data"
        case ScratchTier():
            return (
                f"node-local NVMe at {t.mount_path}: can stage the dataset on each node for its passes; not shared, so "
                "checkpoints need a shared tier"
            )
        case OnPremS3Tier():
            return f"object store: keeps the {num(s.gb_stored)} GB (dataset, checkpoints kept) at rest"
        case _:
            return "an AWS tier, which a bare-metal site cannot declare (model.spec.sites BAREMETAL_STORAGE)"


def _verdict(s: SiteStorage) -> str:
    if carried := s.carried_by:
        return (
            f"{', '.join(t.name for t in carried)} carries the pools' peak: a parallel-fs tier's throughput_gbps is "
            "the file system's aggregate, shared by every pool of the site."
        )
    if hot := s.shared_hot:
        best = max(hot, key=lambda t: t.throughput_gbps)
        return (
            f"No parallel-fs tier of site {s.site} carries the {num(s.gbps)} GB/s its pools need at peak ({best.name} "
            f"declares {num(best.throughput_gbps)} GB/s): the file system needs more throughput, or the runs must "
            "read less; throughput_gbps in the stack file is what it delivers."
        )
    return (
        f"Site {s.site} declares no parallel-fs tier for the {num(s.gbps)} GB/s its pools need at peak: add one to "
        f"the site's storage in the stack file (kind: parallel-fs, a throughput_gbps of at least {num(s.gbps)}; "
        f"model/spec/baremetal.py ParallelFsTier), the shared-hot tier gpufleet verify holds to "
        f"{num(guidance_gbps())} GB/s per training node."
    )
