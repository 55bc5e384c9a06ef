"""Sizing a GPU fleet from workload evidence, before anyone buys to a spec sheet.

The arithmetic, in the order it should come first:

1. Demand: GPU-hours per planning period = Σ over workload classes of runs × GPUs per run × hours per run.
2. Installed-equivalent GPUs = GPU-hours ÷ (hours per device in the period × schedulable utilisation), one
   figure per utilisation scenario (a range, never one point). Failure reserve, maintenance and growth are
   added on top of each scenario as separate percentages, never hidden in the utilisation factor.
3. Gang constraints: runs that must start together need that many compatible GPUs at once, whatever the
   weekly totals say. Node pools round up to whole nodes.
4. Memory fit (shared/reference/gpu-facts.md §8): mixed-precision Adam training needs ~16 bytes per parameter
   before activations; inference needs the weights at the serving precision plus the KV cache, plus 20 %.
5. The cheapest placement the run fits on and meets its deadline on wins, priced from the catalog
   (on-demand, the stack's region or us-east-1) or, on prem, at the amortised server-hour price.

All sizing arithmetic runs on exact fractions (inputs taken at their decimal value), so rounding up is exact:
a rounded figure never falls short of the demand it was rounded from.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from components.model import catalog
from components.model.load import SpecError, validation_problems
from components.model.pricing import HOURS_PER_MONTH, pool_gpu_hour_price
from components.model.spec import (
    DNS1123,
    AwsNodePool,
    AwsSite,
    BaremetalNodePool,
    BaremetalSite,
    EstateSpec,
    Role,
    SpecFieldError,
)

Kind = Literal["training", "fine-tuning", "batch-inference", "online-inference", "interactive"]
Precision = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4"]
Period = Literal["day", "week", "month", "quarter", "year"]

# gpu-facts.md §8: bf16/fp16 weights 2 B + grads 2 B + fp32 master weights 4 B + Adam m 4 B + Adam v 4 B.
TRAINING_STATE_BYTES_PER_PARAMETER = 16
# gpu-facts.md §8: Accelerate's docs (citing EleutherAI) add "up to an additional 20%" over load size.
INFERENCE_MARGIN_PCT = 20
# §8 gives no number for activations, temporary buffers and fragmentation; this default is gpufleet's own
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
PERIOD_HOURS: dict[str, int] = {
    "day": 24,
    "week": 168,
    "month": HOURS_PER_MONTH,
    "quarter": 3 * HOURS_PER_MONTH,
    "year": 12 * HOURS_PER_MONTH,
}
KIND_ROLE: dict[str, Role] = {
    "training": "training",
    "fine-tuning": "training",
    "batch-inference": "batch",
    "online-inference": "inference",
    "interactive": "interactive",
}
TRAINING_KINDS = frozenset({"training", "fine-tuning"})
DEFAULT_REGION = "us-east-1"


def q(x: float | int | Fraction) -> Fraction:
    """A number as an exact fraction of its decimal value (0.7 -> 7/10, not the binary float)."""
    return x if isinstance(x, Fraction) else Fraction(str(x))


def ceil(x: Fraction) -> int:
    return math.ceil(x)


# ------------------------------------------------------------------------------------------ workload file


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Assumptions(Model):
    """Who stands behind the numbers, where they come from, and when they are looked at again."""

    owner: str = Field(min_length=1, description="Team or person accountable for these workload figures.")
    source: str = Field(
        min_length=1, description="Where the figures come from (scheduler logs, benchmarks, team estimates, ...)."
    )
    review_date: dt.date = Field(description="Date by which the figures are reviewed again (YYYY-MM-DD).")


class Planning(Model):
    """The planning window and the scenarios the installed-equivalent range is computed over."""

    period: Period = Field(description="Planning period the run counts refer to: day, week, month, quarter or year.")
    hours_per_device: float = Field(
        gt=0,
        description="Hours one installed GPU can run jobs in the period (168 a week around the clock; fewer if "
        "the estate only runs part of the time). Maintenance is not taken off here: see maintenance_pct.",
    )
    utilisation_pct: list[float] = Field(
        min_length=1,
        description="Schedulable-utilisation scenarios in percent (for example [50, 60, 70]); the answer is a "
        "range over them.",
    )
    failure_reserve_pct: float = Field(
        default=0, ge=0, le=100, description="GPUs held back for failed nodes, as % of the installed equivalent."
    )
    maintenance_pct: float = Field(
        default=0, ge=0, le=100, description="GPUs out for maintenance (drains, upgrades), as % of the equivalent."
    )
    growth_pct: float = Field(
        default=0, ge=0, le=500, description="Demand growth over the planning horizon, as % of the equivalent."
    )


class WorkloadClass(Model):
    """One class of work: what runs, how often, on how many GPUs, for how long, against what objective."""

    name: str = Field(pattern=DNS1123, max_length=40, description="Class name (DNS-1123 label).")
    kind: Kind = Field(
        description="training, fine-tuning (full, Adam), batch-inference, online-inference or interactive."
    )
    description: str = Field(default="", description="What the class is, in a sentence.")
    parameters_billion: float = Field(gt=0, description="Model size in billions of parameters (7 for a 7B model).")
    precision: Precision = Field(
        default="bf16",
        description="Precision of the weights: the serving precision for inference; for training the mixed-"
        "precision Adam rule (16 B/param) applies whatever the weight precision.",
    )
    bytes_per_parameter: float | None = Field(
        default=None,
        gt=0,
        description="Override the rule's bytes per parameter (e.g. LoRA fine-tuning); printed as an assumption.",
    )
    kv_cache_gb: float = Field(
        default=0,
        ge=0,
        description="KV cache per replica at the serving batch and context length, in GB (inference and "
        "interactive classes).",
    )
    memory_margin_pct: float | None = Field(
        default=None,
        ge=0,
        le=300,
        description="Margin over states/weights (+ KV cache) for activations, buffers and fragmentation; default "
        "20 (inference: Accelerate's +20 %; training: gpufleet's default, no published figure).",
    )
    runs_per_period: float = Field(gt=0, description="Runs (or replicas, for a service) per planning period.")
    gpus_per_run: int = Field(ge=1, le=4096, description="GPUs one run (or one replica) uses.")
    hours_per_run: float = Field(
        gt=0, description="Wall-clock hours one run takes on measured_on (or on any GPU when it is not set)."
    )
    measured_on: str | None = Field(
        default=None,
        description="Catalog GPU model hours_per_run was measured on (e.g. H100-80GB). When set, only GPU models "
        "with a timing (this one or hours_on) are ranked; when not set, hours are assumed equal on every GPU.",
    )
    hours_on: dict[str, float] = Field(
        default_factory=dict, description="Hours per run on other catalog GPU models (benchmarks or estimates)."
    )
    deadline_hours: float | None = Field(
        default=None, gt=0, description="A run must finish within this many hours (training, batch)."
    )
    latency_p95_ms: float | None = Field(
        default=None,
        gt=0,
        description="p95 latency objective (online inference, interactive); recorded, not checkable offline.",
    )
    gang: bool = Field(
        default=False,
        description="All GPUs of a run (and of runs_started_together runs) must be free at the same moment "
        "(all-or-nothing admission, e.g. multi-node training).",
    )
    runs_started_together: int = Field(
        default=1, ge=1, le=1024, description="Runs that must start at the same moment (needs gang: true)."
    )
    source: str | None = Field(default=None, description="Where this class's figures come from, if not the file's.")

    @field_validator("measured_on")
    @classmethod
    def _known_gpu(cls, v: str | None) -> str | None:
        if v is not None:
            _check_gpu(v)
        return v

    @field_validator("hours_on")
    @classmethod
    def _known_gpus(cls, v: dict[str, float]) -> dict[str, float]:
        for gid, hours in v.items():
            _check_gpu(gid)
            if hours <= 0:
                raise ValueError(f"hours on {gid} must be greater than 0")
        return v

    @property
    def role(self) -> Role:
        return KIND_ROLE[self.kind]

    @property
    def gang_gpus(self) -> int:
        """GPUs that must be free at once for this class (0 when its runs need not start together)."""
        return self.gpus_per_run * self.runs_started_together if self.gang else 0

    def gpu_hours(self) -> Fraction:
        """Demand per period in GPU-hours: runs × GPUs per run × hours per run."""
        return q(self.runs_per_period) * self.gpus_per_run * q(self.hours_per_run)

    def hours_on_gpu(self, gpu_id: str) -> Fraction | None:
        """Hours one run takes on a GPU model, or None when the file holds no timing for it."""
        if gpu_id in self.hours_on:
            return q(self.hours_on[gpu_id])
        if self.measured_on is None or self.measured_on == gpu_id:
            return q(self.hours_per_run)
        return None


def _check_gpu(gid: str) -> None:
    try:
        catalog.gpu_model(gid)
    except catalog.CatalogError as e:
        raise ValueError(str(e).strip("'\"")) from None


class WorkloadFile(Model):
    """A workload file: the evidence a GPU fleet is sized from."""

    assumptions: Assumptions = Field(description="Owner, source and review date of the figures.")
    planning: Planning = Field(description="Planning window and utilisation scenarios.")
    classes: list[WorkloadClass] = Field(min_length=1, description="Workload classes.")

    @model_validator(mode="after")
    def _planning_consistent(self) -> WorkloadFile:
        p = self.planning
        limit = PERIOD_HOURS[p.period]
        if p.hours_per_device > limit:
            raise SpecFieldError(
                "planning.hours_per_device",
                f"{p.hours_per_device:g} hours per device is more than a {p.period} has ({limit} hours)",
            )
        for i, u in enumerate(p.utilisation_pct):
            if not 0 < u <= 100:
                raise SpecFieldError(f"planning.utilisation_pct[{i}]", f"{u:g} must be above 0 and at most 100")
        if len(set(p.utilisation_pct)) != len(p.utilisation_pct):
            raise SpecFieldError("planning.utilisation_pct", "scenarios must be distinct")
        return self

    @model_validator(mode="after")
    def _classes_consistent(self) -> WorkloadFile:
        seen: set[str] = set()
        for i, c in enumerate(self.classes):
            path = f"classes[{i}]"
            if c.name in seen:
                raise SpecFieldError(f"{path}.name", f"class names must be unique; {c.name} appears twice")
            seen.add(c.name)
            if (c.deadline_hours is None) == (c.latency_p95_ms is None):
                raise SpecFieldError(
                    path, f"class {c.name} needs exactly one objective: deadline_hours or latency_p95_ms"
                )
            if c.runs_started_together > 1 and not c.gang:
                raise SpecFieldError(
                    f"{path}.runs_started_together", "runs that start together are a gang: set gang: true"
                )
            if c.kv_cache_gb and c.kind in TRAINING_KINDS:
                raise SpecFieldError(
                    f"{path}.kv_cache_gb", f"a {c.kind} class has no KV cache; put activation room in memory_margin_pct"
                )
            if c.measured_on is not None and c.measured_on in c.hours_on:
                raise SpecFieldError(
                    f"{path}.hours_on.{c.measured_on}",
                    f"{c.measured_on} is measured_on; its hours are hours_per_run, do not repeat them here",
                )
        return self


def parse_workloads(raw: Any, source: str) -> WorkloadFile:
    if not isinstance(raw, dict):
        raise SpecError([f"{source}: must be a mapping with assumptions, planning and classes"])
    try:
        return WorkloadFile.model_validate(raw)
    except ValidationError as err:
        raise SpecError(validation_problems(err, source, "", "examples/workloads.yaml shows every key")) from None


def load_workloads(path: Path) -> WorkloadFile:
    """Read and validate a workload file; every problem names the file and the YAML path."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise SpecError([f"{path}: workload file not found"]) from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise SpecError([f"{path}: not valid YAML{where}: {getattr(err, 'problem', None) or err}"]) from None
    return parse_workloads(raw, str(path))


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
    training = c.kind in TRAINING_KINDS
    if c.bytes_per_parameter is not None:
        bpp, basis = q(c.bytes_per_parameter), f"{q(c.bytes_per_parameter)} B/param (set in the workload file)"
    elif training:
        bpp = Fraction(TRAINING_STATE_BYTES_PER_PARAMETER)
        basis = "16 B/param: mixed-precision Adam states (gpu-facts §8), before activations"
    else:
        bpp = BYTES_PER_PARAMETER[c.precision]
        basis = f"weights at {c.precision}, {bpp} B/param (gpu-facts §8)"
    if c.memory_margin_pct is not None:
        margin, margin_basis = q(c.memory_margin_pct), "set in the workload file"
    elif training:
        margin, margin_basis = Fraction(TRAINING_MARGIN_PCT), "gpufleet default for activations (no published figure)"
    else:
        margin, margin_basis = Fraction(INFERENCE_MARGIN_PCT), "Accelerate: up to 20 % over load size (§8)"
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


