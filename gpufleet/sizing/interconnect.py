"""Interconnect in the ranking: the ring a training run's gradients travel every step, and the time it costs.

- Data-parallel training (and ZeRO / FSDP) all-reduces a run's gradients every step; `ring` times one
  all-reduce over the ring's slowest link.
- Inside an NVLink domain the link is NVLink (else PCIe). Across domains it is the node network's bus bandwidth
  (`catalog.node_busbw`, which `gpufleet verify` marks too): AWS's published nccl-tests figure, else the line
  rate (scaled as its GPU generation's published run, for an NVLink node).
- The file's hours on a GPU model hold on the fastest ring the candidates offer for that model. A slower ring of
  the same GPU is not excluded: it takes longer by the extra all-reduce time of every step (`penalise`).
- Steps per run: the class's `steps_per_run`, else one per DEFAULT_STEP_SECONDS of the run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING

from gpufleet.sizing.arithmetic import billed_gpus, ceil, q
from model import catalog

if TYPE_CHECKING:
    from gpufleet.sizing.placement import Choice, Placement
    from gpufleet.sizing.workloads import WorkloadClass

GRADIENT_BYTES_PER_PARAMETER = 2  # bf16 gradients (ZeRO, arXiv 1910.02054: 2Ψ)
# gpufleet's default when a class gives no steps_per_run: one optimizer step per 10 s of the measured run. No
# published figure covers every model; the report prints the steps it used.
DEFAULT_STEP_SECONDS = 10


def instance_network_gbit_per_s(instance_type: str) -> Fraction | None:
    return catalog.instance_type(instance_type).network_gbit_per_s


def intra_node_gb_per_s(gpu: catalog.GpuModel) -> tuple[Fraction | None, str]:
    """One-direction GB/s per GPU between GPUs of one node, and the link: NVLink, else PCIe. The catalog
    (model/catalog/gpus.yaml) gives bidirectional figures, so this is half of one."""
    if gpu.nvlink_gb_per_s:
        return Fraction(gpu.nvlink_gb_per_s, 2), "NVLink"
    if gpu.pcie_gb_per_s:
        return Fraction(gpu.pcie_gb_per_s, 2), "PCIe"
    return None, "unknown"


def local_gpus(p: Placement) -> int:
    """GPUs a run reaches without the node's network: the node, or the NVLink domain when it spans nodes (NVL72)."""
    domain = p.gpu.nvlink_domain_gpus if p.gpus_per_node > 1 else 1
    return max(p.gpus_per_node, domain)


@dataclass(frozen=True)
class Ring:
    """The all-reduce ring of one run on one placement: its slowest link and the time of one gradient all-reduce."""

    gpus: int
    nodes: int
    gb_per_s: Fraction | None  # bus bandwidth of the slowest link; None when a link's rate is unknown
    link: str  # what that link is, in words
    allreduce_s: Fraction | None  # one all-reduce of the run's gradients


def allreduce_seconds(gpus: int, size_gb: Fraction, busbw_gb_per_s: Fraction) -> Fraction:
    """NCCL's ring all-reduce time: busbw = algbw × 2(n-1)/n, so t = 2(n-1)/n × S ÷ busbw (NVIDIA/nccl-tests
    doc/PERFORMANCE.md, "AllReduce", https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md)."""
    return Fraction(2 * (gpus - 1), gpus) * size_gb / busbw_gb_per_s


def ring(c: WorkloadClass, p: Placement) -> Ring | None:
    """The ring of a run that all-reduces gradients (training or fine-tuning on more than one GPU), else None.

    S is the gradient bytes (GRADIENT_BYTES_PER_PARAMETER per parameter). The bus bandwidth inside a node is one
    direction of NVLink (or PCIe) per GPU; across NVLink domains it is the node network's busbw.
    """
    n = c.gpus_per_run
    if not c.training or n < 2 or p.gpus_per_node == 0:
        return None
    nodes = ceil(Fraction(n, p.gpus_per_node))
    links: list[tuple[Fraction | None, str]] = []
    if min(n, p.gpus_per_node) > 1:
        links.append(intra_node_gb_per_s(p.gpu))
    if n > local_gpus(p):
        if p.network_gbit_per_s is None:
            links.append((None, "node network rate unknown"))
        else:
            net = catalog.node_busbw(p.instance_type, p.network_gbit_per_s, p.gpu, p.gpus_per_node)
            words = f"the node's {_num(p.network_gbit_per_s)} Gbit/s network"
            if net.measured:  # a run across these very nodes, NVLink included: the ring's own figure
                links = [(net.gb_per_s, f"{words} (published busbw)")]
            else:
                basis = "scaled line rate" if "×" in net.source else "line rate"
                links.append((net.gb_per_s, f"{words} ({basis})"))
    unknown = next((link for bw, link in links if bw is None), None)
    if unknown is not None:
        return Ring(gpus=n, nodes=nodes, gb_per_s=None, link=unknown, allreduce_s=None)
    bw, link = min(((bw, link) for bw, link in links if bw is not None), key=lambda x: x[0])
    size_gb = q(c.parameters_billion) * GRADIENT_BYTES_PER_PARAMETER
    return Ring(gpus=n, nodes=nodes, gb_per_s=bw, link=link, allreduce_s=allreduce_seconds(n, size_gb, bw))


