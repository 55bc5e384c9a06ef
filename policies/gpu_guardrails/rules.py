"""GPU guardrails: the GPU taint on every GPU pool, EFA pools in one subnet with a placement group or a
reservation and no more EFA interfaces than the instance has, training pools on EFA types on a fabric, a Kueue
Topology for multi-node training pools on a fabric, FSx next to the GPUs, time-slicing only on single-tenant
pools, GPU Operator driver settings that match the site, pinned chart versions and protected stateful storage, one
remediator per node. Check-list items T10, T12, T18, A11, A14, H1, H2, H7, H8 of docs/checklist.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from pulumi_policy import PolicyResource, ReportViolation, ResourceValidationArgs, StackValidationArgs

from model import catalog, kinds
from model.catalog import topology as ec2_topology
from model.conventions import (
    BURST_TAG,
    DEVICE_PLUGIN_CONFIG_LABEL,
    EFA_LABEL,
    FABRIC_LABEL,
    GPU_TAINT,
    HOSTNAME_LABEL,
    POOL_LABEL,
    REMEDIATOR_LABEL,
    ROLE_LABEL,
    site_kind_of_urn,
)
from model.spec import EKS_NODE_REPAIR, NO_REMEDIATOR
from policies.common import (
    ADVISORY,
    FSX_LUSTRE,
    HELM_RELEASE,
    LAUNCH_TEMPLATE,
    MANDATORY,
    NODE_GROUP,
    STATEFUL_STORAGE,
    as_dict,
    as_list,
    chart_name,
    config,
    dependents,
    get,
    is_false,
    is_gpu_node,
    k8s_name,
    launch_template_of,
    node_group_instance_type,
    node_view,
    objects,
    plain,
    resource_policy,
    schema,
    stack_policy,
)

PACK_NAME = "gpu-guardrails"
DEFAULT_ENFORCEMENT = MANDATORY

EFA_INTERFACE_TYPES = ("efa", "efa-only")
UNPINNED = re.compile(r"(^$|latest|[\^~*<>|]|\bx\b|\.x$)", re.IGNORECASE)


# -- T10 ----------------------------------------------------------------------------------------------------


def gpu_taint(args: ResourceValidationArgs, report: ReportViolation) -> None:
    view = node_view(args.resource_type, args.props)
    if view is not None and is_gpu_node(view) and not view.has_gpu_taint():
        report(f"GPU pool {view.pool or args.name} lacks taint {GPU_TAINT.key}={GPU_TAINT.value}:NoSchedule", None)


# -- H8 -----------------------------------------------------------------------------------------------------


def one_remediator(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """A node group with EKS node repair on must not carry nodes another remediator owns (their
    gpufleet.io/remediator label): both would reboot or replace the same node."""
    if args.resource_type != NODE_GROUP or not as_dict(args.props.get("nodeRepairConfig")).get("enabled"):
        return
    owner = str(as_dict(args.props.get("labels")).get(REMEDIATOR_LABEL, EKS_NODE_REPAIR))
    if owner != EKS_NODE_REPAIR:
        also = "no remediator" if owner == NO_REMEDIATOR else f"remediator {owner}"
        report(f"node group {args.name} has EKS node repair on, but its nodes are labelled for {also}", None)


# -- A14 ----------------------------------------------------------------------------------------------------


def efa_interfaces(props: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        as_dict(n)
        for n in as_list(props.get("networkInterfaces"))
        if as_dict(n).get("interfaceType") in EFA_INTERFACE_TYPES
    ]


def efa_placement(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if not efa_interfaces(args.props):
        return
    placement = as_dict(args.props.get("placement"))
    target = as_dict(get(args.props, "capacityReservationSpecification.capacityReservationTarget"))
    block = get(args.props, "instanceMarketOptions.marketType") == "capacity-block"
    if not (placement.get("groupName") or placement.get("groupId") or any(target.values()) or block):
        report(
            f"EFA launch template {args.name} has neither a cluster placement group nor a capacity reservation", None
        )


def efa_single_subnet(args: ResourceValidationArgs, report: ReportViolation) -> None:
    labels = as_dict(args.props.get("labels"))
    if labels.get(EFA_LABEL) != "true" and not labels.get(FABRIC_LABEL):
        return
    subnets = as_list(args.props.get("subnetIds"))
    if len(subnets) != 1:
        report(f"EFA node group {args.name} spans {len(subnets)} subnets; an EFA pool must sit in one subnet/AZ", None)


def _pool_instance_type(lt: PolicyResource, resources: list[PolicyResource]) -> str | None:
    if lt.props.get("instanceType"):
        return str(lt.props["instanceType"])
    for r in dependents(resources, lt, NODE_GROUP):  # a node group's launch template is among its dependencies
        if launch_template_of(r) is lt and as_list(r.props.get("instanceTypes")):
            return str(as_list(r.props["instanceTypes"])[0])
    return None


def efa_interface_count(args: StackValidationArgs, report: ReportViolation) -> None:
    """EFA interfaces on a launch template ≤ the instance type's maximum (catalog, from EC2 EfaInfo)."""
    for lt in (r for r in args.resources if r.resource_type == LAUNCH_TEMPLATE):
        count = len(efa_interfaces(lt.props))
        if not count:
            continue
        itype = _pool_instance_type(lt, args.resources)
        if itype is None or itype not in catalog.instance_types():
            report(f"EFA launch template {lt.name}: instance type {itype} is not in the GPU catalog", lt.urn)
            continue
        it = catalog.instance_type(itype)
        if not it.efa_supported or count > it.max_efa_interfaces:
            report(
                f"launch template {lt.name} has {count} EFA interfaces; {itype} supports {it.max_efa_interfaces}",
                lt.urn,
            )


