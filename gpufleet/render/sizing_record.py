"""The decision record of `gpufleet size`: formula, units, inputs and assumptions, so a reader can redo the sums."""

from __future__ import annotations

from fractions import Fraction

from gpufleet.render.blocks import Block, Code, Heading, Para, Table
from gpufleet.sizing.arithmetic import class_utilisation
from gpufleet.sizing.interconnect import DEFAULT_STEP_SECONDS
from gpufleet.sizing.report import SizingReport


def num(x: Fraction | float | int, places: int = 2) -> str:
    """A number with at most `places` decimals and thousands separators (960, 13.33, 11.43)."""
    s = f"{float(x):,.{places}f}"
    return s.rstrip("0").rstrip(".") if "." in s else s


def decision_record(r: SizingReport) -> list[Block]:
    w = r.workloads
    a, p = w.assumptions, w.planning
    overdue = " (OVERDUE: review the figures before deciding)" if r.review_overdue else ""
    classes = [
        [
            c.name,
            c.kind,
            num(c.parameters_billion),
            c.precision,
            num(c.runs_per_period),
            str(c.gpus_per_run),
            num(c.hours_per_run),
            (c.measured_on or "any") + (f" (pool {c.measured_on_pool})" if c.measured_on_pool else ""),
            "yes" if c.gang else "no",
            "scenarios" if (u := class_utilisation(c, p)) is None else f"{num(u)} %",
            c.source or "(file)",
        ]
        for c in w.classes
    ]
    prices = sorted({ch.placement.price_basis for cs in r.classes for ch in cs.choices})
    return [
        Heading(2, "Decision record"),
        Heading(3, "Formula"),
        Code(
            "text",
            "demand [GPU-h / period]   = Σ_class runs_per_period × gpus_per_run × hours_per_run\n"
            "equivalents [GPU]         = demand ÷ (hours_per_device [h/period] × utilisation)\n"
            "                            (a class's own utilisation_pct, always-on serving 100 %, else each scenario)\n"
            "reserves [GPU]            = equivalents × (failure % + maintenance % + growth %), each shown\n"
            "installed range [GPU]     = Σ_pool max(ceil(equivalents + reserves), gang, largest run) per scenario\n"
            "gang minimum [GPU]        = max_class gpus_per_run × runs_started_together (gang classes)\n"
            "memory per run [GB]       = (params × B/param + KV cache) × (1 + margin %)\n"
            "GPUs for memory           = ceil(memory per run ÷ GB per GPU)\n"
            "cost per run [USD]        = billed GPUs × USD per GPU-hour × hours per run on that GPU\n"
            "all-reduce [s]            = 2(n-1)/n × params × 2 B ÷ busbw of the slowest link (NVLink / PCIe one\n"
            "                            direction; across nodes the published busbw, else the line rate)\n"
            "slower ring [h/run]       = steps × (all-reduce − fastest all-reduce of that GPU) ÷ 3600\n"
            "nodes                     = ceil(GPUs ÷ GPUs per node)",
        ),
        Heading(3, "Units"),
        Para(
            "GPU-hours per planning period; GPUs; decimal GB (10^9 bytes; catalog MiB × 1.048576 ÷ 1000); "
            "parameters in billions; USD at the catalog's on-demand price (per hour, per run, per month of "
            "730 hours)."
        ),
        Heading(3, "Inputs"),
        Table(
            ["period", "hours per device", "utilisation scenarios", "failure reserve", "maintenance", "growth"],
            [
                [
                    p.period,
                    num(p.hours_per_device),
                    ", ".join(f"{num(u)} %" for u in p.utilisation_pct),
                    f"{num(p.failure_reserve_pct)} %",
                    f"{num(p.maintenance_pct)} %",
                    f"{num(p.growth_pct)} %",
                ]
            ],
        ),
        Table(
            [
                "class",
                "kind",
                "params (B)",
                "precision",
                "runs",
                "GPUs/run",
                "h/run",
                "measured on",
                "gang",
                "utilisation",
                "source",
            ],
            classes,
        ),
        Heading(3, "Assumptions"),
        Para(f"Owner: {a.owner}. Source: {a.source.rstrip('.')}. Review by {a.review_date.isoformat()}{overdue}."),
        Para(
            "- Training and full fine-tuning need 16 B/param (bf16 weights and grads, fp32 master weights, Adam m "
            "and v; ZeRO paper, EleutherAI Transformer Math 101) before activations; gpufleet adds "
            "a 20 % margin for activations unless a class sets memory_margin_pct (no published figure).\n"
            "- Inference and interactive classes need the weights at their precision plus the KV cache, + 20 % "
            "(Accelerate's model-size estimator docs).\n"
            "- A run's memory is sharded evenly over its GPUs (ZeRO-3/FSDP, tensor parallel); inference and "
            "interactive runs stay within one node; runs spanning nodes need EFA or a fabric.\n"
            "- Hours per run on a GPU model come from the file (measured_on, hours_on, speed_vs_measured). Without "
            "measured_on, training, batch and online-inference classes are not ranked across GPU models (a "
            "service's replicas hold on the GPU they were sized on); notebooks last as long as they are open on "
            "any GPU. The catalog holds no throughput figures.\n"
            "- Latency objectives are recorded, not checked: no offline model predicts latency.\n"
            "- A run smaller than a node pays for its own GPUs (runs share nodes); a larger run pays whole nodes.\n"
            "- Training runs on more than one GPU all-reduce bf16 gradients (2 B/param) every step over a ring whose "
            "slowest link sets the pace: NVLink or PCIe inside a node or NVLink domain (catalog gpus.yaml); across "
            "nodes the nccl-tests busbw AWS publishes for the type (catalog nccl_busbw.yaml, a 2-node run, taken "
            "to hold at any node count), else the line rate (catalog network_performance; inventory InfiniBand / "
            "RoCE ports). The file's hours on a GPU model hold on that model's fastest ring among the catalog's "
            "and the stack's; a slower ring adds steps × the extra all-reduce time (steps_per_run, else gpufleet's "
            f"default of one step per {DEFAULT_STEP_SECONDS} s of the run, no published figure), assuming no "
            "overlap with compute. Both sections of the report penalise against that same set.\n"
            "- Owned servers are used first (their amortised cost is paid whether they run or idle; with no cost "
            "declared, $0 marginal), while they hold the classes together at the lowest-utilisation scenario, "
            "gang included; a class beyond goes, whole, to its next-ranked placement.\n"
            "- A steady cloud pool of the stack (not burst) takes classes of its role before a new pool of its "
            "instance type, at the pool's price: its min and desired are raised to an always-on floor above them, "
            "its max to the peak with spares (a pool on a reservation stays within it).\n"
            "- Reserves are percentages of the installed equivalent, added, not compounded, and not folded "
            "into utilisation.\n"
            f"- Prices: {'; '.join(prices) or 'none'} (source: model/catalog/aws_prices.json)."
        ),
    ]
