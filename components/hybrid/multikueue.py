"""MultiKueueWiring: the on-prem cluster hosts the Kueue manager, the cloud site is a MultiKueue worker.

How "queues try on-prem first" is realised (Kueue at the pinned tag, versions.KUEUE; API kueue.x-k8s.io/v1beta2):
- Kueue cannot scope a MultiKueue admission check to a flavor: a ClusterQueue whose
  `admissionChecksStrategy.admissionChecks[].onFlavors` names a MultiKueue check goes inactive with reason
  `MultiKueueAdmissionCheckAppliedPerFlavor` (kueue `pkg/cache/scheduler/clusterqueue.go` at the pinned tag). The
  manager also cannot be a worker for itself (MultiKueue concept docs, "Using manager to run workloads"), so one queue
  cannot first run a job on-prem and then hand it to the cloud.
- So each tenant with `burst: true` keeps its own on-prem queues (the tenancy layer: LocalQueue `<tenant>` ->
  ClusterQueue `<tenant>`), which is where work goes by default, and gets a second pair on the manager:
  LocalQueue `<tenant>-burst` -> ClusterQueue `<tenant>-burst` carrying the MultiKueue check. Work spills to
  the cloud only by being submitted to `<tenant>-burst`, or by relabelling a job still waiting (suspended) in
  the on-prem queue: Kueue lets `kueue.x-k8s.io/queue-name` change while a job is suspended
  (`pkg/controller/jobframework/validation.go`).
- The burst ClusterQueues hold no quota of their own; they borrow from a Cohort `<estate>-burst` whose quota is
  the open window's size (GPUs, and the nodes' vCPUs and memory from the catalog) and zero outside windows, so
  a workload in a burst queue waits on the manager until a window opens and never dispatches to an empty pool.
  Burst tenants share the window through that cohort.
- The worker mirrors the queues MultiKueue expects (same namespace and LocalQueue name) with the same cohort and
  quota, and a ResourceFlavor per burst pool whose node labels and tolerations match the pool's nodes.

With a single worker the dispatcher (AllAtOnce or Incremental, a Kueue configuration setting) makes no
difference; `MultiKueueConfig.spec.clusters` lists the worker alone.

Credentials: a ServiceAccount on the worker with the ClusterRole the Kueue docs give for the MultiKueue manager
(`site/static/examples/multikueue/create-multikueue-kubeconfig.sh` at the pinned tag), a long-lived token Secret
(`kubernetes.io/service-account-token`; pulumi-kubernetes waits until the token is filled in), and on the
manager a Secret in `kueue-system` holding a kubeconfig built from the worker endpoint, the token Secret's
`ca.crt` and token (a secret Output, never plaintext in state or the plan).
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from components.kubernetes import kueue
from components.kubernetes.admission import TenantTolerations
from components.kubernetes.cluster import ClusterStack
from components.kubernetes.tenancy import TenantBundle, TenantBundleArgs
from components.model.conventions import pod_security_labels
from components.model.spec import BurstWindow, EstateSpec, Site, Tenant
from components.model.tags import Tags
from components.model.windows import BurstQuota, burst_pools, burst_quotas, cloud_site

MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
KUBECONFIG_KEY = "kubeconfig"  # the key MultiKueue reads from a Secret-located kubeconfig
WORKER_NAMESPACE = "gpufleet-multikueue"
WORKER_SA = "multikueue"
WORKER_ROLE = "gpufleet-multikueue-manager"
BURST_SUFFIX = "-burst"

_CREATE_WATCH = ["create", "delete", "get", "list", "watch"]


def _job_rules(group: str, *kinds: str, extra: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    for kind in kinds:
        rules.append({"apiGroups": [group], "resources": [kind], "verbs": [*_CREATE_WATCH, *extra]})
        rules.append({"apiGroups": [group], "resources": [f"{kind}/status"], "verbs": ["get"]})
    return rules


# What the MultiKueue manager does in a worker: mirror every supported job kind and its Workload
# (kueue at the pinned tag, site/static/examples/multikueue/create-multikueue-kubeconfig.sh).
WORKER_RULES: list[dict[str, Any]] = [
    *_job_rules("batch", "jobs"),
    {"apiGroups": [""], "resources": ["pods"], "verbs": _CREATE_WATCH},
    *_job_rules("apps", "statefulsets"),
    *_job_rules("leaderworkerset.x-k8s.io", "leaderworkersets"),
    *_job_rules("jobset.x-k8s.io", "jobsets"),
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": [*_CREATE_WATCH, "update", "patch"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues", "localqueues"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["get", "patch", "update"]},
    *_job_rules("kubeflow.org", "tfjobs", "paddlejobs", "pytorchjobs", "xgboostjobs", "mpijobs"),
    *_job_rules("ray.io", "rayjobs"),
    *_job_rules("ray.io", "rayclusters", extra=("update", "patch")),
    *_job_rules("ray.io", "rayservices"),
    *_job_rules("workload.codeflare.dev", "appwrappers"),
]


@dataclass(frozen=True)
class MultiKueueArgs:
    spec: EstateSpec
    manager: Site
    worker: Site
    manager_provider: k8s.Provider
    worker_provider: k8s.Provider
    manager_stack: ClusterStack
    worker_stack: ClusterStack
    worker_kubeconfig: pulumi.Input[str]  # the deployer's kubeconfig of the worker (its API server URL is used)
    window: BurstWindow | None  # the burst window in stack config, open or not
    now: dt.datetime  # the moment the window is judged against


def burst_tenants(spec: EstateSpec) -> list[Tenant]:
    return [t for t in spec.tenants if t.burst]


def burst_queue_name(tenant: str) -> str:
    """Name of a burst tenant's LocalQueue (both clusters) and ClusterQueue: `<tenant>-burst`."""
    return f"{tenant}{BURST_SUFFIX}"


