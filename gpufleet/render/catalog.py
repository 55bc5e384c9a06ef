"""`gpufleet catalog show`: the GPU instance catalog as a table."""

from __future__ import annotations

from rich import box
from rich.table import Table

from model import catalog


def catalog_table(region: str) -> Table:
    """Every catalog instance type: GPU model and count, vCPUs, EFA interfaces, NVMe, $/h and $/GPU-h in `region`.

    No vertical rules and short headers (box.SIMPLE_HEAD, as the cost table): the longest instance and GPU names
    and every figure fit 80 columns, so nothing is cut with "…" on a standard terminal.
    """
    table = Table(
        title=f"GPU instance catalog (facts {catalog.instances_generated()}; NVMe in GB)",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )
    table.add_column("instance", no_wrap=True)
    table.add_column("GPU", no_wrap=True)
    for col in ("GPUs", "vCPU", "EFA", "NVMe", "$/h", "$/GPU-h"):
        table.add_column(col, justify="right", no_wrap=True)
    for it in catalog.instance_types().values():
        p = catalog.price(it.name, region)
        table.add_row(
            it.name,
            it.gpu.id,
            str(it.gpu_count),
            str(it.vcpus),
            str(it.max_efa_interfaces),
            str(it.local_nvme_gb),
            f"{p.usd_per_hour:.2f}" if p else "-",
            f"{p.usd_per_hour / it.gpu_count:.2f}" if p else "-",
        )
    return table


def price_note(region: str) -> str:
    """Where the table's $/h in `region` come from (printed under the table, so it wraps at the console's width)."""
    sources = {(p.date, p.source) for it in catalog.instance_types().values() if (p := catalog.price(it.name, region))}
    if not sources:
        return f"the catalog holds no {region} prices: every type is unpriced there ('-')"
    return "; ".join(f"$/h in {region}: Linux on-demand, {date}, {source}" for date, source in sorted(sources))
