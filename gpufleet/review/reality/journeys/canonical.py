"""The journeys every estate promises, derived from its own pools and tenants, as manifests a user would write.

- Each training pool with a fabric: a gang of one pod per node, each asking for all the node's GPUs and the
  fabric's devices, through each tenant allowed on the pool; on a rack-scale pool, an IMEX channel too.
- Each inference pool: a one-GPU Deployment per tenant allowed on it.
- Each MIG, time-sliced or interactive pool: a notebook (a one-replica StatefulSet, as Kubeflow Notebooks run)
  per tenant.
- Each untrusted tenant: what it must be refused (time-sliced GPUs, another tenant's pool, the whole file system,
  open egress).

Manifests carry only what a user writes: the queue label, resource requests and the security context Pod
Security asks for. A refusal may name a pool, since asking for what is not yours is the point.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from gpufleet.review.reality.journeys import api
from gpufleet.review.reality.journeys.core import QUEUE_LABEL, Cite, ClusterView, Journey, Stage, Verdict
from gpufleet.review.reality.journeys.walk import target, walk
from gpufleet.review.reality.journeys.workloads import workload
from model import conventions, dra, queues, rdma, versions
from model.spec import EstateSpec, NodePool, Site, Tenant
from model.spec.baremetal import NfsTier
from model.spec.burst import BurstWindow


@dataclass(frozen=True)
class Canonical:
    """One promised journey: what it proves, what the estate should answer, and the manifest a user submits."""

    title: str
    expected: Verdict
    manifest: dict[str, Any]
    stage: str | None = None  # where a refusal must happen, when one stage alone may refuse it
    companions: tuple[dict[str, Any], ...] = ()  # objects the user applies first (a gang's ComputeDomain)


def _security(*, ipc_lock: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """Pod and container security contexts a user writes to pass the namespace's Pod Security level
    (https://kubernetes.io/docs/concepts/security/pod-security-standards/): restricted wants non-root, the
    RuntimeDefault seccomp profile, no privilege escalation and ALL capabilities dropped."""
    pod: dict[str, Any] = {"runAsNonRoot": True, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}}
    container: dict[str, Any] = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    if ipc_lock:  # RDMA pins memory: an RDMA namespace admits IPC_LOCK on top of the baseline
        container["capabilities"]["add"] = ["IPC_LOCK"]
    return pod, container


def _container(name: str, image: str, limits: dict[str, str], security: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "image": image,
        "command": ["sleep", "3600"],
        "resources": {"limits": dict(limits)},
        "securityContext": security,
    }


def _meta(name: str, tenant: Tenant) -> dict[str, Any]:
    return {"name": name, "namespace": tenant.name, "labels": {QUEUE_LABEL: tenant.name}}


def _gang_nodes(spec: EstateSpec, pool: NodePool, tenant: Tenant) -> int:
    """The pool's nodes, or as many whole nodes as the tenant's GPU quota there allows at once (nominal plus
    borrowing, as queues.gpu_quota_ceiling counts it), whichever is fewer."""
    per_node = max(1, spec.pool_gpus_per_node(pool.name))
    pool_nodes = spec.pool_gpu_capacity(pool.name) // per_node
    if queues.is_burst(pool):
        return pool_nodes
    return min(pool_nodes, (tenant.gpu_quota.get(pool.name, 0) + tenant.borrowing_limit) // per_node)


OnSiteTenants = list[tuple[Tenant, list[NodePool]]]


def allowed_tenants(spec: EstateSpec, site: Site, pool: NodePool, on_site: OnSiteTenants | None = None) -> list[Tenant]:
    """Tenants whose ClusterQueue lists the pool (burst pools: tenants that may burst). `on_site`: the site's
    tenants with their flavors (`tenants_with_flavors`), when the caller already has them."""
    if queues.is_burst(pool):
        return [t for t in spec.tenants if t.burst and t.trust == "trusted"]
    return [
        t
        for t, flavors in on_site or tenants_with_flavors(spec, site)
        if pool in flavors and t.gpu_quota.get(pool.name)
    ]


def tenants_with_flavors(spec: EstateSpec, site: Site) -> OnSiteTenants:
    """The site's tenants (queues.tenants_on_site), each with the pools its ClusterQueue lists."""
    return [(t, queues.tenant_flavors(site, t)) for t in queues.tenants_on_site(spec, site)]


def _select(pool: NodePool) -> dict[str, str]:
    """How a user picks a pool: its pool label, which Kueue matches against the flavors' node labels
    (docs/journeys.md): a job that needs a fabric or a pool's GPUs names the pool."""
    return {conventions.POOL_LABEL: pool.name}


def _topology_request(site: Site, pool: NodePool) -> dict[str, Any]:
    """A gang's ask to run close together (model.queues.topology_request): Kueue packs it in one domain of that
    level when it fits. Without it, a TAS-only ClusterQueue places the gang unconstrained."""
    annotations = {} if queues.is_burst(pool) else queues.topology_request(site, pool)
    return {"metadata": {"annotations": annotations}} if annotations else {}


def fabric_gang(spec: EstateSpec, site: Site, pool: NodePool, tenant: Tenant, expected: Verdict) -> Canonical:
    nodes = _gang_nodes(spec, pool, tenant)
    limits = rdma.fabric_requests(spec, site, pool)
    ib = any(k.startswith(rdma.RDMA_RESOURCE_PREFIX + "/") for k in limits)
    pod_sc, container_sc = _security(ipc_lock=ib)
    image = (versions.NCCL_TESTS_IB if ib else versions.NCCL_TESTS_EFA).reference
    job: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(f"gang-{pool.name}", tenant),
        "spec": {
            "completionMode": "Indexed",
            "parallelism": nodes,
            "completions": nodes,
            "template": {
                **_topology_request(site, pool),
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": _select(pool),
                    "securityContext": pod_sc,
                    "containers": [_container("trainer", image, limits, container_sc)],
                },
            },
        },
    }
    title = f"{tenant.name}: a {nodes}-node gang on {pool.name} with its fabric ({pool.fabric})"
    if dra.rack_scale(pool):
        domain = dra.compute_domain(f"gang-{pool.name}", tenant.name, f"gang-{pool.name}-channel")
        dra.claim_channel(job["spec"]["template"]["spec"], domain)
        return Canonical(title + " in one ComputeDomain", expected, job, companions=(domain,))
    return Canonical(title, expected, job)


