"""Shared helpers for the policy packs: reading Pulumi resource inputs, Kubernetes objects, nodes and config.

Rules see resource INPUTS with the engine's camelCase names (`scalingConfig.maxSize`, `metadataOptions.httpTokens`)
under `pulumi preview --policy-pack`, and the same names in `gpufleet check` (gpufleet/review/check.py builds the same
`ResourceValidationArgs` / `StackValidationArgs` from a Plan). Policies know nothing of components but the model:
the catalog and the shared keys in `model.conventions` (labels, taints, tag keys, type tokens, the
privileged-namespace register).

A rule is a plain function `fn(args, report_violation)`; `resource_policy` / `stack_policy` wrap it in the
pulumi_policy object with its id, description (which cites the check-list item of docs/checklist.md and the
Checkov id), default enforcement level, config schema and remediation text.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from model.conventions import (
    DEDICATED_TENANT_LABEL,
    GPU_PRESENT_LABEL,
    GPU_TAINT,
    HELM_RELEASE,
    NODE_GROUP,
    POOL_LABEL,
    SHARED,
    TENANT_LABEL,
    TENANT_NODE_LABEL,
    Taint,
)

MANDATORY = EnforcementLevel.MANDATORY
ADVISORY = EnforcementLevel.ADVISORY


# AWS resource types (pulumi-aws 7 type tokens)
EKS_CLUSTER = "aws:eks/cluster:Cluster"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
SG_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
SG_INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
SG_EGRESS_RULE = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
SUBNET = "aws:ec2/subnet:Subnet"
FSX_LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
EFS = "aws:efs/fileSystem:FileSystem"
S3_BUCKETS = frozenset({"aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2"})
S3_PUBLIC_ACCESS_BLOCK = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
S3_BUCKET_POLICY = "aws:s3/bucketPolicy:BucketPolicy"
STATEFUL_STORAGE = frozenset({FSX_LUSTRE, EFS, *S3_BUCKETS})

Validator = Callable[[ResourceValidationArgs, ReportViolation], None]
StackValidator = Callable[[StackValidationArgs, ReportViolation], None]


# ------------------------------------------------------------------------------------------- reading inputs


def get(obj: Any, path: str, default: Any = None) -> Any:
    """`get(props, "vpcConfig.endpointPublicAccess")`: walk mappings by dotted path; `default` when absent."""
    cur = obj
    for part in path.split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return default
        cur = cur[part]
    return default if cur is None else cur


def as_list(value: Any) -> list[Any]:
    """A list from a sequence input (plain lists and pulumi_policy's read-only proxies alike)."""
    if value is None:
        return []
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return list(value)
    return [value]


def plain(value: Any) -> Any:
    """Plain dicts and lists (for json.dumps and comparisons) from pulumi_policy's proxies."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [plain(v) for v in value]
    return value


def as_dict(value: Any) -> dict[str, Any]:
    return {str(k): v for k, v in value.items()} if isinstance(value, Mapping) else {}


def is_true(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.lower() == "true")


def is_false(value: Any) -> bool:
    return value is False or (isinstance(value, str) and value.lower() == "false")


def is_open_cidr(cidr: Any) -> bool:
    """True for 0.0.0.0/0 and ::/0 (any prefix length 0)."""
    try:
        return ipaddress.ip_network(str(cidr), strict=False).prefixlen == 0
    except ValueError:
        return False


def config(args: ResourceValidationArgs | StackValidationArgs, key: str, default: Any) -> Any:
    """A policy's config value (`--policy-pack-config` / spec.policies), or the pack default."""
    value = args.get_config().get(key)
    return default if value is None else value


# --------------------------------------------------------------------------------------- kubernetes objects


def kind(props: Mapping[str, Any]) -> str | None:
    k = props.get("kind")
    return str(k) if isinstance(k, str) else None


def k8s_name(props: Mapping[str, Any], fallback: str = "") -> str:
    return str(get(props, "metadata.name", fallback))


def k8s_namespace(props: Mapping[str, Any]) -> str | None:
    ns = get(props, "metadata.namespace")
    return str(ns) if ns is not None else None


def k8s_labels(props: Mapping[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in as_dict(get(props, "metadata.labels")).items()}


def chart_name(props: Mapping[str, Any]) -> str:
    """A Helm release's chart name, also when given as a URL (`oci://registry.k8s.io/kueue/charts/kueue`)."""
    return str(props.get("chart") or "").rstrip("/").rsplit("/", 1)[-1]


def is_kubernetes(resource_type: str) -> bool:
    return resource_type.startswith("kubernetes:") and resource_type != HELM_RELEASE


class _KindIndex:
    """Kubernetes objects of one resource list by kind (and by namespace and kind), tenant namespaces, and the
    resources that depend on or are parented by each URN: built once per list.

    Stack rules ask for objects of a kind, a tenant's namespace, or what depends on a resource, once per tenant or
    per object; scanning the whole plan each time made them quadratic at fleet scale."""

    def __init__(self, resources: list[PolicyResource]) -> None:
        self.resources = resources
        self._fingerprint = self._of(resources)
        self.by_kind: dict[str, list[PolicyResource]] = {}
        for r in resources:
            if is_kubernetes(r.resource_type):
                k = kind(r.props)
                if k is not None:
                    self.by_kind.setdefault(k, []).append(r)
        self.tenant_namespaces: dict[str, str] = {}
        for r in self.by_kind.get("Namespace", []):
            tenant = k8s_labels(r.props).get(TENANT_LABEL)
            if tenant:
                self.tenant_namespaces[k8s_name(r.props, r.name)] = tenant
        self.first_namespace: dict[str, str] = {}  # tenant -> its first namespace, as a scan would find it
        for ns, tenant in self.tenant_namespaces.items():
            self.first_namespace.setdefault(tenant, ns)
        self._by_namespace: dict[tuple[str | None, str], list[PolicyResource]] | None = None
        self._attached: dict[str, list[PolicyResource]] | None = None

    def attached(self, urn: str) -> list[PolicyResource]:
        """Resources (in list order, each once) with `urn` among their dependencies' URNs or as their parent's."""
        if self._attached is None:
            self._attached = {}
            for r in self.resources:
                urns = {d.urn for d in r.dependencies}
                if r.parent is not None:
                    urns.add(r.parent.urn)
                for u in urns:
                    self._attached.setdefault(u, []).append(r)
        return self._attached.get(urn, [])

    def in_namespace(self, namespace: str, kind: str) -> list[PolicyResource]:
        if self._by_namespace is None:
            self._by_namespace = {}
            for k, found in self.by_kind.items():
                for r in found:
                    self._by_namespace.setdefault((k8s_namespace(r.props), k), []).append(r)
        return self._by_namespace.get((namespace, kind), [])

    @staticmethod
    def _of(resources: list[PolicyResource]) -> tuple[int, int, int]:
        return (len(resources), id(resources[0]) if resources else 0, id(resources[-1]) if resources else 0)

    def describes(self, resources: list[PolicyResource]) -> bool:
        """The same list, not grown or shrunk since it was indexed (a changed list gets a fresh index)."""
        return self.resources is resources and self._fingerprint == self._of(resources)


_last_index: _KindIndex | None = None


def _index(resources: Iterable[PolicyResource]) -> _KindIndex | None:
    """The index of `resources` when it is a list (the stack's resources); None for other iterables."""
    global _last_index
    if not isinstance(resources, list):
        return None
    if _last_index is None or not _last_index.describes(resources):
        _last_index = _KindIndex(resources)
    return _last_index


def release_index() -> None:
    """Forget the last list's index, so the resources it holds are freed with the evaluation that made them
    (`gpufleet check` calls this when an evaluation ends; under the policy analyzer the index lives until another
    list is indexed or the analyzer exits with the preview or update)."""
    global _last_index
    _last_index = None


def objects(resources: Iterable[PolicyResource], *kinds: str) -> Iterator[PolicyResource]:
    """Kubernetes objects of the given kinds (by the `kind` input, so Patch resources and CRs count)."""
    idx = _index(resources)
    if idx is not None:
        for k in kinds:
            yield from idx.by_kind.get(k, [])
        return
    for r in resources:
        if is_kubernetes(r.resource_type) and kind(r.props) in kinds:
            yield r


def tenant_namespaces(resources: Iterable[PolicyResource]) -> dict[str, str]:
    """Namespace name -> tenant id, for every Namespace labelled tenant=<id>."""
    idx = _index(resources)
    if idx is not None:
        return dict(idx.tenant_namespaces)
    out: dict[str, str] = {}
    for r in objects(resources, "Namespace"):
        tenant = k8s_labels(r.props).get(TENANT_LABEL)
        if tenant:
            out[k8s_name(r.props, r.name)] = tenant
    return out


def expected_tenants(args: StackValidationArgs) -> list[str]:
    """Tenants from config (`tenants`, written from the stack's spec), else those the namespaces declare."""
    configured = config(args, "tenants", None)
    if configured is not None:
        return [str(t) for t in configured]
    return sorted(set(tenant_namespaces(args.resources).values()))


def namespace_of_tenant(args: StackValidationArgs, tenant: str) -> str | None:
    idx = _index(args.resources)
    if idx is not None:
        return idx.first_namespace.get(tenant)
    return next((ns for ns, t in tenant_namespaces(args.resources).items() if t == tenant), None)


def in_namespace(resources: Iterable[PolicyResource], namespace: str, *kinds: str) -> list[PolicyResource]:
    idx = _index(resources)
    if idx is not None:
        return [r for k in kinds for r in idx.in_namespace(namespace, k)]
    return [r for r in objects(resources, *kinds) if k8s_namespace(r.props) == namespace]


def dependents(resources: Iterable[PolicyResource], target: PolicyResource, *types: str) -> list[PolicyResource]:
    """Resources of the given type tokens (any, without `types`) that have `target` among their dependencies (by
    URN), in list order."""

    def depends(r: PolicyResource) -> bool:
        return (not types or r.resource_type in types) and any(d.urn == target.urn for d in r.dependencies)

    idx = _index(resources)
    return [r for r in (idx.attached(target.urn) if idx is not None else resources) if depends(r)]


def attached_to(resources: Iterable[PolicyResource], target: PolicyResource) -> list[PolicyResource]:
    """Resources that depend on `target` (it is in their dependencies) or are its children, in list order."""
    idx = _index(resources)
    candidates = idx.attached(target.urn) if idx is not None else resources
    return [r for r in candidates if target in r.dependencies or r.parent is target]


# ------------------------------------------------------------------------------------------------ nodes


def taints(values: Any) -> list[Taint]:
    """EKS node-group taints (`NO_SCHEDULE`) and Kubernetes taints (`NoSchedule`) in one form."""
    return [Taint.of(t) for t in as_list(values) if isinstance(t, Mapping)]


def has_taint(found: list[Taint], key: str, value: str, effect: str = "NoSchedule") -> bool:
    return any(t.key == key and t.value == value and t.effect == effect for t in found)


@dataclass(frozen=True)
class NodeView:
    """The node facts a rule needs, from an EKS node group or a Kubernetes Node patch."""

    source: str  # "nodegroup" | "node"
    labels: dict[str, str]
    taints: list[Taint]
    instance_types: list[str]

    @property
    def pool(self) -> str | None:
        return self.labels.get(POOL_LABEL)

    @property
    def dedicated_tenant(self) -> str | None:
        dedicated = self.labels.get(DEDICATED_TENANT_LABEL)
        return self.labels.get(TENANT_NODE_LABEL) or (dedicated if dedicated != SHARED else None)

    def isolated_tenant(self) -> str | None:
        """The one tenant these nodes are reserved for: a tenant=<id>:NoSchedule taint that agrees with the
        tenant node label when there is one (EKS node groups cannot carry node-restriction labels)."""
        tainted = {t.value for t in self.taints if t.key == TENANT_LABEL and t.effect == "NoSchedule"}
        if len(tainted) != 1:
            return None
        tenant = tainted.pop()
        return tenant if self.dedicated_tenant in (None, tenant) else None

    def has_gpu_taint(self) -> bool:
        return has_taint(self.taints, GPU_TAINT.key, GPU_TAINT.value, GPU_TAINT.effect)


def node_view(resource_type: str, props: Mapping[str, Any]) -> NodeView | None:
    if resource_type == NODE_GROUP:
        return NodeView(
            "nodegroup",
            {k: str(v) for k, v in as_dict(props.get("labels")).items()},
            taints(props.get("taints")),
            [str(t) for t in as_list(props.get("instanceTypes"))],
        )
    if is_kubernetes(resource_type) and kind(props) == "Node":
        return NodeView("node", k8s_labels(props), taints(get(props, "spec.taints")), [])
    return None


def launch_template_of(ng: PolicyResource) -> PolicyResource | None:
    """A node group's launch template: the one its `launchTemplate` names, else the one it depends on that
    shares its parent (node groups may also depend on other pools' templates through depends_on)."""
    lts = [d for d in ng.dependencies if d.resource_type == LAUNCH_TEMPLATE]
    ref = as_dict(ng.props.get("launchTemplate"))
    for lt in lts:
        if (ref.get("id") and ref.get("id") == lt.props.get("id")) or (
            ref.get("name") and ref.get("name") == lt.props.get("name")
        ):
            return lt
    siblings = [lt for lt in lts if ng.parent is not None and lt.parent is ng.parent]
    if len(siblings) == 1:
        return siblings[0]
    return lts[0] if len(lts) == 1 else None


def node_group_instance_type(ng: PolicyResource) -> str | None:
    types = as_list(ng.props.get("instanceTypes"))
    if types:
        return str(types[0])
    lt = launch_template_of(ng)
    return str(lt.props["instanceType"]) if lt is not None and lt.props.get("instanceType") else None


def is_gpu_node(view: NodeView) -> bool:
    from model import catalog

    if view.labels.get(GPU_PRESENT_LABEL) == "true":
        return True
    return any(t in catalog.instance_types() for t in view.instance_types)


# -------------------------------------------------------------------------------------------- wrappers


class ScopedResourcePolicy(ResourceValidationPolicy):
    """A resource policy whose rule runs only on resources of some type tokens or Kubernetes kinds.

    `applies` is the one test of that scope: the policy's validate calls it, and `gpufleet check` calls it on plain
    plan inputs to skip building arguments for resources the rule would ignore."""

    def __init__(self, *, types: frozenset[str], kinds: frozenset[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.types = types
        self.kinds = kinds

    def applies(self, resource_type: str, props: Mapping[str, Any]) -> bool:
        return resource_type in self.types or (
            bool(self.kinds) and is_kubernetes(resource_type) and kind(props) in self.kinds
        )


def resource_policy(
    fn: Validator,
    *,
    name: str,
    description: str,
    types: Iterable[str] | None = None,
    kinds: Iterable[str] | None = None,
    enforcement: EnforcementLevel,
    remediation: str,
    config_schema: PolicyConfigSchema | None = None,
) -> ScopedResourcePolicy:
    """Wrap a rule function; it only runs on resources of `types` (type tokens) or Kubernetes `kinds`."""

    def validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
        if policy.applies(args.resource_type, args.props):
            fn(args, report)

    validate.__name__ = fn.__name__
    policy = ScopedResourcePolicy(
        types=frozenset(types or ()),
        kinds=frozenset(kinds or ()),
        name=name,
        description=description,
        validate=validate,
        enforcement_level=enforcement,
        config_schema=config_schema,
        remediation_steps=remediation,
    )
    return policy


def stack_policy(
    fn: StackValidator,
    *,
    name: str,
    description: str,
    enforcement: EnforcementLevel,
    remediation: str,
    config_schema: PolicyConfigSchema | None = None,
) -> StackValidationPolicy:
    return StackValidationPolicy(
        name=name,
        description=description,
        validate=fn,
        enforcement_level=enforcement,
        config_schema=config_schema,
        remediation_steps=remediation,
    )


def schema(**properties: dict[str, Any]) -> PolicyConfigSchema:
    return PolicyConfigSchema(properties=properties)


TENANTS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string"},
    "description": "Tenant ids of the estate (written from spec.tenants); empty: those the namespaces declare.",
}