# -------------------------------------------------------------------------------------------- placements


@dataclass(frozen=True)
class Placement:
    """Somewhere runs can go: a catalog instance type, or a node pool of a stack."""

    name: str
    gpu: catalog.GpuModel
    gpus_per_node: int
    multi_node: bool  # runs may span nodes (EFA on AWS, a fabric on bare metal)
    usd_per_gpu_hour: Fraction | None
    price_basis: str
    instance_type: str | None = None
    pool: str | None = None
    site: str | None = None
    role: Role | None = None
    capacity_gpus: int | None = None  # stack pools: GPUs at max size

    @property
    def usd_per_node_hour(self) -> Fraction | None:
        return None if self.usd_per_gpu_hour is None else self.usd_per_gpu_hour * self.gpus_per_node


def _aws_price(instance: str, region: str) -> tuple[Fraction | None, str]:
    p = catalog.price(instance, region)
    if p is None:
        return None, f"unpriced: no on-demand price for {region} in the catalog"
    per_gpu = q(p.usd_per_hour) / catalog.instance_type(instance).gpu_count
    return per_gpu, f"catalog on-demand {region}, {p.date}"


def _onprem_price(spec: EstateSpec, site: BaremetalSite, pool: BaremetalNodePool) -> tuple[Fraction | None, str]:
    found = pool_gpu_hour_price(spec, site, pool)  # the one amortised price (components.model.pricing)
    if found is None or found.gpus == 0:
        return None, "unpriced: no on-prem cost in the stack"
    return q(found.usd_per_gpu_hour), "on-prem amortised server-hour (stack cost)"


