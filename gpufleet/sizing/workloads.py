"""The workload file: the evidence a GPU fleet is sized from (`gpufleet size WORKLOADS`).

Who stands behind the figures and when they are reviewed again, the planning window and utilisation scenarios,
and one entry per workload class. Every problem is reported as `file: YAML path: message`
(model.load's formatter); examples/workloads.yaml shows every key.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Iterable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, model_validator
from pydantic_core import ErrorDetails, InitErrorDetails

from gpufleet.sizing.arithmetic import q
from gpufleet.sizing.needs import Model, StorageNeed, Throughput
from model import catalog
from model.load import SpecError, problem_line, read_yaml, validation_problems, yaml_path
from model.pricing import HOURS_PER_MONTH
from model.spec import DNS1123, Problem, Role, SpecProblems

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
# Divisors of the GPU-hour demand: nothing is planned below a hundredth of a percent or of an hour, and a
# positive float closer to 0 (5e-324) overflows the quotient.
MIN_PCT = 0.01
MIN_DEVICE_HOURS = 0.01


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
        ge=MIN_DEVICE_HOURS,
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
    spare_nodes: int = Field(
        default=1,
        ge=0,
        le=1000,
        description="Whole spare nodes a recommended pool gets on top of its peak (gangs included), so a failed "
        "node does not stall a gang; only for pools of more than spares_above_nodes nodes at peak.",
    )
    spares_above_nodes: int = Field(
        default=4,
        ge=0,
        le=100_000,
        description="A pool gets spare_nodes only when its peak is more than this many nodes (default 4).",
    )
    spot_discount: float | None = Field(
        default=None, gt=0, lt=1, description="Share off on-demand to expect on spot where the catalog has no "
        "dated spot price for a type in the region (e.g. 0.6); spot is offered to interruptible classes only.",
    )  # fmt: skip

    @model_validator(mode="after")
    def _consistent(self) -> Planning:
        """Every cross-field rule of the planning window at once (paths relative to `planning`)."""
        if problems := run_rules(self, PLANNING_RULES):
            raise SpecProblems(problems)
        return self


class WorkloadClass(Model):
    """One class of work: what runs, how often, on how many GPUs, for how long, against what objective."""

    @model_validator(mode="before")
    @classmethod
    def _replicas_from_throughput(cls, data: Any) -> Any:
        """An online service with `throughput` and no runs_per_period gets its replicas as runs."""
        if isinstance(data, dict) and "runs_per_period" not in data and isinstance(data.get("throughput"), dict):
            with contextlib.suppress(ValidationError):  # the throughput's own errors are reported by its field
                return {**data, "runs_per_period": Throughput.model_validate(data["throughput"]).replicas}
            return {**data, "runs_per_period": 1}  # a placeholder: the bad throughput is the one error reported
        return data

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
        description="Catalog GPU model hours_per_run (an online service: its replicas) was measured on (e.g. "
        "H100-80GB). When set, only GPU models with a timing (this one, hours_on or speed_vs_measured) are ranked; "
        "when not set, a training, batch or online-inference class is not ranked across GPU models, and a notebook "
        "takes its hours on every GPU.",
    )
    measured_on_pool: str | None = Field(
        default=None,
        max_length=63,
        description="Node pool of the stack (`gpufleet size -s STACK`) hours_per_run was measured on: measured_on "
        "is its GPU model, and the hours hold on its interconnect (other pools of that GPU model are judged "
        "against its ring, not the fastest one).",
    )
    hours_on: dict[str, Annotated[float, Field(le=MAX_HOURS)]] = Field(
        default_factory=dict, description="Hours per run on other catalog GPU models (benchmarks or estimates)."
    )
    speed_vs_measured: dict[str, Annotated[float, Field(gt=0, le=1000)]] = Field(
        default_factory=dict,
        description="Speed of other catalog GPU models relative to measured_on (2: twice as fast, so half the "
        "hours); a declared ratio where no hours_on was measured. Needs measured_on.",
    )
    steps_per_run: int | None = Field(
        default=None,
        ge=1,
        le=100_000_000,
        description="Optimizer steps of one training run: each all-reduces the gradients once, so a slower ring "
        "adds steps × the extra all-reduce time. Default: one step per 10 s of hours_per_run.",
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
    utilisation_pct: float | None = Field(
        default=None,
        ge=MIN_PCT,
        le=100,
        description="This class's own schedulable-utilisation target in percent, used instead of planning."
        "utilisation_pct's scenarios. Default: 100 for always-on serving (an online-inference class whose runs "
        "last the whole planning period: it is sized at its replicas), else the planning scenarios.",
    )
    source: str | None = Field(default=None, description="Where this class's figures come from, if not the file's.")
    throughput: Throughput | None = Field(
        default=None,
        description="Online inference: requests per second, tokens per request and one replica's tokens per "
        "second (with its source); runs_per_period (the replicas) is derived from them when not given.",
    )

    storage: StorageNeed | None = Field(default=None, description="Training: dataset and checkpoint sizes.")
    interruptible: bool = Field(
        default=False, description="A run survives losing its node (it checkpoints and resumes, or is retried): "
        "spot capacity, reclaimed at two minutes' notice, is offered for runs within one node.",
    )  # fmt: skip

    @model_validator(mode="after")
    def _consistent(self) -> WorkloadClass:
        """Every cross-field rule of the class at once (paths relative to the class)."""
        if problems := run_rules(self, CLASS_RULES):
            raise SpecProblems(problems)
        return self

    @property
    def role(self) -> Role:
        return KIND_ROLE[self.kind]

    @property
    def training(self) -> bool:
        """Training and full fine-tuning: optimizer states in memory, runs may span nodes."""
        return self.kind in TRAINING_KINDS

    @property
    def work_bound(self) -> bool:
        """A run is a fixed amount of work, so its hours depend on the GPU (not serving or a notebook session)."""
        return self.kind in TRAINING_KINDS or self.kind == "batch-inference"

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
        if gpu_id in self.speed_vs_measured:
            return q(self.hours_per_run) / q(self.speed_vs_measured[gpu_id])
        if self.measured_on is None or self.measured_on == gpu_id:
            return q(self.hours_per_run)
        return None


def _unknown_gpu(gid: str) -> str | None:
    """Why `gid` is not a catalog GPU model, or None when it is one."""
    try:
        catalog.gpu_model(gid)
    except catalog.CatalogError as e:
        return str(e).strip("'\"")
    return None


# ------------------------------------------------------------------------------------- cross-field rules
# Each rule reads a model and yields what is wrong with it (paths relative to the model). They run in the models'
# validators and, for a model whose own fields are wrong (so pydantic never calls its validator), on the raw values
# (parse_workloads): a rule whose inputs are themselves wrong is skipped, pydantic reports those.

Rule = Callable[[Any], Iterable[Problem]]


def run_rules(model: Any, rules: Iterable[Rule]) -> list[Problem]:
    out: list[Problem] = []
    for rule in rules:
        try:
            out += list(rule(model))
        except (AttributeError, KeyError, TypeError, ValueError):
            continue  # an input of the rule is missing or of the wrong type: pydantic names it
    return out


def _hours_within_period(p: Planning) -> Iterator[Problem]:
    limit = PERIOD_HOURS[p.period]
    if p.hours_per_device > limit:
        yield Problem(
            "hours_per_device", f"{p.hours_per_device:g} hours per device is more than a {p.period} has ({limit} hours)"
        )


def _scenarios_in_range(p: Planning) -> Iterator[Problem]:
    for i, u in enumerate(p.utilisation_pct):
        if not MIN_PCT <= u <= 100:
            yield Problem(f"utilisation_pct[{i}]", f"{u:g} must be at least {MIN_PCT:g} and at most 100")


def _scenarios_distinct(p: Planning) -> Iterator[Problem]:
    if len(set(p.utilisation_pct)) != len(p.utilisation_pct):
        yield Problem("utilisation_pct", "scenarios must be distinct")


PLANNING_RULES: tuple[Rule, ...] = (_hours_within_period, _scenarios_in_range, _scenarios_distinct)


def _known_gpus(c: WorkloadClass) -> Iterator[Problem]:
    if c.measured_on is not None and (why := _unknown_gpu(c.measured_on)):
        yield Problem("measured_on", why)
    for gid, hours in c.hours_on.items():
        if why := _unknown_gpu(gid):
            yield Problem(f"hours_on.{gid}", why)
        elif hours <= 0:
            yield Problem(f"hours_on.{gid}", f"hours on {gid} must be greater than 0")


def _ratios_need_measured_on(c: WorkloadClass) -> Iterator[Problem]:
    if c.speed_vs_measured and c.measured_on is None and c.measured_on_pool is None:
        yield Problem("speed_vs_measured", "a speed ratio is relative to measured_on: set measured_on")
    for gid in c.speed_vs_measured:
        if why := _unknown_gpu(gid):
            yield Problem(f"speed_vs_measured.{gid}", why)
        elif gid in c.hours_on or gid == c.measured_on:
            yield Problem(f"speed_vs_measured.{gid}", f"{gid} already has its hours; give hours or a ratio, not both")


def _steps_only_in_training(c: WorkloadClass) -> Iterator[Problem]:
    if c.steps_per_run is not None and c.kind not in TRAINING_KINDS:
        yield Problem("steps_per_run", f"a {c.kind} class all-reduces no gradients; steps_per_run is for training")


def _throughput_sizes_serving(c: WorkloadClass) -> Iterator[Problem]:
    if c.throughput is None:
        return
    if c.kind != "online-inference":
        yield Problem("throughput", f"throughput sizes online-inference replicas; a {c.kind} class gives its runs")
    elif c.measured_on is None and c.measured_on_pool is None:
        yield Problem("measured_on", "throughput's tokens/s per replica hold on one GPU model: set measured_on")
    elif q(c.runs_per_period) != c.throughput.replicas:
        why = f"{c.runs_per_period:g} replicas disagree with throughput's {c.throughput.replicas}; give one of them"
        yield Problem("runs_per_period", why)


def _one_objective(c: WorkloadClass) -> Iterator[Problem]:
    if (c.deadline_hours is None) == (c.latency_p95_ms is None):
        yield Problem("", f"class {c.name} needs exactly one objective: deadline_hours or latency_p95_ms")


def _together_is_gang(c: WorkloadClass) -> Iterator[Problem]:
    if c.runs_started_together > 1 and not c.gang:
        yield Problem("runs_started_together", "runs that start together are a gang: set gang: true")


def _no_kv_cache_in_training(c: WorkloadClass) -> Iterator[Problem]:
    if c.kv_cache_gb and c.kind in TRAINING_KINDS:
        yield Problem("kv_cache_gb", f"a {c.kind} class has no KV cache; put activation room in memory_margin_pct")


def _measured_once(c: WorkloadClass) -> Iterator[Problem]:
    if c.measured_on is not None and c.measured_on in c.hours_on:
        yield Problem(
            f"hours_on.{c.measured_on}",
            f"{c.measured_on} is measured_on; its hours are hours_per_run, do not repeat them here",
        )


CLASS_RULES: tuple[Rule, ...] = (
    _known_gpus,
    _one_objective,
    _together_is_gang,
    _no_kv_cache_in_training,
    _measured_once,
    _ratios_need_measured_on,
    _steps_only_in_training,
    _throughput_sizes_serving,
)


class WorkloadFile(Model):
    """A workload file: the evidence a GPU fleet is sized from."""

    assumptions: Assumptions = Field(description="Owner, source and review date of the figures.")
    planning: Planning = Field(description="Planning window and utilisation scenarios.")
    classes: list[WorkloadClass] = Field(min_length=1, description="Workload classes.")

    @model_validator(mode="after")
    def _names_unique(self) -> WorkloadFile:
        if problems := duplicate_names(self.model_dump()):
            raise SpecProblems(problems)
        return self


def duplicate_names(raw: Any) -> list[Problem]:
    """Class names that repeat, read from the raw file so that the rule holds even when other keys are wrong."""
    classes = raw.get("classes") if isinstance(raw, dict) else None
    seen: set[str] = set()
    out = []
    for i, c in enumerate(classes if isinstance(classes, list) else []):
        name = c.get("name") if isinstance(c, dict) else None
        if not isinstance(name, str):
            continue
        if name in seen:
            out.append(Problem(f"classes[{i}].name", f"class names must be unique; {name} appears twice"))
        seen.add(name)
    return out


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
        found = _problems(err, source)
        failed = {tuple(e["loc"][:2]) if e["loc"][:1] == ("classes",) else e["loc"][:1] for e in err.errors()}
    # A model's validator runs only when its own fields are valid: run its rules on the raw values of the models
    # pydantic rejected, and the file-wide rule (unique names) on the raw file, so that one run reports everything.
    for loc, path, model, rules in _raw_models(raw):
        if loc in failed:
            found += [problem_line(source, path, p.path, p.message) for p in run_rules(model, rules)]
    found += [problem_line(source, "", p.path, p.message) for p in duplicate_names(raw)]
    raise SpecError(list(dict.fromkeys(found)))


def _raw_models(raw: dict[str, Any]) -> Iterator[tuple[tuple[Any, ...], str, Any, tuple[Rule, ...]]]:
    """The planning window and each class as unvalidated models (model_construct), with their rules. A key that is
    no string is no field (pydantic reports it), so it is left out here."""
    if isinstance(planning := raw.get("planning"), dict):
        yield ("planning",), "planning", Planning.model_construct(**_fields(planning)), PLANNING_RULES
    classes = raw.get("classes")
    for i, c in enumerate(classes if isinstance(classes, list) else []):
        if isinstance(c, dict):
            yield ("classes", i), f"classes[{i}]", WorkloadClass.model_construct(**_fields(c)), CLASS_RULES


def _fields(raw: dict[Any, Any]) -> dict[str, Any]:
    return {k: v for k, v in raw.items() if isinstance(k, str)}


def _problems(err: ValidationError, source: str) -> list[str]:
    """One line per problem: pydantic's own errors, and every cross-field problem of every nested model."""
    out = []
    for e in err.errors():
        ctx_err = (e.get("ctx") or {}).get("error")
        if isinstance(ctx_err, SpecProblems):
            where = yaml_path("", tuple(e["loc"])).lstrip(".")
            out += [problem_line(source, where, p.path, p.message) for p in ctx_err.problems]
        else:
            out += validation_problems(
                ValidationError.from_exception_data(err.title, [_line_error(e)]),
                source,
                "",
                "examples/workloads.yaml shows every key",
            )
    return out


def _line_error(e: ErrorDetails) -> InitErrorDetails:
    """One reported error as pydantic takes it back, to format it with the loader's one formatter."""
    line = InitErrorDetails(type=e["type"], loc=e["loc"], input=e["input"])
    if "ctx" in e:
        line["ctx"] = e["ctx"]
    return line


def load_workloads(path: Path) -> WorkloadFile:
    """Read and validate a workload file; every problem names the file and the YAML path."""
    return parse_workloads(read_yaml(path, "workload file not found"), str(path))
