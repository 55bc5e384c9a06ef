"""KueueManagerStack: the MultiKueue manager of a hybrid estate, where tenants submit their jobs.

On the manager cluster (`burst.manager`, an existing small cluster reached by its kubeconfig):
- Kueue with the MultiKueue incremental dispatcher, and exactly the job frameworks every worker serves, with the
  operators they need;
- per worker, a kubeconfig Secret and a MultiKueueCluster named after the site;
- per order of sites (model.dispatch), a MultiKueueConfig listing them in that order, and its AdmissionCheck;
- per tenant, a namespace, a ClusterQueue `<tenant>` carrying its order's check, and LocalQueues `<tenant>` and
  `default`.

Why:
- Queue and namespace names match every worker's, because MultiKueue creates its copies there under the same
  names.
- A tenant's quota here is the sum of its quotas on its workers (`manager_quota`).
- The window is not the manager's business. Outside a window, work waits on the workers until one admits it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.hybrid.access import KUBECONFIG_KEY, assemble
from components.kubernetes import kueue
from components.kubernetes.job_operators import JobOperators
from components.kubernetes.priorities import Priorities, PrioritiesArgs
from components.kubernetes.tenancy import RBAC_API_GROUP, ROLE_RULES, namespace_labels
from model import dispatch, queues
from model.frameworks import operators
from model.rdma import node_device_prefixes
from model.spec import EstateSpec, Tenant
from model.tags import Tags

MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
DISPATCH_FLAVOR = "dispatch"
DISPATCH_NODE_LABEL = "kueue.gpufleet.io/dispatch"  # the manager's TAS flavor needs a node label; none carries it


def kubeconfig_secret_name(site: str) -> str:
    return f"{site}-multikueue-kubeconfig"


def manager_quota(spec: EstateSpec, tenant: Tenant) -> dict[str, int | str]:
    """What the tenant may use on all its workers together, per resource, on the one `dispatch` flavor.

    The manager reserves quota before it dispatches, and "ideally, the quota in the manager cluster should equal the
    total quota available in all worker clusters" (kueue site/content/en/docs/concepts/multikueue.md at the pinned
    tag, versions.KUEUE). So it is the sum, over the tenant's workers, of its GPU ceiling there (nominal +
    borrowing; on the burst site the burst pools at their max) and its CPU and memory there
    (model.queues.cpu_memory_ceiling).
    """
    sites = dispatch.tenant_workers(spec, tenant)
    gpus: dict[str, int] = {}
    cpu = memory = 0
    for site in sites:
        for resource, n in queues.gpu_quota_ceiling(spec, site, tenant).items():
            gpus[resource] = gpus.get(resource, 0) + n
        site_cpu, site_memory = queues.cpu_memory_ceiling(site, tenant)
        cpu, memory = cpu + site_cpu, memory + site_memory
    return {
        "cpu": cpu,
        "memory": f"{memory}Gi",
        **{r: n for r, n in gpus.items() if n > 0},
    }


def manager_cluster_queue_spec(spec: EstateSpec, tenant: Tenant) -> dict[str, Any]:
    """The tenant's ClusterQueue on the manager: its namespace only, no cohort, the dispatch flavor holding
    `manager_quota`, and the MultiKueue check of the tenant's order of sites."""
    quota = manager_quota(spec, tenant)
    covered = queues.covered_resources([r for r in quota if r not in ("cpu", "memory")])
    order = tuple(s.name for s in dispatch.tenant_workers(spec, tenant))
    return queues.cluster_queue_spec(
        namespace=tenant.name,
        cohort="",
        covered=covered,
        flavors=[queues.FlavorQuotas(DISPATCH_FLAVOR, {r: queues.Quota(v) for r, v in quota.items()})],
        admission_checks={dispatch.order_name(spec, order): ()},
    )


def multikueue_check_spec(config: str) -> dict[str, Any]:
    return {
        "controllerName": MULTIKUEUE_CONTROLLER,
        "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": config},
    }


@dataclass(frozen=True)
class WorkerLink:
    """What the manager needs of one worker: the deployer's kubeconfig (its API server URL) and the token Secret."""

    kubeconfig: pulumi.Input[str]
    token: k8s.core.v1.Secret


@dataclass(frozen=True)
class KueueManagerArgs:
    spec: EstateSpec
    tags: Tags
    workers: Mapping[str, WorkerLink]  # site name -> link, for every site of dispatch.workers