def catalog_placements(region: str) -> list[Placement]:
    """Every catalog instance type, priced on demand in `region`."""
    out = []
    for it in catalog.instance_types().values():
        price, basis = _aws_price(it.name, region)
        out.append(
            Placement(
                name=it.name,
                gpu=it.gpu,
                gpus_per_node=it.gpu_count,
                multi_node=it.efa_supported,
                usd_per_gpu_hour=price,
                price_basis=basis,
                instance_type=it.name,
            )
        )
    return out


def stack_placements(spec: EstateSpec) -> tuple[list[Placement], list[tuple[str, str]]]:
    """The stack's node pools as placements, and the pools left out with the reason."""
    out: list[Placement] = []
    skipped: list[tuple[str, str]] = []
    for site, pool in spec.pools():
        if pool.sharing.mode != "whole":
            skipped.append((pool.name, f"shares GPUs ({pool.sharing.mode}); this sizing counts whole GPUs"))
            continue
        if pool.dedicated_to is not None:
            skipped.append((pool.name, f"dedicated to tenant {pool.dedicated_to}; workload classes name no tenant"))
            continue
        if isinstance(pool, AwsNodePool) and pool.burst:
            skipped.append((pool.name, "burst pool: sized by burst windows, idle at zero"))
            continue
        gpn = spec.pool_gpus_per_node(pool.name)
        if isinstance(pool, AwsNodePool) and isinstance(site, AwsSite):
            price, basis = _aws_price(pool.instance_type, site.region)
            instance: str | None = pool.instance_type
        else:
            assert isinstance(pool, BaremetalNodePool) and isinstance(site, BaremetalSite)
            price, basis = _onprem_price(spec, site, pool)
            instance = None
        out.append(
            Placement(
                name=pool.name,
                gpu=spec.pool_gpu_model(pool.name),
                gpus_per_node=gpn,
                multi_node=pool.fabric is not None,
                usd_per_gpu_hour=price,
                price_basis=basis,
                instance_type=instance,
                pool=pool.name,
                site=site.name,
                role=pool.role,
                capacity_gpus=spec.pool_gpu_capacity(pool.name),
            )
        )
    return out, skipped