def efa_training_pool_fabric(args: StackValidationArgs, report: ReportViolation) -> None:
    """A training node group on an EFA-capable instance type (catalog, EC2 EfaInfo) has EFA interfaces, i.e. a
    fabric. Without one its nodes get only the primary ENA interface: a multi-node job falls back to TCP sockets."""
    for ng in (r for r in args.resources if r.resource_type == NODE_GROUP):
        labels = as_dict(ng.props.get("labels"))
        itype = node_group_instance_type(ng)
        if labels.get(ROLE_LABEL) != "training" or itype is None or itype not in catalog.instance_types():
            continue
        if not catalog.instance_type(itype).efa_supported:
            continue
        lt = launch_template_of(ng)
        if lt is None or not efa_interfaces(lt.props):
            pool = labels.get(POOL_LABEL) or ng.name
            report(
                f"training pool {pool} runs on {itype}, which has EFA, but has no fabric: its nodes get no EFA "
                "interfaces, so multi-node jobs fall back to TCP",
                ng.urn,
            )


def _pool_max_nodes(nodes: list[PolicyResource]) -> int:
    """An EKS node group's maxSize, or the count of a bare-metal pool's Node patches."""
    return sum(
        int(get(n.props, "scalingConfig.maxSize", 1) or 1) if n.resource_type == NODE_GROUP else 1 for n in nodes
    )


def _labelled_layers(ng: PolicyResource) -> int:
    """The network-node layers EKS labels a node group's nodes with: its type's, in its provider's Region."""
    itype = node_group_instance_type(ng) or ""
    region = ng.provider.props.get("region") if ng.provider is not None else None
    return ec2_topology.network_layers(itype, str(region)) if region else ec2_topology.type_layers(itype)


