"""Shared building blocks of the estate schema: the frozen, strict base model, names, and estate metadata."""

from __future__ import annotations

from typing import Annotated, Literal, NamedTuple

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from model.conventions import GPUFLEET_TAG_KEYS, REQUIRED_TAGS

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


# AWS tag rules (docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html, "Tag naming limits and
# requirements"): at most 50 user tags a resource, keys of 1..128 and values of at most 256 characters, and no key
# starting with `aws:` in any case (reserved for AWS). `metadata.tags` and gpufleet's own tags share the 50.
AWS_MAX_TAGS = 50
AWS_TAG_KEY_MAX = 128
AWS_TAG_VALUE_MAX = 256
# The tags gpufleet adds to `metadata.tags` on every resource (model.tags.Tags: owner, cost-center, env, cluster,
# managed-by, tenant), and at most two a resource adds for itself (its Name and its fabric, pool or tier).
GPUFLEET_TAGS = 6 + 2
TagValue = Annotated[str, Field(max_length=AWS_TAG_VALUE_MAX)]


def _aws_tag_key(key: str) -> str:
    if not 1 <= len(key) <= AWS_TAG_KEY_MAX:
        raise ValueError(f"tag key {key[:40]!r}: an AWS tag key has 1..{AWS_TAG_KEY_MAX} characters")
    if key.lower().startswith("aws:"):
        raise ValueError(f"tag key {key!r}: the `aws:` prefix is reserved for AWS's own tags")
    if key in GPUFLEET_TAG_KEYS:
        raise ValueError(
            f"tag key {key!r}: gpufleet sets this tag itself, so a value here would be overwritten or clash; "
            f"rename it (gpufleet's own keys: {', '.join(sorted(GPUFLEET_TAG_KEYS))})"
        )
    return key


AwsTagKey = Annotated[str, AfterValidator(_aws_tag_key)]


class Metadata(Model):
    """Who owns the estate and how its spend is attributed."""

    name: Name = Field(description="Estate name; prefixes cloud resource names and the `cluster` tag.")
    environment: Name = Field(description="Environment (dev, staging, prod, ...); the `env` tag.")
    owner: str = Field(
        min_length=1, max_length=AWS_TAG_VALUE_MAX, description="Owning team or person; the `owner` tag."
    )
    cost_center: str = Field(
        min_length=1, max_length=AWS_TAG_VALUE_MAX, description="Cost centre spend is booked to; the `cost-center` tag."
    )
    tags: dict[AwsTagKey, TagValue] = Field(
        default_factory=dict,
        max_length=AWS_MAX_TAGS - GPUFLEET_TAGS,
        description=(
            f"Extra tags set on every taggable resource (in addition to the required ones): at most "
            f"{AWS_MAX_TAGS - GPUFLEET_TAGS}, since AWS allows {AWS_MAX_TAGS} a resource and gpufleet sets "
            f"{GPUFLEET_TAGS} itself."
        ),
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