def onprem_placements(spec: EstateSpec) -> list[Placement]:
    """Bare-metal pools of a stack as candidates next to the catalog (the inventory is already bought)."""
    pools, _ = stack_placements(spec)
    return [p for p in pools if p.instance_type is None]


def stack_region(spec: EstateSpec | None) -> str:
    if spec is not None:
        for s in spec.sites:
            if isinstance(s, AwsSite):
                return s.region
    return DEFAULT_REGION


# --------------------------------------------------------------------------------------------- choices

Status = Literal["ok", "misses deadline", "no timing", "unpriced"]


@dataclass(frozen=True)
class Choice:
    """A placement a class fits on, with its cost per run (None when unpriced or untimed)."""

    placement: Placement
    gpus_needed: int
    nodes_per_run: int
    hours_per_run: Fraction | None
    cost_per_run: Fraction | None
    status: Status


def billed_gpus(gpus_per_run: int, gpus_per_node: int) -> int:
    """GPUs a run pays for: its own GPUs when it fits in a node (runs share nodes), else whole nodes."""
    if gpus_per_run <= gpus_per_node:
        return gpus_per_run
    return ceil(Fraction(gpus_per_run, gpus_per_node)) * gpus_per_node


def evaluate(c: WorkloadClass, need: MemoryNeed, p: Placement) -> Choice | str:
    """A Choice when the class's runs can go on `p`, else the reason they cannot."""
    fit = memory_fit(need, p.gpu)
    if fit.gpus_needed > c.gpus_per_run:
        return f"needs {fit.gpus_needed} × {p.gpu.id} for memory, more than its {c.gpus_per_run} GPUs per run"
    if p.gpus_per_node == 0:
        return "no GPUs per node"
    nodes = ceil(Fraction(c.gpus_per_run, p.gpus_per_node))
    if nodes > 1 and c.kind not in TRAINING_KINDS:
        return f"a {c.kind} run of {c.gpus_per_run} GPUs must fit one node ({p.gpus_per_node} GPUs)"
    if nodes > 1 and not p.multi_node:
        return f"a run spans {nodes} nodes but {p.name} has no fabric (EFA / InfiniBand / RoCE)"
    hours = c.hours_on_gpu(p.gpu.id)
    status: Status = "ok"
    cost = None
    if hours is None:
        status = "no timing"
    elif c.deadline_hours is not None and hours > q(c.deadline_hours):
        status = "misses deadline"
    if hours is not None and p.usd_per_gpu_hour is not None:
        cost = billed_gpus(c.gpus_per_run, p.gpus_per_node) * p.usd_per_gpu_hour * hours
    elif status == "ok":
        status = "unpriced"
    return Choice(
        placement=p,
        gpus_needed=fit.gpus_needed,
        nodes_per_run=nodes,
        hours_per_run=hours,
        cost_per_run=cost,
        status=status,
    )