def burst_cohort_name(spec: EstateSpec) -> str:
    return f"{spec.metadata.name}{BURST_SUFFIX}"


def _gpu_resource(spec: EstateSpec, quota: BurstQuota) -> str:
    return kueue.gpu_resource_name(cloud_site(spec), spec.pool(quota.flavor))


def burst_resource_groups(spec: EstateSpec, quotas: list[BurstQuota], *, own_quota: bool) -> list[dict[str, Any]]:
    """resourceGroups over the burst flavors: the window's size (the Cohort) or nothing of their own (the
    tenants' burst ClusterQueues, which borrow everything from the Cohort). Built with the tenancy layer's
    ClusterQueue builder so both follow the same resource order."""
    flavors = []
    for q in quotas:
        amounts: dict[str, int | str] = {
            "cpu": q.cpu,
            "memory": f"{q.memory_gib}Gi",
            _gpu_resource(spec, q): q.gpu_units,
        }
        flavors.append(
            kueue.FlavorQuotas(q.flavor, {r: kueue.Quota(v) for r, v in amounts.items()} if own_quota else {})
        )
    covered = kueue.covered_resources([_gpu_resource(spec, q) for q in quotas])
    groups: list[dict[str, Any]] = kueue.cluster_queue_spec(
        namespace=None, cohort="", covered=covered, flavors=flavors
    )["resourceGroups"]
    return groups


def burst_cluster_queue_spec(
    spec: EstateSpec, tenant: Tenant, quotas: list[BurstQuota], check: str | None
) -> dict[str, Any]:
    """A burst tenant's ClusterQueue: its namespace only, in the burst Cohort, the MultiKueue check on the
    manager (none on the worker)."""
    out = kueue.cluster_queue_spec(
        namespace=tenant.name,
        cohort=burst_cohort_name(spec),
        covered=kueue.covered_resources([_gpu_resource(spec, q) for q in quotas]),
        flavors=[kueue.FlavorQuotas(q.flavor, {}) for q in quotas],
        admission_checks=[check] if check else (),
    )
    return out


