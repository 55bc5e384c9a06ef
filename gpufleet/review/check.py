"""Evaluate the policy packs' rule objects over a Plan, exactly as `pulumi preview --policy-pack` would.

The same `ResourceValidationPolicy` / `StackValidationPolicy` objects from `policies/<pack>/rules.py` run here,
built into pulumi_policy's public argument objects (`ResourceValidationArgs` over
`unknown_checking_proxy(deserialize_properties(inputs))`, `StackValidationArgs`): resource policies get each
resource's inputs with its options and provider; stack policies get every resource with parent and dependencies
linked. Pack config comes from the stack's spec (spec.policies, metadata.required_tags, the tenants) and is the
same document `pack_config()` writes for `pulumi preview --policy-pack-config`, so both agree.

Differences from the real engine, on purpose: stack policies run here on every check (the engine runs them only
during `up`, over outputs); and `retain_on_delete` reaches the rules here (the engine does not pass it).
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import json
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, cast

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyCustomTimeouts,
    PolicyProviderResource,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.policy import _NotApplicableError
from pulumi_policy.proxy import UnknownValueError, unknown_checking_proxy

from gpufleet.engine.plan import Plan, PlanResource
from gpufleet.engine.synth import collector_paused
from gpufleet.review.findings import Enforcement, Finding, Findings
from model import conventions, kinds
from model.cni import k8s_provider_name, site_cni
from model.load import ESTATE_KEY, SpecError, StackFile, read_stack
from model.spec import EstateSpec
from model.tenant_s3 import declared_grants
from policies.common import ScopedResourcePolicy, is_kubernetes, kind, release_index

# The pack folders under policies/ (each an importable package with rules.py). Kept here, not in
# policies/__init__.py: the editable install registers `policies` as a namespace package, whose __init__ never runs.
PACK_FOLDERS: tuple[str, ...] = ("tenancy", "segmentation", "cost_tags", "gpu_guardrails")


@dataclass(frozen=True)
class Pack:
    folder: str  # policies/<folder>
    name: str  # the PolicyPack name
    default: EnforcementLevel
    policies: list[Policy]


def packs() -> list[Pack]:
    out = []
    for folder in PACK_FOLDERS:
        rules: ModuleType = importlib.import_module(f"policies.{folder}.rules")
        out.append(Pack(folder, rules.PACK_NAME, rules.DEFAULT_ENFORCEMENT, list(rules.ALL)))
    return out


def rule_ids() -> set[str]:
    return {p.name for pack in packs() for p in pack.policies}


def scope() -> str:
    """What a check covers, for the verdict line: "<n> rules in <m> packs"."""
    all_packs = packs()
    return f"{sum(len(p.policies) for p in all_packs)} rules in {len(all_packs)} packs"


# -- config ------------------------------------------------------------------------------------------------


def _settings(spec: EstateSpec, max_usd_per_hour: float | None = None) -> dict[str, Any]:
    """Config values by key, from the spec; each policy takes the keys its config schema declares."""
    values: dict[str, Any] = {
        "tenants": [t.name for t in spec.tenants],
        "requiredTags": list(spec.metadata.required_tags),
        "allowedInstanceTypes": list(spec.policies.allowed_instance_types),
        # Only the explicit exception list: a pool with pods_need_imds but no exception is what the rule catches.
        "imdsHopLimitExceptions": list(spec.policies.imds_hop_limit_exceptions),
    }
    # GPU Operator releases whose site's host image brings the driver (operator-driver-site allows driver off).
    values["hostDriverReleases"] = sorted(
        conventions.gpu_operator_release_name(s.name) for s in spec.sites if kinds.of(s).driver == "host"
    )
    # Time-sliced pools trusted tenants declared they share, accepting no isolation (time-slicing-single-tenant).
    values["timeSlicingSharedPools"] = {
        p.name: list(p.sharing.shared_by) for _, p in spec.pools() if p.sharing.shared_by
    }
    # S3 grants each tenant declares (untrusted-tenant-s3-declared): `<bucket>/<prefix>`.
    values["tenantS3Grants"] = {t.name: declared_grants(t) for t in spec.tenants if t.s3 is not None}
    # The CNI of every cluster (tenant-networkpolicy-enforced), by the name of its Kubernetes provider.
    values["networkPolicyCni"] = {k8s_provider_name(s.name): cni for s in spec.sites if (cni := site_cni(s))}
    if spec.policies.budget_usd_per_hour is not None:
        values["budgetUsdPerHour"] = spec.policies.budget_usd_per_hour
        # One max hourly cost: the envelope's (the figure `gpufleet cost` and the comment's budget line show).
        from gpufleet.review.cost.envelope import estate_cost

        cost = estate_cost(spec)
        total = cost.total()
        if max_usd_per_hour is None:
            max_usd_per_hour = cost.budget_hour()
        if max_usd_per_hour is not None:
            values["maxUsdPerHour"] = round(max_usd_per_hour, 4)
        if total.no_price:
            values["unpricedItems"] = list(total.no_price)
    values["privilegedNamespaces"] = sorted(conventions.PRIVILEGED_NAMESPACES)
    return values


def pack_config(spec: EstateSpec, pack: Pack, max_usd_per_hour: float | None = None) -> dict[str, Any]:
    """The `--policy-pack-config` document of one pack for this stack: per policy its enforcement and knobs."""
    values = _settings(spec, max_usd_per_hour)
    doc: dict[str, Any] = {}
    for policy in pack.policies:
        entry: dict[str, Any] = {}
        if policy.config_schema is not None:
            entry.update({k: values[k] for k in policy.config_schema.properties if k in values})
        override = spec.policies.enforcement.get(policy.name)
        if override is not None or entry:
            # Always explicit: an analyzer configured for a policy without a level would fall back to advisory.
            entry["enforcementLevel"] = override or (policy.enforcement_level or pack.default).value
            doc[policy.name] = entry
    return doc


def write_configs(spec: EstateSpec, out_dir: Path) -> list[Path]:
    """One `<folder>.json` per pack, for `pulumi preview --policy-pack policies/<folder> --policy-pack-config`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for pack in packs():
        path = out_dir / f"{pack.folder}.json"
        path.write_text(json.dumps(pack_config(spec, pack), indent=1, sort_keys=True) + "\n")
        written.append(path)
    return written


