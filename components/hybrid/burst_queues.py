"""BurstQueues: the cloud worker's queues, which admit work only inside a burst window and only up to its cap.

On the burst site's cluster, for the tenants with `burst: true`:
- a ResourceFlavor per burst pool, matching the pool's node labels and taints;
- a Cohort `<estate>-burst` holding the window's cap, from the catalog, and nothing outside windows;
- per tenant a ClusterQueue `<tenant>` with a ProvisioningRequest admission check, and LocalQueues `<tenant>` and
  `default`, the names the manager uses.

Why:
- The tenants' ClusterQueues hold no quota and borrow from the Cohort, so burst tenants share the window.
- The admission check makes Kueue ask the cluster autoscaler for nodes (components.aws.autoscaler), and admit
  only once they exist.
- The ClusterQueues' stop policy follows the window's phase (STOP_POLICY). While a window holds capacity, CronJobs
  apply the next phases' stop policies on time by themselves (burst_stop.BurstStop, PATCH_FORCE).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from components.hybrid.burst_stop import PATCH_FORCE, BurstStop, BurstStopArgs, Stop
from components.kubernetes import kueue
from components.kubernetes.admission import TenantTolerations, TenantVolumes
from components.kubernetes.cluster import ClusterStack
from components.kubernetes.tenancy import TenantBundle, TenantBundleArgs
from model import provisioning, queues
from model.burst import BurstQuota, WindowPhase, backstop, burst_pools, burst_quotas, stop_phase
from model.nodes import shared_pools
from model.spec import AwsSite, BurstWindow, EstateSpec, Tenant
from model.tags import Tags

BURST_SUFFIX = "-burst"
# The burst ClusterQueues' stopPolicy per window phase (model.burst). Draining: nothing new is admitted, and
# admitted work runs on to finish or checkpoint. Idle: admitted work is evicted; the manager takes it back and
# dispatches it again, on-prem first.
STOP_POLICY: dict[WindowPhase, str] = {"open": "None", "draining": "Hold", "idle": "HoldAndDrain"}


def stops(spec: EstateSpec, window: BurstWindow | None, now: dt.datetime) -> list[Stop]:
    """The in-cluster stops still ahead at `now`: Hold at the expiry, HoldAndDrain at the end of the grace.

    With no grace both fall in the same minute, and the two CronJobs would race: a Hold landing last would undo the
    drain. HoldAndDrain alone also stops admission, so then it is the only stop."""
    b = backstop(spec, window, now)
    if b is None:
        return []
    ahead = [Stop("hold", b.hold_at, STOP_POLICY["draining"])] if b.hold_at < b.stop_at else []
    ahead.append(Stop("drain", b.stop_at, STOP_POLICY["idle"]))
    return [s for s in ahead if s.at > now]


def burst_tenants(spec: EstateSpec) -> list[Tenant]:
    return [t for t in spec.tenants if t.burst]


def burst_cohort_name(spec: EstateSpec) -> str:
    return f"{spec.metadata.name}{BURST_SUFFIX}"


def capacity_check_name(spec: EstateSpec) -> str:
    """The ProvisioningRequest AdmissionCheck (and its config) of the burst site."""
    return f"{spec.metadata.name}-burst-capacity"


def _gpu_resources(site: AwsSite, quotas: list[BurstQuota]) -> list[str]:
    pools = {p.name: p for p in site.node_pools}
    return [queues.gpu_resource_name(site, pools[q.flavor]) for q in quotas]


def cohort_resource_groups(site: AwsSite, quotas: list[BurstQuota]) -> list[dict[str, Any]]:
    """The Cohort's resourceGroups: each burst flavor at the window's cap (zero outside windows), in the tenancy
    layer's resource order. The cap is the window's nodes x the instance's GPUs, vCPUs and memory."""
    gpus = _gpu_resources(site, quotas)
    flavors = [
        queues.FlavorQuotas(q.flavor, {"cpu": queues.Quota(q.cpu), "memory": queues.Quota(f"{q.memory_gib}Gi"),
                                      gpu: queues.Quota(q.gpu_units)})
        for q, gpu in zip(quotas, gpus, strict=True)
    ]  # fmt: skip
    groups: list[dict[str, Any]] = queues.cluster_queue_spec(
        namespace=None, cohort="", covered=queues.covered_resources(gpus), flavors=flavors
    )["resourceGroups"]
    return groups


def burst_cluster_queue_spec(
    spec: EstateSpec, site: AwsSite, tenant: Tenant, quotas: list[BurstQuota], phase: WindowPhase
) -> dict[str, Any]:
    """A burst tenant's ClusterQueue on the cloud worker: its namespace, the burst Cohort, no quota of its own, the
    capacity check, and the stop policy of the window's phase."""
    return queues.cluster_queue_spec(
        namespace=tenant.name,
        cohort=burst_cohort_name(spec),
        covered=queues.covered_resources(_gpu_resources(site, quotas)),
        flavors=[queues.FlavorQuotas(q.flavor, {}) for q in quotas],
        admission_checks={capacity_check_name(spec): ()},
        stop_policy=STOP_POLICY[phase],
    )


