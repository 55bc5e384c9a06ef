"""`gpufleet size`: the sizing report as text (terminal) and Markdown (a decision record for a pull request).

Both are built from one list of blocks (gpufleet/render/blocks.py), so both say the same thing.
"""

from __future__ import annotations

import yaml

from gpufleet.render.blocks import Block, Code, Heading, Para, Table, blocks_markdown, blocks_text
from gpufleet.render.common import usd
from gpufleet.render.sizing_headline import headline, scaling_words, work_cost
from gpufleet.render.sizing_record import decision_record, num
from gpufleet.render.sizing_storage import storage_blocks
from gpufleet.sizing.arithmetic import class_utilisation
from gpufleet.sizing.interconnect import GRADIENT_BYTES_PER_PARAMETER, steps_per_run, why_slower
from gpufleet.sizing.placement import Choice, ClassSizing, Placement
from gpufleet.sizing.pools import Demand, PoolRecommendation, StackComparison
from gpufleet.sizing.report import SizingReport
from gpufleet.sizing.workloads import PERIOD_HOURS

SHOWN_CHOICES = 6


# ----------------------------------------------------------------------------------------------- blocks


def _portfolio(r: SizingReport) -> list[Block]:
    p = r.workloads.planning
    lo, hi = r.scenarios[-1], r.scenarios[0]
    rows = [
        [
            f"{num(s.utilisation_pct)} %",
            num(s.equivalents),
            str(s.equivalents_rounded),
            num(s.failure_reserve),
            num(s.maintenance),
            num(s.growth),
            num(s.total),
            str(s.rounded),
            str(pools),
        ]
        for s, pools in zip(r.scenarios, r.installed_per_scenario, strict=True)
    ]
    gang = (
        f"Gang minimum: {r.gang_gpus} compatible GPUs must be free at once (class {r.gang_class}), whatever the "
        "weekly totals say."
        if r.gang_class
        else "Gang minimum: none (no class needs its runs to start together)."
    )
    span = f"{lo.rounded}" if lo.rounded == hi.rounded else f"{lo.rounded}-{hi.rounded}"
    ilo, ihi = r.installed_range
    nlo, nhi = r.installed_nodes_gpus
    targeted = [f"{c.name} at {num(u)} %" for c in r.workloads.classes if (u := class_utilisation(c, p)) is not None]
    own = f" Classes at their own utilisation in every scenario: {', '.join(targeted)}." if targeted else ""
    return [
        Heading(2, "Portfolio"),
        Para(
            f"Demand: {num(r.total_gpu_hours)} GPU-hours per {p.period} (hours per run on the chosen placement; "
            f"reference hours for a class not placed). "
            f"Hours per device: {num(p.hours_per_device)} of the {PERIOD_HOURS[p.period]} in a {p.period}.{own}"
        ),
        Table(
            [
                "utilisation",
                "GPU equivalents",
                "rounded",
                "+ failure",
                "+ maintenance",
                "+ growth",
                "total",
                "total rounded",
                "pools added up",
            ],
            rows,
        ),
        Para(
            (
                f"Installed range: {ilo}-{ihi} GPUs, the recommended pools added up (each rounded up on its own and "
                f"at least its gang and largest run; {nlo}-{nhi} GPUs in whole nodes). "
                if r.pools
                else "No pool is recommended, so nothing is installed. "
            )
            + f"Pooled, the scenarios give {span} "
            f"({num(lo.equivalents)}-{num(hi.equivalents)} before reserves of {num(p.failure_reserve_pct)} % "
            f"failure, {num(p.maintenance_pct)} % maintenance, {num(p.growth_pct)} % growth)."
        ),
        Para(gang),
    ]


def gpu_words(p: Placement) -> str:
    """The GPU model, or its MIG slice (a MIG pool's GPUs, per node and capacity count slices)."""
    return f"{p.gpu.id} MIG {p.mig_profile} slice" if p.mig_profile else p.gpu.id


def _choice_row(i: int, ch: Choice) -> list[str]:
    p = ch.placement
    return [
        str(i) if ch.status == "ok" else "-",
        p.name,
        gpu_words(p),
        str(p.gpus_per_node),
        str(ch.gpus_needed),
        str(ch.nodes_per_run),
        "no timing" if ch.hours_per_run is None else num(ch.hours_per_run),
        usd(ch.cost_per_run) if ch.hours_per_run is not None else "-",
        _ring_cell(ch),
        ch.status,
    ]


def _ring_cell(ch: Choice) -> str:
    """The gradient ring's slowest link per GPU (one direction) and one all-reduce's time, or '-' (no ring)."""
    r = ch.ring
    if r is None:
        return "-"
    if r.gb_per_s is None or r.allreduce_s is None:
        return "unknown"
    link = "NVLink" if r.link == "NVLink" else "PCIe" if r.link == "PCIe" else "network"
    return f"{num(r.gb_per_s)} {link}, {num(r.allreduce_s, 3)} s"


