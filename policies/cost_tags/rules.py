"""Cost and ownership: required tags on every taggable AWS resource and on launched instances and volumes, cost
labels on namespaces and nodes, a budget cap on the stack's hourly cost at max size, and GPU instance types from
an allow-list. Check-list items A15 and A16 of docs/checklist.md.

Tags must be set explicitly on each resource: AWS provider `default_tags` are applied by the provider, never
show in a resource's `tags` input (https://www.pulumi.com/registry/packages/aws/api-docs/provider/#defaulttags;
tests/policies/test_rules.py shows it on a plan), so they do not count here.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import PolicyResource, ReportViolation, ResourceValidationArgs, StackValidationArgs

from model import catalog
from model.conventions import LABEL_PREFIX, REQUIRED_TAGS, TENANT_LABEL
from policies.common import (
    ADVISORY,
    LAUNCH_TEMPLATE,
    MANDATORY,
    NODE_GROUP,
    as_dict,
    as_list,
    config,
    get,
    k8s_labels,
    node_group_instance_type,
    node_view,
    resource_policy,
    schema,
    stack_policy,
)
from policies.cost_tags.taggable import taggable_types

PACK_NAME = "cost-tags"
DEFAULT_ENFORCEMENT = MANDATORY

DEFAULT_REQUIRED_LABELS = tuple(f"{LABEL_PREFIX}{k}" for k in REQUIRED_TAGS)
PROPAGATED_TO = ("instance", "volume")


def required_tags(args: ResourceValidationArgs | StackValidationArgs) -> list[str]:
    return [str(t) for t in config(args, "requiredTags", list(REQUIRED_TAGS))]


def _missing(tags: Any, required: list[str]) -> list[str]:
    have = as_dict(tags)
    return [k for k in required if not str(have.get(k) or "").strip()]


def tags_present(args: ResourceValidationArgs, report: ReportViolation) -> None:
    missing = _missing(args.props.get("tags"), required_tags(args))
    if missing:
        report(f"{args.resource_type.split(':')[-1]} {args.name} lacks tags {missing}", None)


def tags_propagate(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Launch templates tag the instances and volumes they launch; node groups use a launch template."""
    if args.resource_type == NODE_GROUP:
        if not as_dict(args.props.get("launchTemplate")):
            report(f"node group {args.name} has no launch template, so its instances and volumes go untagged", None)
        return
    required = required_tags(args)
    specs = {
        str(as_dict(s).get("resourceType")): as_dict(s).get("tags")
        for s in as_list(args.props.get("tagSpecifications"))
    }
    for resource_type in PROPAGATED_TO:
        if resource_type not in specs:
            report(f"launch template {args.name} has no tagSpecifications for {resource_type}", None)
            continue
        missing = _missing(specs[resource_type], required)
        if missing:
            report(f"launch template {args.name} tags {resource_type}s without {missing}", None)


def cost_labels(args: ResourceValidationArgs, report: ReportViolation) -> None:
    required = [str(k) for k in config(args, "requiredLabels", list(DEFAULT_REQUIRED_LABELS))]
    view = node_view(args.resource_type, args.props)
    if view is not None:
        labels, what = view.labels, f"node pool {view.pool or args.name}"
    else:
        labels = k8s_labels(args.props)
        if not labels.get(TENANT_LABEL):
            return  # cost labels are required on tenant namespaces
        what = f"namespace {get(args.props, 'metadata.name', args.name)}"
    missing = [k for k in required if not labels.get(k)]
    if missing:
        report(f"{what} lacks cost labels {missing}", None)


# -- A16 ----------------------------------------------------------------------------------------------------


def _region(r: PolicyResource, provider_regions: set[str]) -> str | None:
    """The resource's region input, else its provider's, else the one region all AWS providers share."""
    region = r.props.get("region") or (r.provider.props.get("region") if r.provider is not None else None)
    if region:
        return str(region)
    return next(iter(provider_regions)) if len(provider_regions) == 1 else None


def budget_cap(args: StackValidationArgs, report: ReportViolation) -> None:
    """The stack's max hourly cost stays within the configured cap. The figure is the cost envelope's at max size
    (`maxUsdPerHour`, written by gpufleet from the same computation as `gpufleet cost` and the PR comment's budget
    line: pools, storage and the rest of the bill); without it, Σ over GPU node groups of maxSize × catalog $/h."""
    cap = config(args, "budgetUsdPerHour", None)
    if cap is None:
        return
    envelope = config(args, "maxUsdPerHour", None)
    if envelope is not None:
        if float(envelope) > float(cap):
            report(
                f"max hourly cost ${float(envelope):,.2f} exceeds the budget cap ${float(cap):,.2f} "
                "(the cost envelope at max size: `gpufleet cost`)",
                None,
            )
        return
    total = 0.0
    parts: list[str] = []
    provider_regions = {str(p.props.get("region")) for p in args.resources if p.resource_type == "pulumi:providers:aws"}
    for ng in (r for r in args.resources if r.resource_type == NODE_GROUP):
        itype = node_group_instance_type(ng)
        if itype is None or itype not in catalog.instance_types():
            continue  # CPU system pools are outside the GPU catalog and the budget
        max_size = int(get(ng.props, "scalingConfig.maxSize", 0) or 0)
        region = _region(ng, provider_regions)
        price = catalog.price(itype, region) if region else None
        if price is None:
            # gpufleet names what is unpriced (`unpricedItems`, budget-priced reports it); a stack's own price is
            # not in the catalog, so this lower bound leaves the type out rather than call it unpriced.
            if config(args, "unpricedItems", None) is None:
                report(
                    f"node group {ng.name}: no catalog price for {itype} in {region}; the budget cannot be checked",
                    ng.urn,
                )
            continue
        total += max_size * price.usd_per_hour
        parts.append(f"{ng.name} {max_size} x {itype} @ ${price.usd_per_hour:.2f}")
    if total > float(cap):
        report(f"max hourly cost ${total:,.2f} exceeds the budget cap ${float(cap):,.2f} ({'; '.join(parts)})", None)