def training_pool_topology(args: StackValidationArgs, report: ReportViolation) -> None:
    """A multi-node training pool on a fabric, where gangs run, has a Kueue flavor whose Topology has a level above
    single nodes: Kueue then packs a gang's pods close together on the fabric (kubernetes-sigs/kueue at
    versions.KUEUE, site/content/en/docs/concepts/topology_aware_scheduling.md). Pools Kueue does not schedule
    here (no flavor names the pool) and burst pools, whose MultiKueue flavors have no Topology yet, are left out.
    An EKS node group counts where its instance type carries EKS's network-node layers in its provider's Region
    (model.catalog.topology; the type alone when the provider names no Region): its flavor then has a Topology of
    them, behind a ProvisioningRequest check where it autoscales (model.queues.provisioned_pools)."""
    pools: dict[str, list[PolicyResource]] = {}
    for r in args.resources:
        view = node_view(r.resource_type, r.props)
        burst = BURST_TAG in as_dict(r.props.get("tags"))  # MultiKueue burst pools: no Topology yet
        if r.resource_type == NODE_GROUP and not _labelled_layers(r):
            continue  # EC2 describes no topology of the type in the Region: EKS labels no layer, nothing to remedy
        if view and view.labels.get(ROLE_LABEL) == "training" and view.labels.get(FABRIC_LABEL) and not burst:
            pools.setdefault(view.labels.get(POOL_LABEL) or r.name, []).append(r)
    flavors = {
        str(as_dict(get(f.props, "spec.nodeLabels")).get(POOL_LABEL)): f
        for f in objects(args.resources, "ResourceFlavor")
    }
    topologies = {k8s_name(t.props): t for t in objects(args.resources, "Topology")}
    for pool, nodes in sorted(pools.items()):
        flavor = flavors.get(pool)
        if flavor is None or _pool_max_nodes(nodes) <= 1:
            continue
        name = str(get(flavor.props, "spec.topologyName") or "")
        topology = topologies.get(name)
        levels = [get(lv, "nodeLabel") for lv in as_list(get(topology.props, "spec.levels"))] if topology else []
        if not [lv for lv in levels if lv != HOSTNAME_LABEL]:
            where = f"Topology {name} has no level above single nodes" if topology else "it names no Topology"
            report(
                f"training pool {pool} is on a fabric but Kueue cannot place its gangs by topology: {where}",
                flavor.urn,
            )


# -- A11 ----------------------------------------------------------------------------------------------------


def fsx_colocated(args: StackValidationArgs, report: ReportViolation) -> None:
    efa_subnets: set[str] = set()
    for ng in (r for r in args.resources if r.resource_type == NODE_GROUP):
        labels = as_dict(ng.props.get("labels"))
        if labels.get(EFA_LABEL) == "true" or labels.get(FABRIC_LABEL):
            efa_subnets |= {str(s) for s in as_list(ng.props.get("subnetIds"))}
    if not efa_subnets:
        return
    for fsx in (r for r in args.resources if r.resource_type == FSX_LUSTRE):
        subnets = {str(s) for s in as_list(fsx.props.get("subnetIds"))}
        if not subnets <= efa_subnets:
            report(
                f"FSx for Lustre {fsx.name} is in subnets {sorted(subnets)}, not the GPU pools' {sorted(efa_subnets)}",
                fsx.urn,
            )


# -- T12 ----------------------------------------------------------------------------------------------------


def _config_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(plain(value))


def device_plugin_configs(resources: list[PolicyResource]) -> dict[str, str]:
    """Named device-plugin configs (ConfigMap data and Helm values) -> their text."""
    out: dict[str, str] = {}
    for cm in objects(resources, "ConfigMap"):
        out.update({str(k): _config_text(v) for k, v in as_dict(cm.props.get("data")).items()})
    for rel in (r for r in resources if r.resource_type == HELM_RELEASE):
        values = as_dict(rel.props.get("values"))
        for path in ("devicePlugin.config.data", "config.map"):
            out.update({str(k): _config_text(v) for k, v in as_dict(get(values, path)).items()})
    return out


def _shares(text: str) -> bool:
    return "timeSlicing" in text or re.search(r"\bmps\b", text) is not None


def time_slicing_single_tenant(args: StackValidationArgs, report: ReportViolation) -> None:
    """A node on a time-slicing / MPS config is dedicated to one tenant (label + taint), or its pool is one the
    stack declares shared by trusted tenants who accept no isolation (`timeSlicingSharedPools`, written from
    sharing.shared_by; without that config every shared time-sliced pool is a violation)."""
    declared = {str(p) for p in as_dict(config(args, "timeSlicingSharedPools", {}))}
    configs = device_plugin_configs(args.resources)
    for r in args.resources:
        view = node_view(r.resource_type, r.props)
        if view is None or not view.labels.get(DEVICE_PLUGIN_CONFIG_LABEL):
            continue
        name = view.labels[DEVICE_PLUGIN_CONFIG_LABEL]
        if name in configs and not _shares(configs[name]):
            continue  # a named config that does not share GPUs
        if view.isolated_tenant() is None and view.pool not in declared:
            report(
                f"pool {view.pool or r.name} time-slices GPUs (config {name}) but is not dedicated to one tenant", r.urn
            )


