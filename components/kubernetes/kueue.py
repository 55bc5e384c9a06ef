"""Kueue on one site's cluster: the pinned chart with gpufleet's controller configuration, a ResourceFlavor per
node pool, the Topologies its flavors name (one per fabric whose nodes carry network labels, one of single
hosts), the ProvisioningRequest check of topology-aware flavors on autoscaled pools, and per tenant with GPU quota
on the site a ClusterQueue (in one cohort per estate) and a LocalQueue in the tenant's namespace.

- What to create is data from model.queues: flavors, topologies, ClusterQueue specs and the Configuration. That
  module holds the naming contract and the Kueue API facts behind them, each with its upstream source.
- This module only creates the objects, in order: the release first, then what its CRDs define.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.kubernetes import monitoring
from components.kubernetes.kueue_release import KUEUE_NAMESPACE as KUEUE_NAMESPACE
from components.kubernetes.kueue_release import namespace as namespace
from components.kubernetes.kueue_release import release as release
from model import clock, dra, provisioning
from model.blocks import closed_flavors
from model.frameworks import enabled as enabled_frameworks
from model.queues import (
    DEFAULT_LOCAL_QUEUE,
    KUEUE_API,
    Pool,
    controller_config,
    flavor_replaced_on,
    pods_ready_timeout,
    provisioned_pools,
    resource_flavor_spec,
    scheduled_pools,
    site_topologies,
    tenant_cluster_queue_spec,
    tenant_flavors,
    tenants_on_site,
)
from model.rdma import node_device_prefixes
from model.spec import (
    EstateSpec,
    Site,
    Tenant,
)
from model.tags import Tags

_PROVIDER_VERSION = importlib.metadata.version("pulumi_kubernetes")

# How long `up` waits for a ClusterQueue, ResourceFlavor or Topology it deletes (a replacement included) to go.
# Kueue keeps a ClusterQueue (its finalizer) while any workload holds quota in it (kubernetes-sigs/kueue at
# versions.KUEUE, pkg/cache/scheduler/cache.go ClusterQueueEmpty), a flavor while a ClusterQueue names it and a
# Topology while a flavor names it. pulumi-kubernetes gives up on a delete after 10 minutes unless the resource's
# customTimeouts say otherwise (pulumi/pulumi-kubernetes provider/pkg/await/await.go Deletion;
# https://www.pulumi.com/docs/iac/concepts/resources/options/customtimeouts/). docs/deploy.md documents the value.
QUEUE_DELETE_TIMEOUT = "2h"
QUEUE_TIMEOUTS = pulumi.CustomTimeouts(delete=QUEUE_DELETE_TIMEOUT)


def kube_object(
    name: str,
    api_version: str,
    kind: str,
    metadata: dict[str, Any],
    body: dict[str, Any],
    opts: pulumi.ResourceOptions,
) -> pulumi.CustomResource:
    """A Kubernetes object of a CRD kind with top-level fields beyond `spec` (WorkloadPriorityClass `value`).

    pulumi_kubernetes' Python CustomResource only accepts `spec`; this registers the same resource type
    (`kubernetes:<apiVersion>:<kind>`) with the whole body.
    """
    props = {"apiVersion": api_version, "kind": kind, "metadata": metadata, **body}
    return pulumi.CustomResource(
        f"kubernetes:{api_version}:{kind}",
        name,
        props,
        pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(version=_PROVIDER_VERSION)),
    )


# -- component -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KueueArgs:
    spec: EstateSpec
    site: Site
    tags: Tags
    namespaces: Mapping[str, pulumi.Resource]  # tenant -> its Namespace (LocalQueues live there)
    # What brings CRDs Kueue looks for when it starts (job operators, the ProvisioningRequest CRD); Kueue waits.
    crds: Sequence[pulumi.Resource] = ()
    provisioning_crd: bool = False  # `crds` include the ProvisioningRequest CRD
    metrics: pulumi.Resource | None = None  # the installed metrics stack, whose CRDs the ServiceMonitor needs


class Kueue(pulumi.ComponentResource):
    """Kueue on one cluster: its namespace (Pod Security restricted), the Helm release, a ResourceFlavor per
    scheduled pool, the Topologies they name, and per tenant with quota here a ClusterQueue and two
    LocalQueues in the tenant's namespace: `<tenant>` (the naming contract) and `default` (unlabelled jobs)."""

    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: KueueArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:kubernetes:Kueue", name, None, opts)
        self._name = name
        self._tags = args.tags
        self._labels = args.tags.labels()
        self.namespace = namespace(f"{name}-namespace", self._labels, pulumi.ResourceOptions(parent=self))
        self.release = self._release(args.spec, args.site, args.crds, args.provisioning_crd)
        crds = pulumi.ResourceOptions(parent=self, depends_on=[self.release])
        self.service_monitor: pulumi.CustomResource | None = None
        if args.site.kubernetes.monitoring.service_monitors:
            after = [self.release, *([args.metrics] if args.metrics is not None else [])]
            monitor = pulumi.ResourceOptions(parent=self, depends_on=after)
            self.service_monitor = self._service_monitor(args.site.kubernetes.monitoring.monitor_labels, monitor)
        self.topologies = {n: self._topology(n, spec, crds) for n, spec in site_topologies(args.site).items()}
        self.flavors = {p.name: self._flavor(args.site, p, crds) for p in scheduled_pools(args.site)}
        self.topology_check = self._topology_check(args.site, crds)
        self.cluster_queues: dict[str, pulumi.CustomResource] = {}
        self.local_queues: dict[str, pulumi.CustomResource] = {}
        self.default_local_queues: dict[str, pulumi.CustomResource] = {}
        for tenant in tenants_on_site(args.spec, args.site):
            self.cluster_queues[tenant.name] = self._cluster_queue(args.spec, args.site, tenant, crds)
            tenant_ns = args.namespaces.get(tenant.name)
            self.local_queues[tenant.name] = self._local_queue(tenant, tenant.name, tenant_ns)
            self.default_local_queues[tenant.name] = self._local_queue(tenant, DEFAULT_LOCAL_QUEUE, tenant_ns)
        self.register_outputs({})

    def _release(
        self, spec: EstateSpec, site: Site, crds: Sequence[pulumi.Resource], provisioning_crd: bool
    ) -> k8s.helm.v3.Release:
        frameworks = enabled_frameworks(site.kubernetes.job_frameworks)
        config = controller_config(
            site.kubernetes.monitoring.service_monitors,
            frameworks,
            excluded_resources=node_device_prefixes(spec),
            ready_timeout=pods_ready_timeout(spec, site),
            device_classes=bool(dra.rack_scale_pools(site)),
        )
        return release(
            f"{self._name}-release",
            config,
            provisioning_crd=provisioning_crd,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.namespace, *crds]),
        )

    def _object(
        self, name: str, kind: str, metadata: dict[str, Any], body: dict[str, Any], opts: pulumi.ResourceOptions
    ) -> pulumi.CustomResource:
        return kube_object(name, KUEUE_API, kind, {"labels": self._labels, **metadata}, body, opts)

    def _service_monitor(self, labels: Mapping[str, str], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
        """Kueue's metrics ServiceMonitor with the labels the site's Prometheus selects (see monitoring.py); after
        the release, which creates the Service it selects, and after the metrics stack gpufleet installs, whose
        chart brings its CRD (an existing operator's is there before `up`)."""
        return kube_object(
            f"{self._name}-service-monitor",
            monitoring.SERVICE_MONITOR_API,
            "ServiceMonitor",
            {
                "name": "kueue-controller-manager-metrics-monitor",
                "namespace": KUEUE_NAMESPACE,
                "labels": {**self._labels, **labels},
            },
            {"spec": monitoring.kueue_service_monitor_spec()},
            opts,
        )

    def _tenant_labels(self, tenant: Tenant) -> dict[str, str]:
        return self._tags.labels(tenant=tenant.name, cost_center=tenant.cost_center)

    def _topology(self, name: str, spec: dict[str, Any], opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
        """A Topology; its levels are immutable (the CRD's `self == oldSelf`, apis/kueue/v1beta2/topology_types.go at
        versions.KUEUE), so new levels replace it, deleted first (fixed name). Kueue keeps a Topology a flavor
        names (its resource-in-use finalizer, pkg/controller/tas/topology_controller.go): its flavors go with it."""
        replace = pulumi.ResourceOptions(
            replace_on_changes=["spec.levels"], delete_before_replace=True, custom_timeouts=QUEUE_TIMEOUTS
        )
        return self._object(
            f"{self._name}-topology-{name}",
            "Topology",
            {"name": name},
            {"spec": spec},
            pulumi.ResourceOptions.merge(opts, replace),
        )

    def _flavor(self, site: Site, pool: Pool, opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
        """A pool's ResourceFlavor, after its Topology and replaced with it. A change of its topologyName (set,
        moved or dropped), or one the API server refuses on a topology flavor, replaces it, deleted first since its
        name is fixed (model.queues.flavor_replaced_on); its ClusterQueues go with it (`_cluster_queue`)."""
        spec = resource_flavor_spec(site, pool)
        topology: list[pulumi.Resource] = [self.topologies[spec["topologyName"]]] if "topologyName" in spec else []
        replace = pulumi.ResourceOptions(
            replace_on_changes=flavor_replaced_on(spec),
            delete_before_replace=True,
            depends_on=topology,
            replace_with=topology,
            custom_timeouts=QUEUE_TIMEOUTS,
        )
        return self._object(
            f"{self._name}-flavor-{pool.name}",
            "ResourceFlavor",
            {"name": pool.name},
            {"spec": spec},
            pulumi.ResourceOptions.merge(opts, replace),
        )

    def _topology_check(self, site: Site, opts: pulumi.ResourceOptions) -> pulumi.CustomResource | None:
        """The ProvisioningRequest AdmissionCheck and its config guarding the topology-aware flavors of autoscaled
        pools (model.queues.provisioned_pools), when the site has any. The release waits for the ProvisioningRequest
        CRD (`KueueArgs.crds`), so these come after it."""
        if not provisioned_pools(site):
            return None
        name = provisioning.TOPOLOGY_CHECK
        # Every resource managed: a CPU-only pod set on these flavors needs its nodes asked for too (config_spec).
        config = self._object(f"{self._name}-topology-capacity-config", "ProvisioningRequestConfig", {"name": name},
                              {"spec": provisioning.config_spec()}, opts)  # fmt: skip
        after = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[config]))
        return self._object(f"{self._name}-topology-capacity-check", "AdmissionCheck", {"name": name},
                            {"spec": provisioning.check_spec(name)}, after)  # fmt: skip

    def _cluster_queue(
        self, spec: EstateSpec, site: Site, tenant: Tenant, opts: pulumi.ResourceOptions
    ) -> pulumi.CustomResource:
        # Replaced with any flavor it lists, and deleted first: Kueue keeps a flavor (its resource-in-use finalizer)
        # while a ClusterQueue names it (pkg/controller/core/resourceflavor_controller.go at versions.KUEUE), and
        # Pulumi deletes a replace_with dependent before a delete-before-replace target (pulumi/pulumi#20693).
        flavors: list[pulumi.Resource] = [self.flavors[p.name] for p in tenant_flavors(site, tenant)]
        checks = [self.topology_check] if self.topology_check is not None else []
        return self._object(
            f"{self._name}-cq-{tenant.name}",
            "ClusterQueue",
            {"name": tenant.name, "labels": self._tenant_labels(tenant)},
            {"spec": tenant_cluster_queue_spec(spec, site, tenant, closed_flavors(site, clock.now()))},
            pulumi.ResourceOptions.merge(
                opts,
                pulumi.ResourceOptions(
                    depends_on=[*flavors, *checks],
                    replace_with=flavors,
                    delete_before_replace=True,
                    custom_timeouts=QUEUE_TIMEOUTS,
                ),
            ),
        )

    def _local_queue(self, tenant: Tenant, name: str, namespace: pulumi.Resource | None) -> pulumi.CustomResource:
        deps: list[pulumi.Resource] = [self.release, self.cluster_queues[tenant.name]]
        if namespace is not None:
            deps.append(namespace)
        suffix = "" if name == tenant.name else f"-{name}"
        return self._object(
            f"{self._name}-lq-{tenant.name}{suffix}",
            "LocalQueue",
            {"name": name, "namespace": tenant.name, "labels": self._tenant_labels(tenant)},
            {"spec": {"clusterQueue": tenant.name}},
            pulumi.ResourceOptions(parent=self, depends_on=deps),
        )