def check_overrides(spec: EstateSpec, stack_file: StackFile) -> None:
    """Enforcement overrides must name rules the packs have (SpecError naming the file and YAML path if not)."""
    unknown = sorted(set(spec.policies.enforcement) - rule_ids())
    if unknown:
        known = ", ".join(sorted(rule_ids()))
        raise SpecError(
            [
                f"{stack_file.path}: config.{ESTATE_KEY}.policies.enforcement.{r}: no policy rule has this id; "
                f"known: {known}"
                for r in unknown
            ]
        )


def load_spec(project: Path, stack: str) -> EstateSpec:
    """The stack's estate, with enforcement overrides checked against the packs' rule ids (SpecError if not)."""
    stack_file = read_stack(project, stack)
    spec, _, _ = stack_file.contents()
    check_overrides(spec, stack_file)  # as gpufleet.review.stack_file.judged, which asks this module
    return spec


# -- policy arguments from a Plan -----------------------------------------------------------------------------


class _Options(PolicyResourceOptions):
    """Resource options as the engine passes them, plus retain_on_delete (which only gpufleet check knows)."""

    retain_on_delete: bool

    def __init__(self, r: PlanResource, parent_urn: str | None) -> None:
        super().__init__(
            r.protect, list(r.ignore_changes), None, list(r.aliases), PolicyCustomTimeouts(0, 0, 0), [], parent_urn
        )
        self.retain_on_delete = r.retain_on_delete


@dataclass
class _View:
    """Policy arguments for a plan's resources, each built once (rules get read-only proxies, so sharing is safe)."""

    plan: Plan

    def __post_init__(self) -> None:
        self._prefix = f"urn:pulumi:{self.plan.stack}::{self.plan.project}::"
        self._props: dict[str, Any] = {}

    def urn(self, key: str) -> str:
        return self._prefix + key

    def key(self, urn: str | None) -> str | None:
        return urn[len(self._prefix) :] if urn and urn.startswith(self._prefix) else urn or None

    def props(self, r: PlanResource) -> Any:
        props = self._props.get(r.key)
        if props is None:
            props = self._props[r.key] = unknown_checking_proxy(deserialize_properties(r.inputs))
        return props

    def provider(self, r: PlanResource) -> PolicyProviderResource | None:
        if r.provider is None:
            return None
        p = self.plan.get(r.provider)
        return PolicyProviderResource(p.type, self.props(p), self.urn(p.key), p.name)

    def opts(self, r: PlanResource) -> _Options:
        return _Options(r, self.urn(r.parent) if r.parent else None)

    @functools.cached_property
    def _resource_parts(self) -> list[tuple[PlanResource, Any, str, _Options, PolicyProviderResource | None]]:
        return [(r, self.props(r), self.urn(r.key), self.opts(r), self.provider(r)) for r in self.plan.resources]

    @functools.cached_property
    def _positions(self) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
        """Plan positions of the resources by type token, and of the Kubernetes objects by kind."""
        by_type: dict[str, list[int]] = {}
        by_kind: dict[str, list[int]] = {}
        for i, r in enumerate(self.plan.resources):
            by_type.setdefault(r.type, []).append(i)
            if is_kubernetes(r.type) and (k := kind(r.inputs)) is not None:
                by_kind.setdefault(k, []).append(i)
        return by_type, by_kind

    def _scope(self, policy: ScopedResourcePolicy) -> list[int]:
        """Plan positions of the resources a scoped policy may apply to (those of its types and kinds), in order."""
        by_type, by_kind = self._positions
        found = {i for t in policy.types for i in by_type.get(t, ())}
        found.update(i for k in policy.kinds for i in by_kind.get(k, ()))
        return sorted(found)

    def resource_args(
        self, config: dict[str, Any] | None, policy: ResourceValidationPolicy
    ) -> Iterator[tuple[PlanResource, ResourceValidationArgs]]:
        """The validation args, with one policy's config, of every resource the policy applies to (a scoped
        policy ignores the others, so they are skipped here without building their args), in plan order."""
        parts = self._resource_parts
        if isinstance(policy, ScopedResourcePolicy):
            candidates = [parts[i] for i in self._scope(policy)]
            selected = [p for p in candidates if policy.applies(p[0].type, p[0].inputs)]
        else:
            selected = parts
        for r, props, urn, opts, provider in selected:
            yield r, ResourceValidationArgs(r.type, props, urn, r.name, opts, provider, config)

    def stack_resources(self) -> list[PolicyResource]:
        by_key = {
            r.key: PolicyResource(r.type, props, urn, r.name, opts, provider, None, [], {})
            for r, props, urn, opts, provider in self._resource_parts
        }
        for r in self.plan.resources:
            pr = by_key[r.key]
            pr.parent = by_key.get(r.parent) if r.parent else None
            pr.dependencies = [by_key[d] for d in r.dependencies if d in by_key]
        return list(by_key.values())