def rank(choices: Iterable[Choice]) -> list[Choice]:
    """Priced choices that meet the objective first, cheapest per run; then the rest, by why they lost."""
    order = {"ok": 0, "misses deadline": 1, "no timing": 2, "unpriced": 3}
    return sorted(
        choices,
        key=lambda ch: (
            order[ch.status],
            ch.cost_per_run if ch.cost_per_run is not None else 0,
            ch.nodes_per_run,
            ch.placement.name,
        ),
    )


@dataclass(frozen=True)
class ClassSizing:
    cls: WorkloadClass
    gpu_hours: Fraction
    need: MemoryNeed
    fits: list[GpuFit]
    choices: list[Choice]  # ranked; the first with status ok is chosen

    @property
    def chosen(self) -> Choice | None:
        return next((ch for ch in self.choices if ch.status == "ok"), None)


def size_class(c: WorkloadClass, placements: list[Placement]) -> ClassSizing:
    need = memory_need(c)
    fits = sorted(
        (memory_fit(need, g) for g in catalog.gpu_models().values()), key=lambda f: (-f.gpu_memory_gb, f.gpu.id)
    )
    choices = [ch for p in placements if isinstance(ch := evaluate(c, need, p), Choice)]
    return ClassSizing(cls=c, gpu_hours=c.gpu_hours(), need=need, fits=fits, choices=rank(choices))