def budget_priced(args: StackValidationArgs, report: ReportViolation) -> None:
    """A budget can be checked only when everything it covers has a price: each item of the cost envelope
    without one (`unpricedItems`, written by gpufleet) is named, and the unchecked budget is a violation (a cap
    that passes on an unknown figure protects nothing). `budget-cap` reports a priced part already over the cap."""
    cap = config(args, "budgetUsdPerHour", None)
    missing = [str(x) for x in config(args, "unpricedItems", [])]
    if cap is None or not missing:
        return
    envelope = config(args, "maxUsdPerHour", None)
    if envelope is not None and float(envelope) > float(cap):
        return  # over the cap whatever the missing prices are: budget-cap reports it
    report(f"price missing for {', '.join(missing)}, cannot check the budget of ${float(cap):,.2f}/h", None)


def gpu_instance_allowlist(args: ResourceValidationArgs, report: ReportViolation) -> None:
    allowed = [str(t) for t in config(args, "allowedInstanceTypes", [])]
    if not allowed:
        return
    types = [str(t) for t in as_list(args.props.get("instanceTypes"))]
    if args.props.get("instanceType"):
        types.append(str(args.props["instanceType"]))
    for t in types:
        if t in catalog.instance_types() and t not in allowed:
            report(f"{args.name} uses GPU instance type {t}; allowed: {allowed}", None)


TAGS_CONFIG = schema(
    requiredTags={
        "type": "array",
        "items": {"type": "string"},
        "description": "Tag keys every taggable AWS resource must carry (metadata.required_tags).",
    }
)

ALL = [
    resource_policy(
        tags_present,
        name="required-tags",
        description="A15: every taggable AWS resource carries the required cost and ownership tags, set explicitly (CKV_AWS_153; provider default_tags do not count).",
        types=taggable_types(),
        enforcement=MANDATORY,
        config_schema=TAGS_CONFIG,
        remediation="Set metadata.owner/cost_center/environment (and metadata.tags for extra required tags) in the stack file; components tag from them.",
    ),
    resource_policy(
        tags_propagate,
        name="tags-propagate",
        description="A15: launch templates propagate the required tags to instances and volumes via tagSpecifications; node groups use a launch template (CKV_AWS_153).",
        types=(LAUNCH_TEMPLATE, NODE_GROUP),
        enforcement=MANDATORY,
        config_schema=TAGS_CONFIG,
        remediation="Node pools must use gpufleet's launch template, which tags instances and volumes from metadata.",
    ),
    resource_policy(
        cost_labels,
        name="cost-labels",
        description="A15: tenant namespaces and GPU nodes carry gpufleet.io/ cost labels (owner, cost-center, env, cluster, tenant).",
        types=(NODE_GROUP,),
        kinds=("Namespace", "Node"),
        enforcement=ADVISORY,
        config_schema=schema(
            requiredLabels={"type": "array", "items": {"type": "string"}, "description": "Cost label keys."}
        ),
        remediation="Cost labels come from metadata and tenants[].cost_center; a missing label is a gpufleet bug.",
    ),
    stack_policy(
        budget_cap,
        name="budget-cap",
        description="A16: the stack's hourly cost at max size (node groups' maxSize × catalog on-demand price) stays within the budget cap (Pulumi cost-control policies).",
        enforcement=MANDATORY,
        config_schema=schema(
            budgetUsdPerHour={"type": "number", "description": "Cap in USD per hour (policies.budget_usd_per_hour)."},
            maxUsdPerHour={
                "type": "number",
                "description": "The stack's cost envelope at max size in USD per hour (gpufleet writes it).",
            },
        ),
        remediation="Lower node_pools[].scaling.max or raise policies.budget_usd_per_hour in the stack file.",
    ),
    stack_policy(
        budget_priced,
        name="budget-priced",
        description="A16: every item the budget covers has a price: a budget that cannot be checked fails, never passes on $0.",
        enforcement=MANDATORY,
        config_schema=schema(
            budgetUsdPerHour={"type": "number", "description": "Cap in USD per hour (policies.budget_usd_per_hour)."},
            maxUsdPerHour={"type": "number", "description": "The envelope's priced part at max size in USD per hour."},
            unpricedItems={
                "type": "array",
                "items": {"type": "string"},
                "description": "Items of the cost envelope with no price (gpufleet writes them).",
            },
        ),
        remediation="Price each named item: on an aws site by a dated, sourced `prices` entry (`instance_type` or "
        "`service`) or `gpufleet catalog refresh --prices -r REGION [--from OFFER_FILE]`; a bare-metal pool by its "
        "`cost` (or its site's).",
    ),
    resource_policy(
        gpu_instance_allowlist,
        name="gpu-instance-allowlist",
        description="A16: GPU instance types come from the allow-list (policies.allowed_instance_types).",
        types=(NODE_GROUP, LAUNCH_TEMPLATE),
        enforcement=MANDATORY,
        config_schema=schema(
            allowedInstanceTypes={
                "type": "array",
                "items": {"type": "string"},
                "description": "GPU instance types allowed; empty allows every catalog type.",
            }
        ),
        remediation="Use an allowed instance_type, or add it to policies.allowed_instance_types.",
    ),
]