def worker_kubeconfig(cluster: str, server: str, ca_data_b64: str, token: str) -> str:
    """A kubeconfig for the MultiKueue manager: one cluster, one token user. Not the deployer's EKS kubeconfig:
    MultiKueue refuses exec plugins in Secret kubeconfigs ("exec plugins are not allowed",
    `pkg/controller/admissionchecks/multikueue/multikueuecluster.go`)."""
    user = f"{cluster}-{WORKER_SA}"
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": {"server": server, "certificate-authority-data": ca_data_b64}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": user}}],
        "current-context": cluster,
    }
    return yaml.safe_dump(doc, sort_keys=False)


def server_of(kubeconfig: str) -> str:
    """The API server URL of a kubeconfig's current context (YAML or JSON)."""
    doc = yaml.safe_load(kubeconfig) if kubeconfig else None
    if not isinstance(doc, dict):
        return ""
    current = doc.get("current-context")
    contexts = {c.get("name"): c.get("context", {}) for c in doc.get("contexts") or []}
    cluster_name = contexts.get(current, {}).get("cluster") if current else None
    clusters = doc.get("clusters") or []
    chosen = next((c for c in clusters if c.get("name") == cluster_name), clusters[0] if clusters else {})
    return str((chosen.get("cluster") or {}).get("server", ""))


def _assemble(cluster: str, kubeconfig: str, data: Mapping[str, str] | None) -> str:
    data = data or {}
    token = base64.b64decode(data.get("token", "")).decode()
    return worker_kubeconfig(cluster, server_of(kubeconfig), data.get("ca.crt", ""), token)


