"""Shared building blocks of the estate schema: the frozen, strict base model, names, and estate metadata."""

from __future__ import annotations

from typing import Annotated, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from model.conventions import REQUIRED_TAGS

MAX_TEXT = 4096  # characters in any one string of the estate
DNS1123 = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
Name = Annotated[
    str,
    Field(
        pattern=DNS1123,
        max_length=40,
        description="A DNS-1123 label: lower-case letters, digits and '-', at most 40 characters.",
    ),
]
Role = Literal["training", "inference", "interactive", "batch"]
CapacityType = Literal["on-demand", "spot", "capacity-reservation", "capacity-block"]
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Problem(NamedTuple):
    """One broken cross-field rule: the YAML path (relative to the estate value) and what is wrong."""

    path: str
    message: str


class SpecFieldError(ValueError):
    """A cross-field rule broken at a known YAML path (relative to the estate value)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


class SpecProblems(ValueError):
    """Every broken cross-field rule of one value at once; the loader prints one line per problem."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(f"{p.path}: {p.message}" if p.path else p.message for p in problems))
        self.problems = problems


class Model(BaseModel):
    # Every number finite, every string bounded: the limits no real estate comes near (see spec.net for the rest).
    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, allow_inf_nan=False, str_max_length=MAX_TEXT
    )


class Metadata(Model):
    """Who owns the estate and how its spend is attributed."""

    name: Name = Field(description="Estate name; prefixes cloud resource names and the `cluster` tag.")
    environment: Name = Field(description="Environment (dev, staging, prod, ...); the `env` tag.")
    owner: str = Field(min_length=1, description="Owning team or person; the `owner` tag.")
    cost_center: str = Field(min_length=1, description="Cost centre spend is booked to; the `cost-center` tag.")
    tags: dict[str, str] = Field(
        default_factory=dict,
        description="Extra tags set on every taggable resource (in addition to the required ones).",
    )
    required_tags: list[str] = Field(
        default_factory=lambda: list(REQUIRED_TAGS),
        description="Tag keys the cost-tags policy pack requires on every taggable AWS resource.",
    )


class NodeTaint(Model):
    """A taint nodes carry, as `kubectl describe node` shows it (`key=value:effect`)."""

    key: str = Field(
        min_length=1, max_length=316, description="Taint key, e.g. `node-role.kubernetes.io/control-plane`."
    )
    value: str = Field(default="", max_length=63, description="Taint value (empty for most system taints).")
    effect: TaintEffect


SYSTEM_NODES_HELP = (
    "The nodes this existing cluster has besides the GPU servers (gpufleet joins and taints only those, with "
    "nvidia.com/gpu=present:NoSchedule), with their labels and taints. The controllers gpufleet installs run "
    "here; some tolerate no taint at all (Kueue's controller-manager, NFD's garbage collector), so the cluster "
    "needs a group without NoSchedule or NoExecute taints. The first-up simulation places every controller on "
    "these nodes and names each one that fits none; stated none, it assumes none."
)


class SystemNodes(Model):
    """A group of nodes an existing cluster already has, which gpufleet neither creates nor joins."""

    name: Name = Field(description="What messages call these nodes, e.g. `cpu-workers` or `control-plane`.")
    labels: dict[str, str] = Field(
        default_factory=dict, description="Labels they carry (what node selectors and affinity match)."
    )
    taints: list[NodeTaint] = Field(default_factory=list, max_length=16, description="Taints they carry.")