def time_slicing_fail_requests(args: StackValidationArgs, report: ReportViolation) -> None:
    for name, text in device_plugin_configs(args.resources).items():
        if "timeSlicing" in text and not re.search(r"failRequestsGreaterThanOne\"?:\s*true", text):
            report(f"time-slicing config {name} does not set failRequestsGreaterThanOne: true", None)


# -- H1 / H2 / H7 -------------------------------------------------------------------------------------------


def operator_driver_site(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if chart_name(args.props) != "gpu-operator":
        return
    values = as_dict(args.props.get("values"))
    kind = site_kind_of_urn(args.urn)  # the site component's type token is in the URN of all below it
    if kind is None:
        return  # not under a gpufleet site: nothing says who brings the driver
    if kinds.image_ships_driver(kind):
        for part in ("driver", "toolkit"):
            if not is_false(get(values, f"{part}.enabled")):
                report(f"GPU Operator {args.name} on EKS must set {part}.enabled=false (the AMI ships it)", None)
    else:
        _operator_or_host_driver(args, values, report)


def _operator_or_host_driver(args: ResourceValidationArgs, values: dict[str, Any], report: ReportViolation) -> None:
    host_driver = args.name in [str(r) for r in config(args, "hostDriverReleases", [])]
    if host_driver:
        if not is_false(get(values, "driver.enabled")):
            report(
                f"GPU Operator {args.name} is on a site whose hosts bring the NVIDIA driver "
                "(driver_managed_by: host): it must set driver.enabled=false",
                None,
            )
        return
    if is_false(get(values, "driver.enabled")):
        report(f"GPU Operator {args.name} on bare metal must install the driver (driver.enabled)", None)
    if not get(values, "driver.version"):
        report(f"GPU Operator {args.name} on bare metal must pin driver.version", None)


def chart_versions_pinned(args: ResourceValidationArgs, report: ReportViolation) -> None:
    version = str(args.props.get("version") or "")
    if UNPINNED.search(version):
        report(f"Helm release {args.name} (chart {args.props.get('chart')}) is not pinned: version {version!r}", None)


def stateful_storage_protected(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if not args.opts.protect:
        report(f"{args.resource_type.split(':')[-1]} {args.name} is not protected (protect=True)", None)
    # The real engine does not pass retainOnDelete to analyzers; gpufleet check does (gpufleet/review/check.py).
    if getattr(args.opts, "retain_on_delete", None) is False:
        report(
            f"{args.resource_type.split(':')[-1]} {args.name} is not retained on delete (retain_on_delete=True)", None
        )


ALL = [
    resource_policy(
        gpu_taint,
        name="gpu-taint",
        description="T10: every GPU node pool carries nvidia.com/gpu=present:NoSchedule (EKS BPG aiml taints).",
        types=(NODE_GROUP,),
        kinds=("Node",),
        enforcement=MANDATORY,
        remediation="GPU pools get the taint from gpufleet; do not override node taints in the stack's labels.",
    ),
    resource_policy(
        one_remediator,
        name="one-remediator",
        description="H8: one remediator per node: EKS node repair stays off on node groups whose nodes another remediator owns (aicr #2650).",
        types=(NODE_GROUP,),
        enforcement=MANDATORY,
        remediation="Set node_pools[].health.remediator to the one remediator of the pool; gpufleet turns EKS node repair off for any other.",
    ),
    resource_policy(
        efa_placement,
        name="efa-placement",
        description="A14: EFA launch templates use a cluster placement group or a declared capacity reservation/block (EKS device-management-efa).",
        types=(LAUNCH_TEMPLATE,),
        enforcement=MANDATORY,
        remediation="Keep fabrics[].placement_group true, or buy capacity with capacity.type capacity-reservation/capacity-block.",
    ),
    resource_policy(
        efa_single_subnet,
        name="efa-single-subnet",
        description="A14: EFA node groups sit in exactly one subnet (one AZ) (EKS device-management-efa).",
        types=(NODE_GROUP,),
        enforcement=MANDATORY,
        remediation="Put the pool on an EFA fabric (node_pools[].fabric); the fabric pins one AZ and subnet.",
    ),
    stack_policy(
        efa_interface_count,
        name="efa-interface-count",
        description="A14: a launch template's EFA interfaces do not exceed the instance type's MaximumEfaInterfaces (catalog, EC2 EfaInfo).",
        enforcement=MANDATORY,
        remediation="Use an EFA-capable instance_type; the interface layout comes from the catalog.",
    ),
    stack_policy(
        efa_training_pool_fabric,
        name="efa-training-pool-fabric",
        description="A14: a training pool on an EFA-capable instance type (catalog, EC2 EfaInfo) sits on an EFA fabric, so its nodes get their EFA interfaces (EKS device-management-efa).",
        enforcement=ADVISORY,
        remediation="Add an efa fabric to the site (fabrics[]: kind efa, one availability_zone, a subnet_cidr) and set the pool's node_pools[].fabric to it.",
    ),
    stack_policy(
        training_pool_topology,
        name="training-pool-topology",
        description="T18: a multi-node training pool on a fabric has a Kueue flavor whose Topology has a level above single nodes (EKS network-node layers where the instance type carries them, inventory rack / leaf, NVLink clique), so Kueue places gangs close together (Kueue topology_aware_scheduling.md).",
        enforcement=MANDATORY,
        remediation="Give every server of the pool its rack and leaf in the inventory.",
    ),
    stack_policy(
        fsx_colocated,
        name="fsx-colocated",
        description="A11: FSx for Lustre sits in the GPU pools' subnet/AZ (EKS BPG aiml_storage).",
        enforcement=ADVISORY,
        remediation="Set storage[].fabric of the fsx-lustre tier to the training pools' fabric.",
    ),
    stack_policy(
        time_slicing_single_tenant,
        name="time-slicing-single-tenant",
        description="T12: time-slicing/MPS device-plugin configs only on pools dedicated to one tenant, or declared shared by trusted tenants that accept no memory or fault isolation (device-plugin README; EKS BPG aiml; GPU Operator gpu-sharing doc).",
        enforcement=MANDATORY,
        config_schema=schema(
            timeSlicingSharedPools={
                "type": "object",
                "additionalProperties": {"type": "array", "items": {"type": "string"}},
                "description": "Time-sliced pools shared by trusted tenants (sharing.shared_by with accept_no_isolation): pool -> tenants.",
            }
        ),
        remediation="Set dedicated_to on time-slicing pools; or, for trusted tenants only, sharing.shared_by with sharing.accept_no_isolation: true; or use sharing.mode mig where the GPU model has MIG.",
    ),
    stack_policy(
        time_slicing_fail_requests,
        name="time-slicing-fail-requests",
        description="T12: time-slicing configs set failRequestsGreaterThanOne: true (GPU Operator time-slicing doc).",
        enforcement=ADVISORY,
        remediation="The device-plugin config comes from gpufleet; a missing flag is a gpufleet bug.",
    ),
    resource_policy(
        operator_driver_site,
        name="operator-driver-site",
        description="H1/H2: GPU Operator driver settings match the site: driver and toolkit off on EKS accelerated AMIs, driver on and pinned on bare metal, driver off on bare-metal sites whose hosts bring it.",
        types=(HELM_RELEASE,),
        enforcement=MANDATORY,
        config_schema=schema(
            hostDriverReleases={
                "type": "array",
                "items": {"type": "string"},
                "description": "GPU Operator releases on bare-metal sites with kubernetes.driver_managed_by: host (driver.enabled=false allowed, required).",
            }
        ),
        remediation="Set kubernetes.driver_version on bare-metal sites; on AWS gpufleet turns the driver off; a site whose host image brings the driver sets kubernetes.driver_managed_by: host.",
    ),
    resource_policy(
        chart_versions_pinned,
        name="chart-versions-pinned",
        description="H7: every Helm release pins an exact chart version (no missing, `latest` or range versions).",
        types=(HELM_RELEASE,),
        enforcement=MANDATORY,
        remediation="Chart versions live in model/versions.py; pin an exact version there.",
    ),
    resource_policy(
        stateful_storage_protected,
        name="stateful-storage-protected",
        description="FSx, EFS and S3 storage is protected and retained on delete, so no up, refactor or destroy loses data (DESIGN storage tiers).",
        types=tuple(sorted(STATEFUL_STORAGE)),
        enforcement=MANDATORY,
        remediation="Stateful tiers are protected by gpufleet; to delete one, remove protection deliberately with `pulumi state unprotect`.",
    ),
]