# -------------------------------------------------------------------------------------- installed range


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


def scenarios(gpu_hours: Fraction, planning: Planning) -> list[Scenario]:
    """One scenario per utilisation, lowest utilisation (most GPUs) first. Reserves add to the equivalent."""
    out = []
    for u in sorted(q(x) for x in planning.utilisation_pct):
        e = installed_equivalents(gpu_hours, q(planning.hours_per_device), u)
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


def gang_minimum(classes: Iterable[WorkloadClass]) -> tuple[int, str | None]:
    """The largest set of GPUs that must be free at once, and the class that needs it."""
    best: tuple[int, str | None] = (0, None)
    for c in classes:
        if c.gang_gpus > best[0]:
            best = (c.gang_gpus, c.name)
    return best


def nodes_for(gpus: int, gpus_per_node: int) -> int:
    return ceil(Fraction(gpus, gpus_per_node))


@dataclass(frozen=True)
class Demand:
    """Demand placed on one placement: the range it needs, gang included, in GPUs and nodes."""

    placement: Placement
    classes: tuple[str, ...]
    gpu_hours: Fraction  # on this placement's GPU
    scenarios: list[Scenario]
    gang_gpus: int
    multi_node_gang: bool

    @property
    def min_gpus(self) -> int:
        """The optimistic end (highest utilisation) with reserves, never below the gang minimum."""
        return max(self.scenarios[-1].rounded, self.gang_gpus)

    @property
    def max_gpus(self) -> int:
        """The pessimistic end (lowest utilisation) with reserves, never below the gang minimum."""
        return max(self.scenarios[0].rounded, self.gang_gpus)

    @property
    def min_nodes(self) -> int:
        return nodes_for(self.min_gpus, self.placement.gpus_per_node)

    @property
    def max_nodes(self) -> int:
        return nodes_for(self.max_gpus, self.placement.gpus_per_node)


def demand_on(p: Placement, placed: list[tuple[ClassSizing, Choice]], planning: Planning) -> Demand:
    hours = sum(
        (q(cs.cls.runs_per_period) * cs.cls.gpus_per_run * (ch.hours_per_run or 0) for cs, ch in placed), Fraction(0)
    )
    gang, _ = gang_minimum(cs.cls for cs, _ in placed)
    return Demand(
        placement=p,
        classes=tuple(cs.cls.name for cs, _ in placed),
        gpu_hours=hours,
        scenarios=scenarios(hours, planning),
        gang_gpus=gang,
        multi_node_gang=any(ch.nodes_per_run > 1 and cs.cls.gang for cs, ch in placed),
    )


