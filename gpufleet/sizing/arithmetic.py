"""Sizing arithmetic on exact fractions: demand, installed equivalents, reserves, gang minimum, memory fit.

In the order it should come first:
1. Demand: GPU-hours per period = Σ over workload classes of runs × GPUs per run × hours per run.
2. Installed-equivalent GPUs = GPU-hours ÷ (hours per device in the period × schedulable utilisation), one
   figure per utilisation scenario: a range, never one point.
3. Failure reserve, maintenance and growth: separate percentages on top of each scenario, never hidden in the
   utilisation factor.
4. Gang constraints: runs that must start together need that many compatible GPUs at once, whatever the
   weekly totals say. Node pools round up to whole nodes.
5. Memory fit (`memory_need`).

Exact fractions take inputs at their decimal value, so rounding up is exact: a rounded figure never falls short
of the demand it was rounded from.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from model import catalog

if TYPE_CHECKING:
    from gpufleet.sizing.workloads import Planning, WorkloadClass

# Mixed-precision Adam, before activations: bf16/fp16 weights 2 B + grads 2 B + fp32 master weights 4 B
# + Adam m 4 B + Adam v 4 B. The ZeRO paper, https://arxiv.org/abs/1910.02054: 2Ψ + 2Ψ + 12Ψ;
# EleutherAI, "Transformer Math 101", https://blog.eleuther.ai/transformer-math/.
TRAINING_STATE_BYTES_PER_PARAMETER = 16
# Accelerate's model size estimator docs (citing EleutherAI) add "up to an additional 20%" over load size
# (https://huggingface.co/docs/accelerate/usage_guides/model_size_estimator).
INFERENCE_MARGIN_PCT = 20
# No published figure covers activations, temporary buffers and fragmentation; this default is gpufleet's own
# and is printed as an assumption in every decision record. Override it per class with memory_margin_pct.
TRAINING_MARGIN_PCT = 20
BYTES_PER_PARAMETER: dict[str, Fraction] = {
    "fp32": Fraction(4),
    "bf16": Fraction(2),
    "fp16": Fraction(2),
    "fp8": Fraction(1),
    "int8": Fraction(1),
    "int4": Fraction(1, 2),
}


def q(x: float | int | Fraction) -> Fraction:
    """A number as an exact fraction of its decimal value (0.7 -> 7/10, not the binary float)."""
    return x if isinstance(x, Fraction) else Fraction(str(x))


def ceil(x: Fraction) -> int:
    return math.ceil(x)


def installed_equivalents(gpu_hours: Fraction, hours_per_device: Fraction, utilisation_pct: Fraction) -> Fraction:
    """GPU-hours ÷ (hours per device in the period × utilisation)."""
    return gpu_hours * 100 / (hours_per_device * utilisation_pct)


@dataclass(frozen=True)
class Scenario:
    """The installed equivalent at one utilisation, with each reserve on top, in GPUs."""

    utilisation_pct: Fraction
    equivalents: Fraction
    failure_reserve: Fraction
    maintenance: Fraction
    growth: Fraction

    @property
    def equivalents_rounded(self) -> int:
        return ceil(self.equivalents)

    @property
    def total(self) -> Fraction:
        return self.equivalents + self.failure_reserve + self.maintenance + self.growth

    @property
    def rounded(self) -> int:
        return ceil(self.total)


def class_utilisation(c: WorkloadClass, planning: Planning) -> Fraction | None:
    """The utilisation a class is sized at when it has its own target, or None to use the planning scenarios.

    A class's own `utilisation_pct` wins. Always-on serving (online inference whose runs last at least the hours a
    device works in the period) defaults to 100 %: its installed GPUs are its replicas × GPUs per replica, which
    a utilisation scenario below 100 % would inflate for GPUs that are busy by definition.
    """
    if c.utilisation_pct is not None:
        return q(c.utilisation_pct)
    if c.kind == "online-inference" and q(c.hours_per_run) >= q(planning.hours_per_device):
        return Fraction(100)
    return None


def scenarios(
    gpu_hours: Fraction, planning: Planning, targeted: Iterable[tuple[Fraction, Fraction]] = ()
) -> list[Scenario]:
    """One scenario per utilisation, lowest utilisation (most GPUs) first. Reserves add to the equivalent.

    `gpu_hours` follow the planning scenarios; each (GPU-hours, utilisation %) of `targeted` is demand with its
    own target (class_utilisation), the same in every scenario.
    """
    hpd = q(planning.hours_per_device)
    fixed = sum((installed_equivalents(h, hpd, u) for h, u in targeted), Fraction(0))
    out = []
    for u in sorted(q(x) for x in planning.utilisation_pct):
        e = installed_equivalents(gpu_hours, hpd, u) + fixed
        out.append(
            Scenario(
                utilisation_pct=u,
                equivalents=e,
                failure_reserve=e * q(planning.failure_reserve_pct) / 100,
                maintenance=e * q(planning.maintenance_pct) / 100,
                growth=e * q(planning.growth_pct) / 100,
            )
        )
    return out


def demand_scenarios(parts: Iterable[tuple[WorkloadClass, Fraction]], planning: Planning) -> list[Scenario]:
    """Scenarios for (class, GPU-hours) parts: each class at its own target when it has one (class_utilisation)."""
    free = Fraction(0)
    targeted = []
    for c, hours in parts:
        if (u := class_utilisation(c, planning)) is None:
            free += hours
        else:
            targeted.append((hours, u))
    return scenarios(free, planning, targeted)


def gang_minimum(classes: Iterable[WorkloadClass]) -> tuple[int, str | None]:
    """The largest set of GPUs that must be free at once, and the class that needs it."""
    best: tuple[int, str | None] = (0, None)
    for c in classes:
        if c.gang_gpus > best[0]:
            best = (c.gang_gpus, c.name)
    return best


def nodes_for(gpus: int, gpus_per_node: int) -> int:
    return ceil(Fraction(gpus, gpus_per_node))


def billed_gpus(gpus_per_run: int, gpus_per_node: int) -> int:
    """GPUs a run pays for: its own GPUs when it fits in a node (runs share nodes), else whole nodes."""
    if gpus_per_run <= gpus_per_node:
        return gpus_per_run
    return ceil(Fraction(gpus_per_run, gpus_per_node)) * gpus_per_node


# ------------------------------------------------------------------------------------------- memory fit


@dataclass(frozen=True)
class MemoryNeed:
    """GPU memory one run (or replica) needs, in decimal GB, and the rule behind the figure."""

    basis: str
    bytes_per_parameter: Fraction
    states_gb: Fraction  # optimizer states + weights (training) or weights (inference)
    kv_cache_gb: Fraction
    margin_pct: Fraction
    margin_basis: str
    required_gb: Fraction


def memory_need(c: WorkloadClass) -> MemoryNeed:
    """Training needs its optimizer states, before activations; inference the weights at the serving precision.
    Both add the KV cache and a margin."""
    training = c.training
    if c.bytes_per_parameter is not None:
        bpp, basis = q(c.bytes_per_parameter), f"{q(c.bytes_per_parameter)} B/param (set in the workload file)"
    elif training:
        bpp = Fraction(TRAINING_STATE_BYTES_PER_PARAMETER)
        basis = "16 B/param: mixed-precision Adam states (ZeRO; Transformer Math 101), before activations"
    else:
        bpp = BYTES_PER_PARAMETER[c.precision]
        basis = f"weights at {c.precision}, {bpp} B/param (Accelerate's model size estimator)"
    if c.memory_margin_pct is not None:
        margin, margin_basis = q(c.memory_margin_pct), "set in the workload file"
    elif training:
        margin, margin_basis = Fraction(TRAINING_MARGIN_PCT), "gpufleet default for activations (no published figure)"
    else:
        margin, margin_basis = Fraction(INFERENCE_MARGIN_PCT), "Accelerate: up to 20 % over load size"
    states = q(c.parameters_billion) * bpp  # 1e9 parameters × B/param = GB
    kv = q(c.kv_cache_gb)
    return MemoryNeed(
        basis=basis,
        bytes_per_parameter=bpp,
        states_gb=states,
        kv_cache_gb=kv,
        margin_pct=margin,
        margin_basis=margin_basis,
        required_gb=(states + kv) * (1 + margin / 100),
    )


@dataclass(frozen=True)
class GpuFit:
    """Whether a run fits one GPU of a model, and how many it needs when sharded evenly."""

    gpu: catalog.GpuModel
    gpu_memory_gb: Fraction
    fits_one_gpu: bool
    gpus_needed: int


def gpu_memory_gb(gpu: catalog.GpuModel) -> Fraction:
    """Usable memory of one GPU in decimal GB, from the catalog's MiB."""
    return Fraction(gpu.memory_mib * 1024 * 1024, 10**9)


def memory_fit(need: MemoryNeed, gpu: catalog.GpuModel) -> GpuFit:
    """States/weights, KV cache and margin sharded evenly (ZeRO-3/FSDP for training, tensor parallel to serve)."""
    mem = gpu_memory_gb(gpu)
    needed = max(1, ceil(need.required_gb / mem))
    return GpuFit(gpu=gpu, gpu_memory_gb=mem, fits_one_gpu=need.required_gb <= mem, gpus_needed=needed)
