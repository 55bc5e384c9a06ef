"""The workload file: the evidence a GPU fleet is sized from (`gpufleet size WORKLOADS`).

Who stands behind the figures and when they are reviewed again, the planning window and utilisation scenarios,
and one entry per workload class. Every problem is reported as `file: YAML path: message`
(components.model.load's formatter); examples/workloads.yaml shows every key.
"""

from __future__ import annotations

import datetime as dt
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from components.model import catalog
from components.model.load import SpecError, read_yaml, validation_problems
from components.model.pricing import HOURS_PER_MONTH
from components.model.spec import DNS1123, Role, SpecFieldError
from components.model.spec.base import MAX_TEXT
from gpufleet.sizing.arithmetic import q

Kind = Literal["training", "fine-tuning", "batch-inference", "online-inference", "interactive"]
Precision = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4"]
Period = Literal["day", "week", "month", "quarter", "year"]
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

# ------------------------------------------------------------------------------------------ workload file


MAX_HOURS = 100_000.0  # hours of one run or of a device in a period: over eleven years


class Model(BaseModel):
    # Numbers finite and strings bounded, as in the estate schema (components.model.spec.base.Model).
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, str_max_length=MAX_TEXT)


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
        le=MAX_HOURS,
        description="Hours one installed GPU can run jobs in the period (168 a week around the clock; fewer if "
        "the estate only runs part of the time). Maintenance is not taken off here: see maintenance_pct.",
    )
    utilisation_pct: list[float] = Field(
        min_length=1,
        max_length=20,
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
    parameters_billion: float = Field(
        gt=0, le=1_000_000, description="Model size in billions of parameters (7 for a 7B model)."
    )
    precision: Precision = Field(
        default="bf16",
        description="Precision of the weights: the serving precision for inference; for training the mixed-"
        "precision Adam rule (16 B/param) applies whatever the weight precision.",
    )
    bytes_per_parameter: float | None = Field(
        default=None,
        gt=0,
        le=64,
        description="Override the rule's bytes per parameter (e.g. LoRA fine-tuning); printed as an assumption.",
    )
    kv_cache_gb: float = Field(
        default=0,
        ge=0,
        le=1_000_000,
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
    runs_per_period: float = Field(
        gt=0, le=10_000_000, description="Runs (or replicas, for a service) per planning period."
    )
    gpus_per_run: int = Field(ge=1, le=4096, description="GPUs one run (or one replica) uses.")
    hours_per_run: float = Field(
        gt=0,
        le=MAX_HOURS,
        description="Wall-clock hours one run takes on measured_on (or on any GPU when it is not set).",
    )
    measured_on: str | None = Field(
        default=None,
        description="Catalog GPU model hours_per_run was measured on (e.g. H100-80GB). When set, only GPU models "
        "with a timing (this one or hours_on) are ranked; when not set, hours are assumed equal on every GPU.",
    )
    hours_on: dict[str, Annotated[float, Field(le=MAX_HOURS)]] = Field(
        default_factory=dict, description="Hours per run on other catalog GPU models (benchmarks or estimates)."
    )
    deadline_hours: float | None = Field(
        default=None, gt=0, le=MAX_HOURS, description="A run must finish within this many hours (training, batch)."
    )
    latency_p95_ms: float | None = Field(
        default=None,
        gt=0,
        le=1e9,
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
    def training(self) -> bool:
        """Training and full fine-tuning: optimizer states in memory, runs may span nodes."""
        return self.kind in TRAINING_KINDS

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


def json_schema() -> dict[str, object]:
    """JSON Schema of a workload file (`gpufleet schema --workloads`), for editors."""
    schema = WorkloadFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "gpufleet workload file (read by gpufleet size)"
    return schema


def parse_workloads(raw: Any, source: str) -> WorkloadFile:
    if not isinstance(raw, dict):
        raise SpecError([f"{source}: must be a mapping with assumptions, planning and classes"])
    try:
        return WorkloadFile.model_validate(raw)
    except ValidationError as err:
        raise SpecError(validation_problems(err, source, "", "examples/workloads.yaml shows every key")) from None


def load_workloads(path: Path) -> WorkloadFile:
    """Read and validate a workload file; every problem names the file and the YAML path."""
    return parse_workloads(read_yaml(path, "workload file not found"), str(path))