@dataclass(frozen=True)
class BurstQueuesArgs:
    spec: EstateSpec
    site: AwsSite
    tags: Tags
    stack: ClusterStack  # the site's Kubernetes stack (its Kueue release, tenants it already has)
    window: BurstWindow | None
    now: dt.datetime


class BurstQueues(pulumi.ComponentResource):
    """The cloud worker's burst flavors, Cohort, capacity check, and per burst tenant namespace and queues."""

    def __init__(self, name: str, args: BurstQueuesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:hybrid:BurstQueues", name, None, opts)
        spec, site = args.spec, args.site
        self._n, self._labels = name, args.tags.labels()
        self._release = args.stack.kueue.release
        quotas = burst_quotas(spec, args.window, args.now)
        phase = stop_phase(spec, args.window, args.now)
        flavors = [
            self._object(f"flavor-{p.name}", "ResourceFlavor", {"name": p.name}, queues.resource_flavor_spec(site, p))
            for p in burst_pools(spec)
        ]
        cohort = self._object(
            "cohort", "Cohort", {"name": burst_cohort_name(spec)}, {"resourceGroups": cohort_resource_groups(site, quotas)},
            flavors,
        )  # fmt: skip
        check_name = capacity_check_name(spec)
        config = self._object(
            "capacity-config", "ProvisioningRequestConfig", {"name": check_name},
            provisioning.config_spec(sorted(set(_gpu_resources(site, quotas)))),
        )  # fmt: skip
        check = self._object(
            "capacity-check", "AdmissionCheck", {"name": check_name}, provisioning.check_spec(check_name), [config]
        )
        tenants = burst_tenants(spec)
        if tenants and not args.stack.tenants:  # this cluster's tenant namespaces are all made here
            TenantTolerations(
                f"{name}-tenant-tolerations",
                args.tags,
                pulumi.ResourceOptions(parent=self),
                shared_pools(site.node_pools),
            )
            TenantVolumes(f"{name}-tenant-volumes", args.tags, pulumi.ResourceOptions(parent=self))
        ahead = stops(spec, args.window, args.now)
        # The stops come first and the queues depend on them: an `up` that fails creating them fails before a
        # queue opens. The stops name the queues, so they need nothing of them.
        stop = (
            [BurstStop(f"{name}-stop", BurstStopArgs(args.tags, [t.name for t in tenants], ahead, []),
                       pulumi.ResourceOptions(parent=self, depends_on=[self._release]))]
            if ahead and tenants
            else []
        )  # fmt: skip
        for t in tenants:
            bundle = args.stack.tenants.get(t.name) or TenantBundle(
                f"{name}-tenant-{t.name}",
                TenantBundleArgs(spec, site, t, args.tags),
                pulumi.ResourceOptions(parent=self),
            )
            labels = args.tags.labels(tenant=t.name, cost_center=t.cost_center)
            meta: dict[str, Any] = {"name": t.name, "labels": labels, **({"annotations": PATCH_FORCE} if ahead else {})}
            cq = self._object(
                f"cq-{t.name}", "ClusterQueue", meta, burst_cluster_queue_spec(spec, site, t, quotas, phase),
                [cohort, check, *stop],
            )  # fmt: skip
            for queue in (t.name, queues.DEFAULT_LOCAL_QUEUE):
                suffix = "" if queue == t.name else f"-{queue}"
                self._object(
                    f"lq-{t.name}{suffix}", "LocalQueue", {"name": queue, "namespace": t.name, "labels": labels},
                    {"clusterQueue": t.name}, [cq, bundle.namespace],
                )  # fmt: skip
        self.register_outputs({})

    def _object(
        self,
        name: str,
        kind: str,
        metadata: dict[str, Any],
        spec: dict[str, Any],
        deps: Sequence[pulumi.Resource] = (),
    ) -> pulumi.CustomResource:
        # a deleted ClusterQueue or flavor goes only once Kueue lets it (kueue.QUEUE_DELETE_TIMEOUT)
        timeouts = kueue.QUEUE_TIMEOUTS if kind in ("ClusterQueue", "ResourceFlavor") else None
        opts = pulumi.ResourceOptions(parent=self, depends_on=[self._release, *deps], custom_timeouts=timeouts)
        meta = {"labels": self._labels, **metadata}
        return kueue.kube_object(f"{self._n}-{name}", queues.KUEUE_API, kind, meta, {"spec": spec}, opts)
