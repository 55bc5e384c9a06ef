"""Reading a stack's usage profile (`usage.<stack>.yaml`, gpufleet.review.cost.usage): every problem at once, and
a figure the estate cannot use is one (a figure that prices nothing would hide a typo)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from gpufleet.review.cost import kinds
from gpufleet.review.cost.usage import USAGE_DOC, UsageProfile
from model.load import SpecError, problem_line, read_yaml, validation_problems
from model.spec import EstateSpec


def usage_path(stack_file: Path, stack: str) -> Path:
    """Where a stack's usage profile lives: next to its stack file (not `Pulumi.*.yaml`, which names stacks)."""
    return stack_file.with_name(f"usage.{stack}.yaml")


def read_usage(path: Path, spec: EstateSpec) -> UsageProfile | None:
    """The usage profile at `path` for `spec`, None when there is no such file; a SpecError names every problem
    at once (file: YAML path: message)."""
    if not path.exists():
        return None
    doc = read_yaml(path, "usage profile not found") or {}  # the one bounded loader
    try:
        profile = UsageProfile.model_validate(doc)
    except ValidationError as e:
        raise SpecError(validation_problems(e, str(path), "", hint=f"{USAGE_DOC} lists the keys")) from None
    problems = [problem_line(str(path), "", where, message) for where, message in _unusable(profile, spec)]
    if problems:
        raise SpecError(problems)
    return profile


def _unusable(profile: UsageProfile, spec: EstateSpec) -> Iterator[tuple[str, str]]:
    """(YAML path, message) for every figure of `profile` that prices nothing in `spec`: a site or tier it does not
    have, a bare-metal site, a tier not billed on GB stored, NAT data on a site whose VPC gpufleet does not
    create."""
    sites = {s.name: s for s in spec.sites}
    for name, usage in profile.sites.items():
        site = sites.get(name)
        if site is None:
            yield f"sites.{name}", f"{name} is not a site of the estate (its sites: {', '.join(sites)})"
        else:
            yield from kinds.unusable_usage(site, usage)
