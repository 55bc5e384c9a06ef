"""The secrets an estate reads from stack config, and the one message naming every one that is missing.

The program reads each with `pulumi.Config.get_secret` (components/program.py); `gpufleet validate` and the
program both check the whole list first, so a user sees every missing secret at once, with both ways to
provide it: a `secure:` placeholder (enough for an offline `gpufleet preview`) or the real value through
`pulumi config set --secret` (needed before `pulumi up`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from model import kinds
from model.spec import EstateSpec

PLACEHOLDER = "v1:REPLACEWITHPULUMICONFIGSETSECRET"


def required_secrets(spec: EstateSpec) -> list[str]:
    """Config keys (without the project prefix) the program reads as secrets, in first-use order."""
    keys: list[str] = []
    for site in spec.sites:
        keys += kinds.of(site).secrets(spec)
    if spec.burst is not None:
        keys.append(spec.burst.manager.kubeconfig_config)  # the MultiKueue manager cluster
    return list(dict.fromkeys(keys))


def missing_message(source: str, project: str, stack: str, missing: list[str]) -> str:
    """One message for every missing secret: where each goes and both ways to provide it."""
    listed = "\n".join(f"config.{project}:{k}" for k in missing)
    placeholders = "\n".join(f"  {project}:{k}:\n    secure: {PLACEHOLDER}" for k in missing)
    commands = "\n".join(f"pulumi config set --secret {k} -s {stack} < {k}.txt" for k in missing)
    return (
        f"{source}: {len(missing)} required secret(s) missing:\n{listed}\n"
        f"For an offline `gpufleet preview`, placeholders under `config:` are enough:\n{placeholders}\n"
        f"Before `pulumi up`, set the real values (encrypted into the stack file; a short value can follow "
        f"the key instead of a file):\n{commands}"
    )


def missing_secrets(spec: EstateSpec, has: Callable[[str], bool]) -> list[str]:
    return [k for k in required_secrets(spec) if not has(k)]


def secret_problem(value: object) -> str | None:
    """Why a stack file's config value cannot be a secret, or None. Pulumi reads a secret as a plain string or as
    `secure: <ciphertext>` (the form `pulumi config set --secret` writes); anything else reads as no value."""
    if isinstance(value, dict) and set(value) == {"secure"}:
        value = value["secure"]
        if isinstance(value, str) and value.strip():
            return None
        return f"`secure:` must hold the encrypted text `pulumi config set --secret` writes; found {repr(value)[:80]}"
    if isinstance(value, str) and value.strip():
        return None
    return f"a secret is a string or `secure: <ciphertext>`; found {repr(value)[:80]}"


def check_secrets(spec: EstateSpec, config: dict[str, Any], source: str, project: str, stack: str) -> None:
    """Raise a SpecError naming every secret the stack file's `config` lacks, and every one whose value is no
    secret (null, a number, a list, `secure:` without text)."""
    from model.inputs import SpecError

    missing = missing_secrets(spec, lambda k: f"{project}:{k}" in config)
    unusable = [
        f"{source}: config.{project}:{k}: {why}"
        for k in required_secrets(spec)
        if f"{project}:{k}" in config and (why := secret_problem(config[f"{project}:{k}"])) is not None
    ]
    problems = unusable + ([missing_message(source, project, stack, missing)] if missing else [])
    if problems:
        raise SpecError(problems)