def one_gpu_job(site: Site, pool: NodePool, tenant: Tenant, expected: Verdict) -> Canonical:
    pod_sc, container_sc = _security()
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(f"job-{pool.name}", tenant),
        "spec": {
            "template": {
                **_topology_request(site, pool),
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": _select(pool),
                    "securityContext": pod_sc,
                    "containers": [_container("job", versions.BUSYBOX.reference, _unit(site, pool), container_sc)],
                },
            }
        },
    }
    return Canonical(f"{tenant.name}: a one-GPU Job on {pool.role} pool {pool.name}", expected, job)


def _unit(site: Site, pool: NodePool) -> dict[str, str]:
    return {queues.gpu_resource_name(site, pool): "1"}


def inference(site: Site, pool: NodePool, tenant: Tenant) -> Canonical:
    pod_sc, container_sc = _security()
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(f"serve-{pool.name}", tenant),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": f"serve-{pool.name}"}},
            "template": {
                "metadata": {"labels": {"app": f"serve-{pool.name}", QUEUE_LABEL: tenant.name}},
                "spec": {
                    "nodeSelector": _select(pool),
                    "securityContext": pod_sc,
                    "containers": [_container("server", versions.BUSYBOX.reference, _unit(site, pool), container_sc)],
                },
            },
        },
    }
    return Canonical(f"{tenant.name}: a Deployment on inference pool {pool.name}", "runs", deployment)