def steps_per_run(c: WorkloadClass) -> tuple[Fraction, str]:
    """Optimizer steps of one run, and where the figure comes from."""
    if c.steps_per_run is not None:
        return Fraction(c.steps_per_run), "steps_per_run in the workload file"
    return q(
        c.hours_per_run
    ) * 3600 / DEFAULT_STEP_SECONDS, f"default: one step per {DEFAULT_STEP_SECONDS} s of the run"


def penalise(c: WorkloadClass, choices: list[Choice], measured: Choice | None = None) -> list[Choice]:
    """A placement whose ring is slower than the ring the file's hours hold on, for the same GPU model, runs longer.

    The hours hold on `measured` (the pool named by measured_on_pool) for its GPU model; otherwise on the fastest
    ring the candidates offer (a benchmark runs the GPUs in as few, as well-connected nodes as possible). Each step
    of a slower ring spends the difference of the two all-reduce times more, so its run takes steps × Δt longer,
    priced at its own rate and judged against the deadline again. A faster ring than the measured one is not
    credited: the file says nothing about how the run scales.
    """
    best: dict[str, Choice] = {}
    for ch in choices:
        if ch.ring is None or ch.ring.allreduce_s is None or ch.hours_per_run is None:
            continue
        held = best.get(ch.placement.gpu.id)
        if held is None or (held.ring is not None and ch.ring.allreduce_s < (held.ring.allreduce_s or 0)):
            best[ch.placement.gpu.id] = ch
    if measured is not None and measured.ring is not None and measured.ring.allreduce_s is not None:
        best[measured.placement.gpu.id] = measured
    steps, _ = steps_per_run(c)
    out = []
    for ch in choices:
        ref = best.get(ch.placement.gpu.id)
        if ref is None or ch.ring is None or ch.ring.allreduce_s is None or ch.hours_per_run is None:
            out.append(ch)
            continue
        assert ref.ring is not None and ref.ring.allreduce_s is not None
        extra = steps * (ch.ring.allreduce_s - ref.ring.allreduce_s) / 3600
        if extra <= 0:
            out.append(ch)
            continue
        hours = ch.hours_per_run + extra
        p = ch.placement
        cost = (
            None
            if p.usd_per_gpu_hour is None
            else billed_gpus(c.gpus_per_run, p.gpus_per_node) * p.usd_per_gpu_hour * hours
        )
        status = ch.status
        if status == "ok" and c.deadline_hours is not None and hours > q(c.deadline_hours):
            status = "misses deadline"
        out.append(
            replace(ch, hours_per_run=hours, cost_per_run=cost, status=status, penalty_hours=extra, slower_than=ref)
        )
    return out


def why_slower(ch: Choice) -> str:
    """Why a placement's run takes longer than the file's hours: both rings' figures and the hours added."""
    ref = ch.slower_than
    if ref is None or ch.ring is None or ref.ring is None:
        return ""
    return (
        f"{ch.placement.name} ({_ring_words(ch.ring)}) against {ref.placement.name} ({_ring_words(ref.ring)}): "
        f"+{_num(ch.penalty_hours)} h per run"
    )


def _ring_words(r: Ring) -> str:
    t = f"{_num(r.allreduce_s or 0, 3)} s" if r.allreduce_s is not None else "unknown"
    return f"{_num(r.gb_per_s or 0)} GB/s over {r.link}, {t} per gradient all-reduce"


def _num(x: Fraction | float | int, places: int = 2) -> str:
    s = f"{float(x):,.{places}f}"
    return s.rstrip("0").rstrip(".") if "." in s else s