def _level(policy: Policy, pack: Pack, config_doc: dict[str, Any]) -> EnforcementLevel:
    override = config_doc.get(policy.name, {}).get("enforcementLevel")
    if override is not None:
        return EnforcementLevel(override)
    return policy.enforcement_level or pack.default


def _run(result: Awaitable[Any] | None) -> None:
    if result is not None:
        asyncio.run(cast(Any, result))


@dataclass
class _Collector:
    pack: Pack
    policy: Policy
    enforcement: Enforcement
    findings: list[Finding]
    view: _View

    def add(self, message: str, resource: str | None) -> None:
        remediation = self.policy.remediation_steps or ""
        self.findings.append(
            Finding(self.pack.name, self.policy.name, self.enforcement, message, resource, remediation)
        )

    def for_resource(self, key: str) -> Callable[..., None]:
        return lambda message, urn=None: self.add(message, key)

    def for_stack(self, message: str, urn: str | None = None) -> None:
        self.add(message, self.view.key(urn))

    def guard(self, result: Callable[[], Awaitable[Any] | None]) -> None:
        try:
            _run(result())
        except _NotApplicableError:
            return
        except UnknownValueError as e:
            self.findings.append(Finding(self.pack.name, self.policy.name, "advisory", f"can't run: {e.message}"))


def evaluate(plan: Plan, spec: EstateSpec, max_usd_per_hour: float | None = None) -> Findings:
    """Every pack's policies over the plan, with the stack's config and enforcement overrides; `max_usd_per_hour`
    is the review's cost envelope at max size (burst window and usage profile included), else computed here."""
    return run(plan, {pack.name: pack_config(spec, pack, max_usd_per_hour) for pack in packs()})


def run(plan: Plan, configs: dict[str, dict[str, Any]] | None = None, only: set[str] | None = None) -> Findings:
    """The packs' policies (or only the rule ids in `only`) over the plan; `configs` maps a PolicyPack name to
    its `--policy-pack-config` document (per policy: enforcementLevel and config properties)."""
    with collector_paused():  # every resource's proxies live until the end (see collector_paused)
        try:
            return _evaluate(plan, configs, only)
        finally:
            release_index()  # the packs' index of the stack's resources: freed now, not traversed by the collector


def _evaluate(plan: Plan, configs: dict[str, dict[str, Any]] | None, only: set[str] | None) -> Findings:
    view = _View(plan)
    stack_resources: list[PolicyResource] | None = None
    findings: list[Finding] = []
    for pack in packs():
        config_doc = (configs or {}).get(pack.name, {})
        for policy in pack.policies:
            if only is not None and policy.name not in only:
                continue
            level = _level(policy, pack, config_doc)
            if level is EnforcementLevel.DISABLED:
                continue
            enforcement: Enforcement = "advisory" if level is EnforcementLevel.ADVISORY else "mandatory"
            config = {k: v for k, v in config_doc.get(policy.name, {}).items() if k != "enforcementLevel"} or None
            out = _Collector(pack, policy, enforcement, findings, view)
            if isinstance(policy, ResourceValidationPolicy):
                for r, args in view.resource_args(config, policy):
                    out.guard(functools.partial(policy.validate, args, out.for_resource(r.key)))
            elif isinstance(policy, StackValidationPolicy):
                if stack_resources is None:
                    stack_resources = view.stack_resources()
                out.guard(
                    functools.partial(policy.validate, StackValidationArgs(stack_resources, config), out.for_stack)
                )
    return Findings(findings)