def _class(cs: ClassSizing, region: str) -> list[Block]:
    c, n = cs.cls, cs.need
    objective = (
        f"deadline {num(c.deadline_hours)} h" if c.deadline_hours else f"p95 latency {num(c.latency_p95_ms or 0)} ms"
    )
    if c.latency_p95_ms:
        objective += " (not checkable offline: benchmark the chosen GPU)"
    gang = f"gang of {c.gang_gpus} GPUs" if c.gang else "no gang"
    kv = f" + KV cache {num(n.kv_cache_gb)} GB" if n.kv_cache_gb else ""
    if c.throughput is not None:
        t = c.throughput
        gang += (
            f"; replicas from throughput: {num(t.requests_per_second)} requests/s × {num(t.tokens_per_request)} "
            f"tokens ÷ {num(t.tokens_per_second_per_replica)} tokens/s per replica = {t.replicas} ({t.source})"
        )
        if t.steady_requests_per_second is not None:
            gang += f"; {t.steady_replicas} always on at the steady {num(t.steady_requests_per_second)} requests/s"
    blocks: list[Block] = [
        Heading(3, f"{c.name} ({c.kind})"),
        Para(
            f"Demand: {num(c.runs_per_period)} runs × {c.gpus_per_run} GPU{'s' if c.gpus_per_run > 1 else ''} × "
            f"{num(c.hours_per_run)} h = "
            f"{num(cs.gpu_hours)} GPU-hours; {objective}; {gang}."
        ),
        Para(
            f"Memory: {num(c.parameters_billion)}B params × {num(n.bytes_per_parameter)} B = {num(n.states_gb)} GB "
            f"({n.basis}){kv}, + {num(n.margin_pct)} % margin ({n.margin_basis}) = {num(n.required_gb)} GB per run, "
            "sharded evenly over its GPUs."
        ),
        Table(
            ["GPU", "GB per GPU", "fits one GPU", "GPUs needed", f"within {c.gpus_per_run} per run"],
            [
                [
                    f.gpu.id,
                    num(f.gpu_memory_gb, 1),
                    "yes" if f.fits_one_gpu else "no",
                    str(f.gpus_needed),
                    "yes" if f.gpus_needed <= c.gpus_per_run else "no",
                ]
                for f in cs.fits
            ],
        ),
    ]
    if not cs.choices:
        blocks.append(Para("No catalog placement fits this class within its GPUs per run."))
        return blocks
    ok = [ch for ch in cs.choices if ch.status == "ok"]
    late = [ch for ch in cs.choices if ch.status == "misses deadline"]
    shown = ok[:SHOWN_CHOICES] + late[:3]
    slower = [ch for ch in shown if ch.penalty_hours]
    blocks.append(
        Table(
            [
                "rank",
                "placement",
                "GPU",
                "GPUs/node",
                "GPUs for memory",
                "nodes/run",
                "h/run",
                "cost/run",
                "ring GB/s, all-reduce",
                "status",
            ],
            [_choice_row(i + 1, ch) for i, ch in enumerate(ok[:SHOWN_CHOICES])]
            + [_choice_row(0, ch) for ch in late[:3]],
        )
    )
    chosen = cs.chosen
    verdict = _chosen_words(chosen)
    if cs.refused:
        verdict += f" Not ranked: {cs.refused}."
    if cs.too_small:
        verdict += f" Not placed on a stack pool too small for one run at its max: {'; '.join(cs.too_small)}."
    if cs.overflow:
        verdict += f" Overflows to the next-ranked placement: {cs.overflow}."
    if chosen is not None and chosen.ring is not None:
        verdict += f" {_ring_basis(cs, chosen)}"
    if slower:
        steps, basis = steps_per_run(cs.cls)
        verdict += (
            " A slower gradient ring than the same GPU's fastest (where the file's hours hold) adds its extra "
            f"all-reduce time to each of {num(steps)} steps ({basis}): {'; '.join(why_slower(ch) for ch in slower[:3])}."
        )
    hidden = len(ok) + len(late) - len(shown)
    if hidden:
        verdict += f" {hidden} more placements that fit cost more (--format json lists every one)."
    untimed = sorted({ch.placement.gpu.id for ch in cs.choices if ch.status == "no timing"})
    if untimed:
        # A service's replicas run the whole period on any GPU: what differs is the speed, not the hours.
        add = "speed_vs_measured" if c.kind == "online-inference" else "hours_on"
        verdict += f" Fit but not ranked, no timing in the file (add {add}): {', '.join(untimed)}."
    unpriced = sorted(ch.placement.name for ch in cs.choices if ch.status == "unpriced")
    if unpriced:
        verdict += f" Fit but unpriced in {region}: {', '.join(unpriced)}."
    blocks.append(Para(verdict))
    return blocks