@dataclass(frozen=True)
class PoolRecommendation:
    name: str
    role: Role
    demand: Demand


def recommend_pools(sized: list[ClassSizing], planning: Planning) -> list[PoolRecommendation]:
    """One new cloud pool per (instance type, role); an existing on-prem pool stays one pool. Whole nodes."""
    groups: dict[tuple[str, str], list[tuple[ClassSizing, Choice]]] = {}
    for cs in sized:
        ch = cs.chosen
        if ch is not None:
            key: str = cs.cls.role if ch.placement.instance_type else ""
            groups.setdefault((ch.placement.name, key), []).append((cs, ch))
    out = []
    for (pname, role_key), placed in groups.items():
        p = placed[0][1].placement
        if p.instance_type:
            name, pool_role = f"{role_key}-{pname.replace('.', '-')}"[:40].rstrip("-"), placed[0][0].cls.role
        else:
            name, pool_role = pname, p.role or placed[0][0].cls.role
        out.append(PoolRecommendation(name=name, role=pool_role, demand=demand_on(p, placed, planning)))
    return out


def node_pool_snippet(pools: list[PoolRecommendation]) -> str:
    """AWS recommendations as stack-file `node_pools:` entries (the schema of components.model.spec.AwsNodePool)."""
    lines = ["node_pools:"]
    for r in pools:
        d = r.demand
        if d.placement.instance_type is None:
            continue
        entry = {
            "name": r.name,
            "role": r.role,
            "instance_type": d.placement.instance_type,
            "scaling": {"min": d.min_nodes, "max": d.max_nodes},
            "capacity": {"type": "on-demand"},
        }
        lines.append(f"  # {', '.join(d.classes)}: {d.min_gpus}-{d.max_gpus} GPUs")
        if d.multi_node_gang:
            lines.append("  # multi-node gang runs: set `fabric:` to an EFA fabric of the site")
        body = yaml.safe_dump([entry], sort_keys=False, default_flow_style=None).rstrip()
        lines += [f"  {line}" for line in body.splitlines()]
    return "\n".join(lines) + "\n" if len(lines) > 1 else ""


# ----------------------------------------------------------------------------------------- stack verdict

Verdict = Literal["under-provisioned", "within", "over-provisioned"]


@dataclass(frozen=True)
class PoolVerdict:
    placement: Placement
    demand: Demand
    verdict: Verdict
    excess_gpus: int
    excess_usd_per_month: Fraction | None
    role_mismatch: tuple[str, ...]  # classes placed here although the pool's role is another


@dataclass(frozen=True)
class StackComparison:
    stack: str
    pools: list[PoolVerdict]
    unplaced: list[tuple[str, list[str]]]  # class, why no pool of the stack takes it
    skipped: list[tuple[str, str]]

    @property
    def verdict(self) -> Verdict:
        if self.unplaced or any(v.verdict == "under-provisioned" for v in self.pools):
            return "under-provisioned"
        if any(v.verdict == "over-provisioned" for v in self.pools):
            return "over-provisioned"
        return "within"


def _pool_verdict(p: Placement, d: Demand, mismatch: tuple[str, ...]) -> PoolVerdict:
    cap = p.capacity_gpus or 0
    excess = 0
    if cap < d.min_gpus:
        verdict: Verdict = "under-provisioned"
    elif cap <= d.max_gpus:
        verdict = "within"
    else:
        verdict, excess = "over-provisioned", cap - d.max_gpus
    cost = None
    if excess and p.usd_per_gpu_hour is not None:
        cost = excess * p.usd_per_gpu_hour * HOURS_PER_MONTH
    return PoolVerdict(
        placement=p, demand=d, verdict=verdict, excess_gpus=excess, excess_usd_per_month=cost, role_mismatch=mismatch
    )