def notebook(site: Site, pool: NodePool, tenant: Tenant, expected: Verdict, why: str = "") -> Canonical:
    pod_sc, container_sc = _security()
    name = f"notebook-{pool.name}"
    template_spec: dict[str, Any] = {
        "nodeSelector": _select(pool),
        "securityContext": pod_sc,
        "containers": [_container("notebook", versions.BUSYBOX.reference, _unit(site, pool), container_sc)],
    }
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": _meta(name, tenant),
        "spec": {
            "replicas": 1,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name, QUEUE_LABEL: tenant.name}},
                "spec": template_spec,
            },
        },
    }
    title = why or f"{tenant.name}: a notebook on {pool.role} pool {pool.name} ({pool.sharing.mode} GPUs)"
    return Canonical(title, expected, sts)


def whole_file_system(site: Site, tenant: Tenant) -> Canonical | None:
    """An inline NFS volume of the site's shared export root: the tenant's own subdirectory is all it may mount."""
    nfs = next((t for t in site.storage if isinstance(t, NfsTier)), None)
    if nfs is None:
        return None
    pod_sc, container_sc = _security()
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _meta("whole-export", tenant),
        "spec": {
            "securityContext": pod_sc,
            "containers": [
                {
                    **_container("reader", versions.BUSYBOX.reference, {}, container_sc),
                    "volumeMounts": [{"name": "all", "mountPath": "/all"}],
                }
            ],
            "volumes": [{"name": "all", "nfs": {"server": str(nfs.server), "path": nfs.path}}],
        },
    }
    return Canonical(f"{tenant.name} (untrusted): mounting the whole NFS export is refused", "blocked", pod)


# An address on the internet no estate allows: example.com is reserved for documentation (RFC 2606, section 3).
INTERNET_URL = "https://example.com/"


def open_egress(spec: EstateSpec, site: Site, tenant: Tenant, on_site: OnSiteTenants | None = None) -> Canonical | None:
    """A one-GPU Job on a pool the tenant may use that fetches an internet address: the tenant has no open
    egress, so its NetworkPolicies must refuse it. The journey reads the destination from the command, as the
    network stage reads every URL a workload names (docs/journeys.md). None when the tenant has no pool here."""
    pool = next(
        (p for p in site.node_pools if not queues.is_burst(p) and tenant in allowed_tenants(spec, site, p, on_site)),
        None,
    )
    if pool is None:
        return None
    job = one_gpu_job(site, pool, tenant, "blocked").manifest
    job["metadata"]["name"] = "open-egress"
    job["spec"]["template"]["spec"]["containers"][0]["command"] = ["wget", "-q", "-O-", INTERNET_URL]
    title = f"{tenant.name} (untrusted): egress to an internet address ({INTERNET_URL}) is refused"
    return Canonical(title, "blocked", job, stage="network")


@dataclass(frozen=True)
class OnSite:
    """A canonical journey and the site whose pool it is about (where it is submitted off a hybrid estate)."""

    site: str
    canonical: Canonical


def canonical(spec: EstateSpec, window: BurstWindow | None = None) -> list[Canonical]:
    """Every journey the estate promises, in a stable order (site, pool, tenant)."""
    return [c.canonical for c in canonical_by_site(spec, window)]


def canonical_by_site(spec: EstateSpec, window: BurstWindow | None = None) -> list[OnSite]:
    """`canonical`, each journey with its site."""
    out: list[OnSite] = []
    for site in spec.sites:
        here: list[Canonical] = []
        on_site = tenants_with_flavors(spec, site)
        for pool in site.node_pools:
            expected: Verdict = "blocked" if queues.is_burst(pool) and window is None else "runs"
            for t in allowed_tenants(spec, site, pool, on_site):
                here += _promises(spec, site, pool, t, expected)
        for tenant in (t for t, _ in on_site if t.trust == "untrusted"):
            here += _refusals(spec, site, tenant, on_site)
        out += [OnSite(site.name, c) for c in here]
    return out


def _promises(spec: EstateSpec, site: Site, pool: NodePool, tenant: Tenant, expected: Verdict) -> list[Canonical]:
    """What `pool` promises `tenant`: by its role and sharing, and at least a one-GPU Job."""
    out = []
    # A fabric job pins memory: only tenants whose namespace admits it (`rdma: true`) run one.
    if pool.role == "training" and pool.fabric and tenant.rdma and _gang_nodes(spec, pool, tenant) >= 1:
        out.append(fabric_gang(spec, site, pool, tenant, expected))
    if pool.role == "inference":
        out.append(inference(site, pool, tenant))
    if pool.sharing.mode in ("mig", "time-slicing") or pool.role == "interactive":
        out.append(notebook(site, pool, tenant, expected))
    return out or [one_gpu_job(site, pool, tenant, expected)]