def _chosen_words(chosen: Choice | None) -> str:
    """What is used or bought for the class, and why: owned servers with room first, else the cheapest."""
    if chosen is None:
        return "Chosen: none; no priced placement fits and meets the objective."
    p = chosen.placement
    at = f"{p.name} ({gpu_words(p)}) at {usd(chosen.cost_per_run)} per run"
    if chosen.owned:
        return (
            f"Uses owned servers: {at} ({p.price_basis}), a cost paid whether the servers run or idle, so it buys "
            "nothing new."
        )
    if p.scale is not None:
        return (
            f"Uses existing pool {at} ({p.price_basis}): a pool the stack has goes before a new pool of "
            f"{p.instance_type}; Recommended node pools gives its scaling."
        )
    return f"Buys {at}: the cheapest placement that fits and meets the objective."


def _ring_basis(cs: ClassSizing, chosen: Choice) -> str:
    """Which assumption decided the pick for a run that all-reduces gradients: the ring it gets and the hours' basis."""
    r = chosen.ring
    assert r is not None
    grads = num(cs.cls.parameters_billion * GRADIENT_BYTES_PER_PARAMETER)
    ring = (
        f"Its gradient ring: {num(r.gb_per_s)} GB/s bus bandwidth over {r.link}, {num(r.allreduce_s, 3)} s per "
        f"all-reduce of {grads} GB (2(n-1)/n × bytes ÷ slowest link's busbw, nccl-tests PERFORMANCE.md)."
        if r.gb_per_s is not None and r.allreduce_s is not None
        else f"Its gradient ring cannot be judged: {r.link}."
    )
    return ring


def _demand_cells(d: Demand) -> list[str]:
    return [num(d.gpu_hours), f"{d.min_gpus}-{d.max_gpus}", str(d.gang_gpus or "-")]


def _pools(r: SizingReport) -> list[Block]:
    blocks: list[Block] = [Heading(2, "Recommended node pools")]
    if not r.pools:
        return [*blocks, Para("None: no class has a priced placement that fits and meets its objective.")]
    rows = []
    for rec in r.pools:
        d, to = rec.demand, rec.demand.raised
        cloud = d.placement.instance_type is not None
        where = f"{d.placement.instance_type} (existing, {d.placement.site})" if to else d.placement.name
        nodes = f"{d.scale_min_nodes} / {d.scale_desired_nodes} / {d.scale_max_nodes}" if cloud else "-"
        rows.append(
            [
                rec.name,
                rec.role,
                where if cloud else f"{d.placement.name} (on-prem, {d.placement.site})",
                ", ".join(d.classes),
                *_demand_cells(d),
                f"{to.min} / {to.desired} / {to.max}" if to else nodes,
                str(d.spare_nodes or "-") if cloud else "-",
                f"{d.max_nodes} servers" if not cloud else "cluster-autoscaler",
                work_cost(d),
            ]
        )
    plan = r.workloads.planning
    blocks += [
        Table(
            [
                "pool",
                "role",
                "placement",
                "classes",
                "GPU-hours",
                "GPUs (min-max)",
                "gang",
                "nodes min / desired / max",
                "spares",
                "scaled by",
                f"work $/{plan.period}",
            ],
            rows,
        ),
        Para(
            "GPUs: the highest- to the lowest-utilisation scenario with reserves, at least the gang minimum and "
            "largest run. A cloud pool scales with demand: min is the always-on serving floor (0 when nothing is "
            "always on), desired the same floor (the node group starts there; no node idles before work arrives), max the peak in whole nodes plus "
            f"{plan.spare_nodes} spare node{'s' if plan.spare_nodes != 1 else ''} on pools of more than "
            f"{plan.spares_above_nodes} nodes (planning.spare_nodes, spares_above_nodes); cluster-autoscaler adds nodes "
            "only for pending pods. A pool the stack has keeps its scaling, raised where its demand needs more. "
            "Work $: each class's runs × its cost per run (whole "
            "nodes billed for a run across nodes), and an always-on serving floor's whole nodes for the hours they "
            "run: what the pool costs when it scales to its work."
        ),
    ]
    for rec in r.pools:
        p = rec.demand.placement
        if p.scale is not None:
            blocks.append(
                Para(
                    f"Use existing pool {p.name} ({scaling_words(rec.demand)}), not a new pool of {p.instance_type}: "
                    f"its nodes at {p.price_basis}, for {', '.join(rec.demand.classes)}."
                )
            )
        if p.instance_type is None and p.capacity_gpus is not None and rec.demand.max_gpus > p.capacity_gpus:
            blocks.append(
                Para(
                    f"On-prem pool {p.name} holds {p.capacity_gpus} GPUs; up to {rec.demand.max_gpus} are needed "
                    "there: buy servers or move classes to the cloud."
                )
            )
    snippet = node_pool_snippet(r.pools)
    if snippet:
        blocks += [Para("Stack-file snippet (node_pools entries of an aws site):"), Code("yaml", snippet)]
    if r.unplaced:
        blocks.append(Para(f"Not placed (no priced placement meets the objective): {', '.join(r.unplaced)}."))
    return blocks