def compare_stack(stack: str, spec: EstateSpec, workloads: WorkloadFile) -> StackComparison:
    """Place each class on the cheapest stack pool it fits (same role first) and judge every pool's capacity."""
    pools, skipped = stack_placements(spec)
    placed: dict[str, list[tuple[ClassSizing, Choice]]] = {p.name: [] for p in pools}
    mismatch: dict[str, list[str]] = {p.name: [] for p in pools}
    unplaced: list[tuple[str, list[str]]] = []
    for c in workloads.classes:
        need = memory_need(c)
        results = [(p, evaluate(c, need, p)) for p in pools]
        choices = [r for _, r in results if isinstance(r, Choice)]
        same_role = rank(ch for ch in choices if ch.placement.role == c.role)
        ranked = same_role if any(ch.status == "ok" for ch in same_role) else rank(choices)
        best = next((ch for ch in ranked if ch.status == "ok"), None)
        if best is None:
            why = [f"{p.name}: {r}" for p, r in results if isinstance(r, str)]
            why += [f"{ch.placement.name}: {ch.status}" for ch in choices]
            unplaced.append((c.name, why or ["the stack has no whole-GPU pool to compare"]))
            continue
        cs = ClassSizing(cls=c, gpu_hours=c.gpu_hours(), need=need, fits=[], choices=[best])
        placed[best.placement.name].append((cs, best))
        if best.placement.role != c.role:
            mismatch[best.placement.name].append(c.name)
    verdicts = [
        _pool_verdict(p, demand_on(p, placed[p.name], workloads.planning), tuple(mismatch[p.name])) for p in pools
    ]
    return StackComparison(stack=stack, pools=verdicts, unplaced=unplaced, skipped=skipped)


# ---------------------------------------------------------------------------------------------- report


@dataclass(frozen=True)
class SizingReport:
    source: str
    workloads: WorkloadFile
    region: str
    classes: list[ClassSizing]
    total_gpu_hours: Fraction
    scenarios: list[Scenario]
    gang_gpus: int
    gang_class: str | None
    pools: list[PoolRecommendation]
    snippet: str
    comparison: StackComparison | None
    today: dt.date
    notes: list[str] = field(default_factory=list)

    @property
    def unplaced(self) -> list[str]:
        return [cs.cls.name for cs in self.classes if cs.chosen is None]

    @property
    def review_overdue(self) -> bool:
        return self.workloads.assumptions.review_date < self.today


def size(
    workloads: WorkloadFile,
    source: str,
    spec: EstateSpec | None = None,
    stack: str | None = None,
    today: dt.date | None = None,
) -> SizingReport:
    """Size the fleet for a workload file; with a stack, judge the stack's pools against the range."""
    region = stack_region(spec)
    placements = catalog_placements(region)
    notes = []
    if spec is not None:
        onprem = onprem_placements(spec)
        placements += onprem
        if onprem:
            notes.append(f"on-prem pools of stack {stack} are candidates too: {', '.join(p.name for p in onprem)}")
    sized = [size_class(c, placements) for c in workloads.classes]
    total = sum((cs.gpu_hours for cs in sized), Fraction(0))
    gang, gang_class = gang_minimum(workloads.classes)
    pools = recommend_pools(sized, workloads.planning)
    return SizingReport(
        source=source,
        workloads=workloads,
        region=region,
        classes=sized,
        total_gpu_hours=total,
        scenarios=scenarios(total, workloads.planning),
        gang_gpus=gang,
        gang_class=gang_class,
        pools=pools,
        snippet=node_pool_snippet(pools),
        comparison=compare_stack(stack or "", spec, workloads) if spec is not None else None,
        today=today or dt.date.today(),
        notes=notes,
    )
