"""How the MultiKueue manager reaches a worker: an identity on the worker and a kubeconfig on the manager.

On every worker: a ServiceAccount with the ClusterRole the Kueue docs give the manager
(site/static/examples/multikueue/create-multikueue-kubeconfig.sh at the pinned tag, versions.KUEUE) — Kueue's
Workloads, and create/watch on the object of every framework the manager dispatches (derived from the enabled
frameworks, so no framework the manager enables lacks its rule: trainjobs, for one, are absent from that script)
— and a long-lived token Secret (`kubernetes.io/service-account-token`; pulumi-kubernetes waits until the token is
filled in). On the manager, a Secret in `kueue-system` holding a kubeconfig built from the worker's API endpoint,
the token Secret's `ca.crt` and token (a secret Output, never plaintext in state or the plan). Not the deployer's
EKS kubeconfig: MultiKueue refuses exec plugins in Secret kubeconfigs ("exec plugins are not allowed",
`pkg/controller/admissionchecks/multikueue/multikueuecluster.go`).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from model.frameworks import DISPATCHED, FRAMEWORKS, FrameworkName
from model.tags import Tags
from model.yaml_text import safe_load

KUBECONFIG_KEY = "kubeconfig"  # the key MultiKueue reads from a Secret-located kubeconfig
WORKER_NAMESPACE = "gpufleet-multikueue"
WORKER_SA = "multikueue"
WORKER_ROLE = "gpufleet-multikueue-manager"

_CREATE_WATCH = ["create", "delete", "get", "list", "watch"]
KUEUE_RULES: list[dict[str, Any]] = [
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": [*_CREATE_WATCH, "update", "patch"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues", "localqueues"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["get", "patch", "update"]},
]


def worker_rules(frameworks: Sequence[FrameworkName]) -> list[dict[str, Any]]:
    """What the manager does on a worker: mirror Workloads, and create and watch the object of each framework it
    dispatches (reading its status where MultiKueue copies it back)."""
    rules: list[dict[str, Any]] = []
    for name in frameworks:
        f = FRAMEWORKS[name]
        if name not in DISPATCHED:
            continue
        rules.append({"apiGroups": [f.group], "resources": [f.resource], "verbs": list(_CREATE_WATCH)})
        if f.status:
            rules.append({"apiGroups": [f.group], "resources": [f"{f.resource}/status"], "verbs": ["get"]})
    return [*rules, *KUEUE_RULES]


def worker_kubeconfig(cluster: str, server: str, ca_data_b64: str, token: str) -> str:
    """A kubeconfig for the MultiKueue manager: one cluster, one token user."""
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
    doc = safe_load(kubeconfig) if kubeconfig else None
    if not isinstance(doc, dict):
        return ""
    current = doc.get("current-context")
    contexts = {c.get("name"): c.get("context", {}) for c in doc.get("contexts") or []}
    cluster_name = contexts.get(current, {}).get("cluster") if current else None
    clusters = doc.get("clusters") or []
    chosen = next((c for c in clusters if c.get("name") == cluster_name), clusters[0] if clusters else {})
    return str((chosen.get("cluster") or {}).get("server", ""))


def assemble(cluster: str, kubeconfig: str, data: Mapping[str, str] | None) -> str:
    """The manager's kubeconfig of a worker from the deployer's (its server) and the token Secret's data."""
    data = data or {}
    token = base64.b64decode(data.get("token", "")).decode()
    return worker_kubeconfig(cluster, server_of(kubeconfig), data.get("ca.crt", ""), token)


class WorkerAccess(pulumi.ComponentResource):
    """On one worker: the `gpufleet-multikueue` namespace (Pod Security restricted), the manager's ServiceAccount,
    ClusterRole (`worker_rules`) and binding, and its long-lived token Secret (`token`)."""

    token: k8s.core.v1.Secret

    def __init__(
        self,
        name: str,
        frameworks: Sequence[FrameworkName],
        tags: Tags,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("gpufleet:hybrid:WorkerAccess", name, None, opts)
        labels = tags.labels()
        psa = {"pod-security.kubernetes.io/enforce": "restricted"}
        child = pulumi.ResourceOptions(parent=self)

        def meta(n: str, ns: str | None = None, annotations: dict[str, str] | None = None) -> Any:
            return k8s.meta.v1.ObjectMetaArgs(name=n, namespace=ns, labels=labels, annotations=annotations)

        ns = k8s.core.v1.Namespace(
            f"{name}-ns",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=WORKER_NAMESPACE, labels={**labels, **psa}),
            opts=child,
        )
        in_ns = pulumi.ResourceOptions(parent=self, depends_on=[ns])
        sa = k8s.core.v1.ServiceAccount(
            f"{name}-sa", metadata=meta(WORKER_SA, WORKER_NAMESPACE), automount_service_account_token=False, opts=in_ns
        )
        rules = [
            k8s.rbac.v1.PolicyRuleArgs(api_groups=r["apiGroups"], resources=r["resources"], verbs=r["verbs"])
            for r in worker_rules(frameworks)
        ]
        role = k8s.rbac.v1.ClusterRole(f"{name}-role", metadata=meta(WORKER_ROLE), rules=rules, opts=child)
        k8s.rbac.v1.ClusterRoleBinding(
            f"{name}-binding",
            metadata=meta(WORKER_ROLE),
            role_ref=k8s.rbac.v1.RoleRefArgs(
                api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=WORKER_ROLE
            ),
            subjects=[k8s.rbac.v1.SubjectArgs(kind="ServiceAccount", name=WORKER_SA, namespace=WORKER_NAMESPACE)],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[sa, role]),
        )
        # A long-lived token: TokenRequest tokens expire (kueue#9280); this one lives until the Secret is
        # deleted, so rotating it = replacing this Secret (`pulumi up --replace <urn>`).
        self.token = k8s.core.v1.Secret(
            f"{name}-token",
            metadata=meta(f"{WORKER_SA}-token", WORKER_NAMESPACE, {"kubernetes.io/service-account.name": WORKER_SA}),
            type="kubernetes.io/service-account-token",
            opts=pulumi.ResourceOptions(parent=self, depends_on=[ns, sa], additional_secret_outputs=["data"]),
        )
        self.register_outputs({})