def _comparison(c: StackComparison) -> list[Block]:
    rows = []
    for v in c.pools:
        p, d = v.placement, v.demand
        rows.append(
            [
                p.name,
                gpu_words(p),
                str(p.capacity_gpus),
                ", ".join(d.classes) or "-",
                *_demand_cells(d),
                v.verdict,
                str(v.excess_gpus or "-"),
                f"{usd(v.excess_expected_usd_per_month)} / {usd(v.excess_usd_per_month)}" if v.excess_gpus else "-",
            ]
        )
    blocks: list[Block] = [
        Heading(2, f"Stack {c.stack}: {c.verdict}"),
        Para(
            "Each class goes to the cheapest pool of the stack it fits on and meets its objective on (pools of the "
            "same role first); each pool's capacity at max size is judged against the range of what it hosts. "
            "Excess per month: expected is the excess nodes the pool runs whatever the demand (an autoscaled pool's "
            "min size, every owned server); the ceiling is every excess node running all 730 h."
        ),
        Table(
            [
                "pool",
                "GPU",
                "GPUs at max",
                "classes",
                "GPU-hours",
                "needs (min-max)",
                "gang",
                "verdict",
                "excess GPUs",
                "excess $/month expected / ceiling",
            ],
            rows,
        ),
    ]
    for v in c.pools:
        if v.role_mismatch:
            blocks.append(
                Para(f"Pool {v.placement.name} has role {v.placement.role} but hosts {', '.join(v.role_mismatch)}.")
            )
    for name, why in c.unplaced:
        blocks.append(Para(f"Class {name} fits no pool of the stack: {'; '.join(why)}."))
    for name, slower in c.passed_over:
        blocks.append(Para(f"Class {name} not placed on a cheaper pool with a slower gradient ring: {slower}."))
    for pool, reason in c.skipped:
        blocks.append(Para(f"Pool {pool} not compared: {reason}."))
    return blocks


def blocks(r: SizingReport) -> list[Block]:
    head = f"gpufleet size: {r.source}"
    out: list[Block] = [Heading(1, head)]
    if r.comparison is not None:
        out.append(Para(f"Verdict for stack {r.comparison.stack}: {r.comparison.verdict}."))
    if r.review_overdue:
        out.append(Para(f"The figures were due for review on {r.workloads.assumptions.review_date.isoformat()}."))
    out += [Para(n) for n in r.notes]
    out.append(Para(headline(r)))
    out += _portfolio(r)
    out.append(Heading(2, f"Classes (prices: {r.region})"))
    for cs in r.classes:
        out += _class(cs, r.region)
    out += _pools(r)
    out += storage_blocks(r)
    if r.comparison is not None:
        out += _comparison(r.comparison)
    out += decision_record(r)
    return out


# -------------------------------------------------------------------------------------------- renderers


def node_pool_snippet(pools: list[PoolRecommendation]) -> str:
    """AWS recommendations as stack-file `node_pools:` entries (the schema of model.spec.AwsNodePool)."""
    lines = ["node_pools:"]
    for r in pools:
        d, entry = r.demand, r.stack_entry()
        if entry is None:  # owned, or a pool the stack has
            continue
        spares = f", + {d.spare_nodes} spare node{'s' if d.spare_nodes > 1 else ''}" if d.spare_nodes else ""
        lines.append(f"  # {', '.join(d.classes)}: {d.min_gpus}-{d.max_gpus} GPUs{spares}")
        floor = "the always-on serving floor" if d.scale_min_nodes else "zero"
        lines.append(f"  # cluster-autoscaler scales it from {floor} to max for pending pods")
        if d.placement.spot:
            lines.append("  # spot: a node can be reclaimed at two minutes' notice; its runs resume or are retried")
        if d.multi_node_gang:  # any run that spans nodes, gang or not
            lines.append("  # runs span nodes (all their GPUs at once): set `fabric:` to an EFA fabric of the site")
        body = yaml.safe_dump([entry], sort_keys=False, default_flow_style=None).rstrip()
        lines += [f"  {line}" for line in body.splitlines()]
    return "\n".join(lines) + "\n" if len(lines) > 1 else ""


def sizing_markdown(r: SizingReport) -> str:
    return blocks_markdown(blocks(r))


def sizing_text(r: SizingReport) -> str:
    return blocks_text(blocks(r))
