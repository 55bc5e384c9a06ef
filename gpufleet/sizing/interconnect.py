"""Interconnect in the ranking: the ring a training run's gradients travel every step, and its slowest link.

- Data-parallel training (and ZeRO / FSDP sharding) all-reduces the gradients across all of a run's GPUs every
  step. `ring` gives the time of one all-reduce.
- The ring's slowest link: inside a node NVLink, else PCIe; across nodes the node's network, shared by its GPUs.
- The rule is not a guessed efficiency factor. The file's hours on a GPU model are taken to hold on the fastest
  ring the candidates offer for that model: the setup a benchmark is run on.
- A placement of the same GPU with a slower ring would take longer by a number of all-reduces the file does not
  give, so it is not ranked ("weaker interconnect", `judge`). The report shows both rings.
- Different GPU models are compared on the file's hours for each.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING

from gpufleet.sizing.arithmetic import ceil, q
from model import catalog

if TYPE_CHECKING:
    from gpufleet.sizing.placement import Choice, Placement
    from gpufleet.sizing.workloads import WorkloadClass

GRADIENT_BYTES_PER_PARAMETER = 2  # bf16 gradients (ZeRO, arXiv 1910.02054: 2Ψ)


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


@dataclass(frozen=True)
class Ring:
    """The all-reduce ring of one run on one placement: its slowest link and the time of one gradient all-reduce."""

    gpus: int
    nodes: int
    gb_per_s: Fraction | None  # one direction, per GPU, of the slowest link; None when a link's rate is unknown
    link: str  # what that link is, in words
    allreduce_s: Fraction | None  # one all-reduce of the run's gradients


def ring(c: WorkloadClass, p: Placement) -> Ring | None:
    """The ring of a run that all-reduces gradients (training or fine-tuning on more than one GPU), else None.

    NCCL's ring all-reduce moves 2(n-1)/n times the buffer through every GPU's link, so one takes

        t = 2(n-1)/n × S ÷ B        (NVIDIA/nccl-tests doc/PERFORMANCE.md, "AllReduce": busbw = algbw × 2(n-1)/n,
                                     https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md)

    S is the gradient bytes (GRADIENT_BYTES_PER_PARAMETER per parameter). B is the one-direction bandwidth per
    GPU of the ring's slowest link: nccl-tests' bus bandwidth "should reflect the speed of the hardware
    bottleneck", measured one direction. Across nodes that is the node's network (EC2 `network_performance` from
    the catalog, or the inventory's InfiniBand / RoCE ports on bare metal), in GB/s one way per GPU: Gbit/s ÷ 8 ÷
    GPUs per node.
    """
    n = c.gpus_per_run
    if not c.training or n < 2 or p.gpus_per_node == 0:
        return None
    nodes = ceil(Fraction(n, p.gpus_per_node))
    links: list[tuple[Fraction | None, str]] = []
    if min(n, p.gpus_per_node) > 1:
        links.append(intra_node_gb_per_s(p.gpu))
    if nodes > 1:
        if p.network_gbit_per_s is None:
            links.append((None, "node network rate unknown"))
        else:
            per_gpu = p.network_gbit_per_s / 8 / p.gpus_per_node
            gpus = f"{p.gpus_per_node} GPU{'s' if p.gpus_per_node > 1 else ''}"
            links.append((per_gpu, f"the node's {_num(p.network_gbit_per_s)} Gbit/s network for {gpus}"))
    unknown = next((link for bw, link in links if bw is None), None)
    if unknown is not None:
        return Ring(gpus=n, nodes=nodes, gb_per_s=None, link=unknown, allreduce_s=None)
    bw, link = min(((bw, link) for bw, link in links if bw is not None), key=lambda x: x[0])
    size_gb = q(c.parameters_billion) * GRADIENT_BYTES_PER_PARAMETER
    return Ring(gpus=n, nodes=nodes, gb_per_s=bw, link=link, allreduce_s=Fraction(2 * (n - 1), n) * size_gb / bw)


def judge(choices: list[Choice]) -> list[Choice]:
    """Mark placements whose ring is slower than the fastest ring of the same GPU model as weaker interconnect.

    The fastest ring is the setup a benchmark is run on: the run's GPUs in as few, as well-connected nodes as
    possible.

    Only placements that would otherwise be ranked ("ok") lose their rank; the reference is the fastest known ring
    among the timed choices of that GPU model (whatever their price or deadline: the hours are the same).
    """
    best: dict[str, Choice] = {}
    for ch in choices:
        if ch.ring is None or ch.ring.gb_per_s is None or ch.hours_per_run is None:
            continue
        key = ch.placement.gpu.id
        held = best.get(key)
        if held is None or (held.ring is not None and (held.ring.gb_per_s or 0) < ch.ring.gb_per_s):
            best[key] = ch
    out = []
    for ch in choices:
        ref = best.get(ch.placement.gpu.id)
        slower = (
            ch.status == "ok"
            and ref is not None
            and ref.ring is not None
            and ch.ring is not None
            and ch.ring.gb_per_s is not None
            and ch.ring.gb_per_s < (ref.ring.gb_per_s or 0)
        )
        out.append(replace(ch, status="weaker interconnect", slower_than=ref) if slower else ch)
    return out


def why_slower(ch: Choice) -> str:
    """Why a weaker-interconnect placement lost its rank, with both rings' figures."""
    ref = ch.slower_than
    if ref is None or ch.ring is None or ref.ring is None:
        return ""
    return f"{ch.placement.name} ({_ring_words(ch.ring)}) against {ref.placement.name} ({_ring_words(ref.ring)})"


def _ring_words(r: Ring) -> str:
    t = f"{_num(r.allreduce_s or 0, 3)} s" if r.allreduce_s is not None else "unknown"
    return f"{_num(r.gb_per_s or 0)} GB/s per GPU over {r.link}, {t} per gradient all-reduce"


def _num(x: Fraction | float | int, places: int = 2) -> str:
    s = f"{float(x):,.{places}f}"
    return s.rstrip("0").rstrip(".") if "." in s else s