class MultiKueueWiring(pulumi.ComponentResource):
    """Creates, on the worker (cloud) cluster: the MultiKueue ServiceAccount, its ClusterRole and binding and a
    long-lived token Secret; the burst tenants' namespaces (TenantBundle, unless the site's ClusterStack already
    has one), a ResourceFlavor per burst pool, the burst Cohort and per burst tenant a ClusterQueue and
    LocalQueue `<tenant>-burst`. On the manager (on-prem) cluster: the worker's kubeconfig Secret in
    kueue-system, MultiKueueCluster, MultiKueueConfig, the MultiKueue AdmissionCheck, the burst flavors and
    Cohort, and per burst tenant a ClusterQueue `<tenant>-burst` carrying the check and its LocalQueue (and a
    TenantBundle where the tenant has no on-prem quota). Burst quotas are the open window's size, zero outside
    windows."""

    kubeconfig_secret_name: pulumi.Output[str]
    admission_check_name: pulumi.Output[str]

    def __init__(self, name: str, args: MultiKueueArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpufleet:hybrid:MultiKueue", name, None, opts)
        self._name = name
        self._args = args
        self._tags = Tags.from_spec(args.spec)
        self._labels = self._tags.labels()
        self._quotas = burst_quotas(args.spec, args.window, args.now)
        self._check = f"{args.spec.metadata.name}-multikueue"
        self._secret_name = f"{args.worker.name}-multikueue-kubeconfig"
        self._on_worker = pulumi.ResourceOptions(
            parent=self, provider=args.worker_provider, depends_on=[args.worker_stack]
        )
        self._on_manager = pulumi.ResourceOptions(
            parent=self, provider=args.manager_provider, depends_on=[args.manager_stack]
        )

        token = self._worker_access()
        secret = self._manager_kubeconfig(token)
        config = self._multikueue_config(secret)
        check = self._admission_check(config)
        self._queues("worker", self._on_worker, self._namespaces("worker", args.worker, args.worker_stack), None)
        self._queues("manager", self._on_manager, self._namespaces("manager", args.manager, args.manager_stack), check)

        self.kubeconfig_secret_name = pulumi.Output.from_input(self._secret_name)
        self.admission_check_name = pulumi.Output.from_input(self._check)
        self.register_outputs(
            {"kubeconfigSecretName": self.kubeconfig_secret_name, "admissionCheckName": self.admission_check_name}
        )

    def _meta(self, name: str, namespace: str | None = None, **labels: str) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, "labels": {**self._labels, **labels}}
        if namespace is not None:
            meta["namespace"] = namespace
        return meta

    def _object_meta(
        self,
        name: str,
        namespace: str | None = None,
        annotations: dict[str, str] | None = None,
        extra_labels: dict[str, str] | None = None,
    ) -> k8s.meta.v1.ObjectMetaArgs:
        labels = {**self._labels, **(extra_labels or {})}
        return k8s.meta.v1.ObjectMetaArgs(name=name, namespace=namespace, labels=labels, annotations=annotations)

    def _kueue_object(
        self, name: str, kind: str, metadata: dict[str, Any], spec: dict[str, Any], opts: pulumi.ResourceOptions
    ) -> pulumi.CustomResource:
        return kueue.kube_object(name, kueue.KUEUE_API, kind, metadata, {"spec": spec}, opts)

    @staticmethod
    def _after(opts: pulumi.ResourceOptions, *deps: pulumi.Resource) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=list(deps)))

    # -- worker: the identity the manager uses --------------------------------------------------------------
    def _worker_access(self) -> k8s.core.v1.Secret:
        n = self._name
        ns = k8s.core.v1.Namespace(
            f"{n}-worker-ns",
            metadata=self._object_meta(WORKER_NAMESPACE, extra_labels=pod_security_labels("restricted", ("enforce",))),
            opts=self._on_worker,
        )
        in_ns = self._after(self._on_worker, ns)
        sa = k8s.core.v1.ServiceAccount(
            f"{n}-worker-sa",
            metadata=self._object_meta(WORKER_SA, WORKER_NAMESPACE),
            automount_service_account_token=False,
            opts=in_ns,
        )
        rules = [
            k8s.rbac.v1.PolicyRuleArgs(api_groups=r["apiGroups"], resources=r["resources"], verbs=r["verbs"])
            for r in WORKER_RULES
        ]
        role = k8s.rbac.v1.ClusterRole(
            f"{n}-worker-role", metadata=self._object_meta(WORKER_ROLE), rules=rules, opts=in_ns
        )
        k8s.rbac.v1.ClusterRoleBinding(
            f"{n}-worker-binding",
            metadata=self._object_meta(WORKER_ROLE),
            role_ref=k8s.rbac.v1.RoleRefArgs(
                api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=WORKER_ROLE
            ),
            subjects=[k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=WORKER_SA, namespace=WORKER_NAMESPACE)],
            opts=self._after(in_ns, sa, role),
        )
        # A long-lived token: TokenRequest tokens expire (kueue#9280); this one lives until the Secret is
        # deleted, so rotating it = replacing this Secret (`pulumi up --replace <urn>`).
        return k8s.core.v1.Secret(
            f"{n}-worker-token",
            metadata=self._object_meta(
                f"{WORKER_SA}-token", WORKER_NAMESPACE, {"kubernetes.io/service-account.name": WORKER_SA}
            ),
            type="kubernetes.io/service-account-token",
            opts=pulumi.ResourceOptions.merge(
                in_ns, pulumi.ResourceOptions(depends_on=[sa], additional_secret_outputs=["data"])
            ),
        )

    # -- manager: how Kueue reaches the worker --------------------------------------------------------------
    def _manager_kubeconfig(self, token: k8s.core.v1.Secret) -> k8s.core.v1.Secret:
        cluster = self._args.worker.name
        # apply() only assembles the kubeconfig text here (server from the deployer's kubeconfig, CA and token
        # from the token Secret); it creates no resource. The result stays a secret.
        assembled: pulumi.Output[str] = pulumi.Output.all(self._args.worker_kubeconfig, token.data).apply(
            lambda v: _assemble(cluster, v[0], v[1])
        )
        kubeconfig: pulumi.Output[str] = pulumi.Output.secret(assembled)
        return k8s.core.v1.Secret(
            f"{self._name}-kubeconfig",
            metadata=self._object_meta(self._secret_name, kueue.KUEUE_NAMESPACE),
            type="Opaque",
            string_data={KUBECONFIG_KEY: kubeconfig},
            opts=self._on_manager,
        )

    def _multikueue_config(self, secret: k8s.core.v1.Secret) -> pulumi.CustomResource:
        n, worker = self._name, self._args.worker.name
        cluster = self._kueue_object(
            f"{n}-cluster",
            "MultiKueueCluster",
            self._meta(worker),
            {"clusterSource": {"kubeConfig": {"locationType": "Secret", "location": self._secret_name}}},
            self._after(self._on_manager, secret),
        )
        return self._kueue_object(
            f"{n}-config",
            "MultiKueueConfig",
            self._meta(self._check),
            {"clusters": [worker]},
            self._after(self._on_manager, cluster),
        )

    def _admission_check(self, config: pulumi.CustomResource) -> pulumi.CustomResource:
        return self._kueue_object(
            f"{self._name}-check",
            "AdmissionCheck",
            self._meta(self._check),
            {
                "controllerName": MULTIKUEUE_CONTROLLER,
                "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": self._check},
            },
            self._after(self._on_manager, config),
        )

    # -- tenant namespaces: reuse the cluster's TenantBundle, or add one --------------------------------------
    def _namespaces(self, side: str, site: Site, stack: ClusterStack) -> dict[str, pulumi.Resource]:
        on = self._on_worker if side == "worker" else self._on_manager
        out: dict[str, pulumi.Resource] = {}
        if not stack.tenants and burst_tenants(self._args.spec):  # the cluster's tenants are all added here
            TenantTolerations(f"{self._name}-{side}-tenant-tolerations", self._tags, on)
        for t in burst_tenants(self._args.spec):
            existing = stack.tenants.get(t.name)
            if existing is not None:
                out[t.name] = existing.namespace
                continue
            bundle = TenantBundle(
                f"{self._name}-{side}-tenant-{t.name}", TenantBundleArgs(self._args.spec, site, t, self._tags), on
            )
            out[t.name] = bundle.namespace
        return out

    # -- both clusters: burst flavors, cohort and queues -----------------------------------------------------
    def _queues(
        self,
        side: str,
        on: pulumi.ResourceOptions,
        namespaces: dict[str, pulumi.Resource],
        check: pulumi.CustomResource | None,
    ) -> None:
        n, spec = f"{self._name}-{side}", self._args.spec
        site = cloud_site(spec)
        flavors = [
            self._kueue_object(
                f"{n}-flavor-{pool.name}",
                "ResourceFlavor",
                self._meta(pool.name),
                # The worker's flavor puts jobs on the pool's nodes; the manager's only counts quota.
                kueue.resource_flavor_spec(site, pool) if check is None else {},
                on,
            )
            for pool in burst_pools(spec)
        ]
        cohort = self._kueue_object(
            f"{n}-cohort",
            "Cohort",
            self._meta(burst_cohort_name(spec)),
            {"resourceGroups": burst_resource_groups(spec, self._quotas, own_quota=True)},
            self._after(on, *flavors),
        )
        for t in burst_tenants(spec):
            queue = burst_queue_name(t.name)
            labels = self._tags.labels(tenant=t.name, cost_center=t.cost_center)
            deps: list[pulumi.Resource] = [cohort, *([check] if check is not None else [])]
            cq = self._kueue_object(
                f"{n}-cq-{t.name}",
                "ClusterQueue",
                {"name": queue, "labels": labels},
                burst_cluster_queue_spec(spec, t, self._quotas, self._check if check is not None else None),
                self._after(on, *deps),
            )
            self._kueue_object(
                f"{n}-lq-{t.name}",
                "LocalQueue",
                {"name": queue, "namespace": t.name, "labels": labels},
                {"clusterQueue": queue},
                self._after(on, cq, namespaces[t.name]),
            )