class KueueManagerStack(pulumi.ComponentResource):
    """Everything on the MultiKueue manager cluster (the module docstring lists it)."""

    release: k8s.helm.v3.Release

    def __init__(self, name: str, args: KueueManagerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:hybrid:KueueManager", name, None, opts)
        self._n, self._args = name, args
        self._labels = args.tags.labels()
        on = pulumi.ResourceOptions(parent=self)  # the manager's provider comes from this component's providers
        self._on = on
        spec = args.spec
        frameworks = dispatch.manager_frameworks(spec)
        ns = kueue.namespace(f"{name}-kueue-namespace", self._labels, on)
        crds: list[pulumi.Resource] = [ns]
        if operators(frameworks):
            crds.append(JobOperators(f"{name}-job-operators", frameworks, opts=on))
        # The incremental dispatcher offers a Workload to one more cluster per round (five minutes), in the order of
        # the tenant's MultiKueueConfig: on-prem first, then the cloud (kueue site/content/en/docs/concepts/
        # multikueue.md at the pinned tag, "Incremental" and "prioritizing clusters for cost-optimized spillover").
        config = queues.controller_config(
            False, frameworks, multikueue=True, excluded_resources=node_device_prefixes(spec)
        )
        self.release = kueue.release(
            f"{name}-kueue", config, provisioning_crd=False,
            opts=pulumi.ResourceOptions.merge(on, pulumi.ResourceOptions(depends_on=crds)),
        )  # fmt: skip
        Priorities(f"{name}-priorities", PrioritiesArgs(args.tags, self.release), on)
        clusters = [self._cluster(site, link, ns) for site, link in args.workers.items()]
        checks = {order: self._check(order, clusters) for order in dispatch.dispatch_orders(spec)}
        flavor = self._dispatch_flavor(spec)
        for tenant in dispatch.dispatched_tenants(spec):
            order = tuple(s.name for s in dispatch.tenant_workers(spec, tenant))
            self._tenant(tenant, flavor, [flavor, checks[order]])
        self.register_outputs({})

    def _dispatch_flavor(self, spec: EstateSpec) -> pulumi.CustomResource:
        """The one flavor of the manager's ClusterQueues. Where a worker schedules by topology, it is a TAS flavor
        too: Kueue refuses a pod set that asks for a topology on a flavor without one, even on a manager that
        leaves the topology to the worker (kubernetes-sigs/kueue at versions.KUEUE,
        pkg/scheduler/flavorassigner/tas_flavorassigner.go: checkPodSetAndFlavorMatchForTAS, then "Delay TAS when
        MultiKueue is used"). A TAS flavor needs a Topology and a node label (apis/kueue/v1beta2/
        resourceflavor_types.go); the manager runs no job, so the label selects nothing and no user selects it.
        Its Topology has a fixed list of levels, every one a worker can have (model.dispatch.manager_topology_levels),
        so a worker gaining or losing a level changes nothing here.

        As on a site (components/kubernetes/kueue.py): a flavor whose topologyName changes (the first worker that
        schedules by topology, or the last leaving) is replaced (model.queues.flavor_replaced_on), and the
        ClusterQueues naming it with it (`_tenant`). Each is deleted first: the names are fixed."""
        levels = dispatch.manager_topology_levels(spec)
        topology: list[pulumi.Resource] = []
        flavor_spec: dict[str, Any] = {}
        if levels is not None:
            replace = pulumi.ResourceOptions(
                replace_on_changes=["spec.levels"], delete_before_replace=True, custom_timeouts=kueue.QUEUE_TIMEOUTS
            )
            levels_spec = queues.topology_spec(levels)
            topology = [self._object("topology", "Topology", {"name": DISPATCH_FLAVOR}, levels_spec, [], replace)]
            flavor_spec = {"nodeLabels": {DISPATCH_NODE_LABEL: "true"}, "topologyName": DISPATCH_FLAVOR}
        replace = pulumi.ResourceOptions(
            replace_on_changes=queues.flavor_replaced_on(flavor_spec),
            delete_before_replace=True,
            replace_with=topology,
            custom_timeouts=kueue.QUEUE_TIMEOUTS,
        )
        return self._object("flavor", "ResourceFlavor", {"name": DISPATCH_FLAVOR}, flavor_spec, topology, replace)

    def _object(
        self,
        name: str,
        kind: str,
        metadata: dict[str, Any],
        spec: dict[str, Any],
        deps: Sequence[pulumi.Resource],
        more: pulumi.ResourceOptions | None = None,
    ) -> pulumi.CustomResource:
        meta = {"labels": self._labels, **metadata}
        opts = pulumi.ResourceOptions.merge(self._on, pulumi.ResourceOptions(depends_on=[self.release, *deps]))
        if more is not None:
            opts = pulumi.ResourceOptions.merge(opts, more)
        return kueue.kube_object(f"{self._n}-{name}", queues.KUEUE_API, kind, meta, {"spec": spec}, opts)

    # -- how the manager reaches each worker ------------------------------------------------------------------
    def _cluster(self, site: str, link: WorkerLink, ns: pulumi.Resource) -> pulumi.CustomResource:
        # apply() only assembles the kubeconfig text (server from the deployer's kubeconfig, CA and token from
        # the worker's token Secret); it creates no resource. The result stays a secret.
        text: pulumi.Output[str] = pulumi.Output.all(link.kubeconfig, link.token.data).apply(
            lambda v: assemble(site, v[0], v[1])
        )
        secret_text: pulumi.Output[str] = pulumi.Output.secret(text)
        secret = k8s.core.v1.Secret(
            f"{self._n}-{site}-kubeconfig",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=kubeconfig_secret_name(site), namespace=kueue.KUEUE_NAMESPACE, labels=self._labels
            ),
            type="Opaque",
            string_data={KUBECONFIG_KEY: secret_text},
            opts=pulumi.ResourceOptions.merge(self._on, pulumi.ResourceOptions(depends_on=[ns])),
        )
        source = {"kubeConfig": {"locationType": "Secret", "location": kubeconfig_secret_name(site)}}
        return self._object(f"cluster-{site}", "MultiKueueCluster", {"name": site}, {"clusterSource": source}, [secret])

    def _check(self, order: tuple[str, ...], clusters: list[pulumi.CustomResource]) -> pulumi.CustomResource:
        name = dispatch.order_name(self._args.spec, order)
        config = self._object(f"config-{name}", "MultiKueueConfig", {"name": name}, {"clusters": list(order)}, clusters)
        return self._object(f"check-{name}", "AdmissionCheck", {"name": name}, multikueue_check_spec(name), [config])

    # -- tenants ------------------------------------------------------------------------------------------------
    def _tenant(self, tenant: Tenant, flavor: pulumi.Resource, deps: list[pulumi.Resource]) -> None:
        n, t = f"{self._n}-tenant-{tenant.name}", tenant
        labels = self._args.tags.labels(tenant=t.name, cost_center=t.cost_center)
        ns = k8s.core.v1.Namespace(
            f"{n}-namespace",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=t.name, labels=namespace_labels(self._args.tags, t)),
            opts=pulumi.ResourceOptions.merge(self._on, pulumi.ResourceOptions(retain_on_delete=True)),
        )
        in_ns = pulumi.ResourceOptions.merge(self._on, pulumi.ResourceOptions(depends_on=[ns]))
        meta = k8s.meta.v1.ObjectMetaArgs(name="tenant-member", namespace=t.name, labels=labels)
        rules = [k8s.rbac.v1.PolicyRuleArgs(api_groups=r["apiGroups"], resources=r["resources"], verbs=r["verbs"])
                 for r in ROLE_RULES]  # fmt: skip
        role = k8s.rbac.v1.Role(f"{n}-role", metadata=meta, rules=rules, opts=in_ns)
        if t.members:
            k8s.rbac.v1.RoleBinding(
                f"{n}-rolebinding",
                metadata=meta,
                role_ref=k8s.rbac.v1.RoleRefArgs(api_group=RBAC_API_GROUP, kind="Role", name="tenant-member"),
                subjects=[k8s.rbac.v1.SubjectArgs(api_group=RBAC_API_GROUP, kind="Group", name=g) for g in t.members],
                opts=pulumi.ResourceOptions.merge(in_ns, pulumi.ResourceOptions(depends_on=[role])),
            )
        cq = self._object(
            f"cq-{t.name}",
            "ClusterQueue",
            {"name": t.name, "labels": labels},
            manager_cluster_queue_spec(self._args.spec, t),
            deps,
            # replaced with the flavor: Kueue keeps a flavor a ClusterQueue names (its resource-in-use finalizer);
            # its delete waits for its admitted workloads (kueue.QUEUE_DELETE_TIMEOUT)
            pulumi.ResourceOptions(
                replace_with=[flavor], delete_before_replace=True, custom_timeouts=kueue.QUEUE_TIMEOUTS
            ),
        )
        for queue in (t.name, queues.DEFAULT_LOCAL_QUEUE):
            suffix = "" if queue == t.name else f"-{queue}"
            self._object(
                f"lq-{t.name}{suffix}",
                "LocalQueue",
                {"name": queue, "namespace": t.name, "labels": labels},
                {"clusterQueue": t.name},
                [cq, ns],
            )