def promised(spec: EstateSpec, window: BurstWindow | None, views: dict[str, ClusterView]) -> list[Journey]:
    """The estate's canonical journeys walked through its clusters, each carrying what it should answer."""
    out = []
    for c in canonical_by_site(spec, window):
        here = with_objects(views, c.canonical.companions)
        w = workload(c.canonical.manifest, "canonical journey")
        refused = [r for o in c.canonical.companions if (r := companion_refusal(target(w, views, c.site), spec, o))]
        journey = Journey(w, (refused[0],)) if refused else walk(w, here, spec, c.site)
        out.append(
            replace(journey, expected=c.canonical.expected, title=c.canonical.title, expected_stage=c.canonical.stage)
        )
    return out


RBAC_CITE = Cite(
    "a namespaced Role grants verbs on resources of API groups",
    "https://kubernetes.io/docs/reference/access-authn-authz/rbac/",
)


def companion_refusal(view: ClusterView, spec: EstateSpec, obj: dict[str, Any]) -> Stage | None:
    """Why the tenant cannot apply `obj` before its workload: its kind is not served, or the tenant-member Role of
    its namespace does not grant `create` on it (components/kubernetes/tenancy.py); None when it can."""
    kind, version = str(obj["kind"]), api.version_of(view, spec)
    group, ns = str(obj["apiVersion"]).rpartition("/")[0], obj["metadata"]["namespace"]
    if not api.serves(view, str(obj["apiVersion"]), kind, version):
        return Stage("api", False, f"{obj['apiVersion']} {kind} is not served on cluster {view.name}",
                     f"CustomResourceDefinition/{kind.lower()}s.{group}", "install the driver that serves it")  # fmt: skip
    resource = f"{kind.lower()}s"
    role = view.get("Role", "tenant-member", ns)
    for rule in (role or {}).get("rules") or []:
        if (
            group in rule.get("apiGroups", [])
            and resource in rule.get("resources", [])
            and "create" in rule.get("verbs", [])
        ):
            return None
    return Stage("api", False, f"tenant members may not create {resource}.{group} in namespace {ns}, so the gang's "
                 f"{kind} cannot be applied", f"Role/{ns}/tenant-member",
                 f"grant create on {resource}.{group} in Role {ns}/tenant-member", (RBAC_CITE,))  # fmt: skip


def with_objects(views: dict[str, ClusterView], objects: tuple[dict[str, Any], ...]) -> dict[str, ClusterView]:
    """`views` with `objects` applied to every cluster (a user applies a gang's ComputeDomain where it runs)."""
    if not objects:
        return views
    return {n: replace(v, objects=(*v.objects, *objects)) for n, v in views.items()}


def _refusals(spec: EstateSpec, site: Site, tenant: Tenant, on_site: OnSiteTenants) -> list[Canonical]:
    out: list[Canonical] = []
    for pool in site.node_pools:
        if pool.sharing.mode == "time-slicing":
            why = f"{tenant.name} (untrusted): time-sliced GPUs on {pool.name} are refused"
            out.append(notebook(site, pool, tenant, "blocked", why))
        elif pool.dedicated_to != tenant.name and not queues.is_burst(pool):
            whose = f"{pool.dedicated_to}'s pool" if pool.dedicated_to else "shared pool"
            why = (
                f"{tenant.name} (untrusted): {whose} {pool.name} is refused (untrusted tenants run on their own nodes)"
            )
            out.append(notebook(site, pool, tenant, "blocked", why))
    whole = whole_file_system(site, tenant)
    if whole is not None:
        out.append(whole)
    egress = open_egress(spec, site, tenant, on_site)
    if egress is not None:
        out.append(egress)
    return out
