"""The estate's clusters as a journey sees them: every object the plan applies to each cluster and every object
its Helm releases render there, grouped by the Kubernetes provider that applies them.

A cluster is named after its site (the stack's site name), or `manager` for the MultiKueue manager of a hybrid
estate. Objects are plain manifests; the stages interpret them the way the real systems do.
"""

from __future__ import annotations

from typing import Any

from gpufleet.charts.render import RenderedRelease, as_applied, cluster_scoped_kinds
from gpufleet.engine.plan import Plan, PlanResource
from gpufleet.review.reality.journeys.core import ClusterView, NodeGroup
from model.cni import K8S_PROVIDER_TYPE
from model.conventions import HELM_RELEASE, NODE_GROUP
from model.kinds.aws import CA_TAG_PREFIX

MANAGER = "manager"
ASG_TAG = "aws:autoscaling/tag:Tag"
SITE_SUFFIX = ":Site"  # gpufleet:aws:Site, gpufleet:baremetal:Site, ...


def _cluster_of(plan: Plan, provider_key: str) -> tuple[str, str | None]:
    """(cluster name, site name) of the Kubernetes provider `provider_key`."""
    for a in plan.ancestors(provider_key):
        if a.type.endswith(SITE_SUFFIX):
            return a.name, a.name
    return MANAGER, None


def _chart(release: PlanResource) -> str:
    return str(release.inputs.get("chart", "")).rstrip("/").rsplit("/", 1)[-1]


def clusters(plan: Plan, releases: dict[str, RenderedRelease]) -> dict[str, ClusterView]:
    """Every cluster the plan reaches, with its objects (`releases`: rendered Helm releases by logical key).

    A rendered object without a namespace lands in its release's namespace unless its kind is cluster-scoped:
    a built-in one, or a CRD of `scope: Cluster` among the cluster's own CRDs (charts.render.cluster_scoped_kinds),
    as Helm applies it (https://helm.sh/docs/chart_best_practices/templates/, "namespace")."""
    objects: dict[str, list[dict[str, Any]]] = {}
    rendered: dict[str, list[tuple[RenderedRelease, str]]] = {}
    values: dict[str, dict[str, dict[str, Any]]] = {}
    sites: dict[str, str | None] = {}
    for r in plan.resources:
        if not r.provider or not r.type.startswith("kubernetes:") or plan.get(r.provider).type != K8S_PROVIDER_TYPE:
            continue
        name, site = _cluster_of(plan, r.provider)
        sites[name] = site
        objects.setdefault(name, [])
        if r.type == HELM_RELEASE:
            values.setdefault(name, {})[_chart(r)] = dict(r.inputs.get("values") or {})
            release = releases.get(r.key)
            if release is not None and release.rendered:
                rendered.setdefault(name, []).append((release, str(r.inputs.get("namespace") or "default")))
        elif isinstance(r.inputs.get("kind"), str):
            objects[name].append(r.inputs)
    for name, own in rendered.items():
        crds = [o for o in objects[name] if o.get("kind") == "CustomResourceDefinition"]
        scoped = cluster_scoped_kinds([rel for rel, _ in own], crds)
        objects[name] += [as_applied(o, namespace, scoped) for rel, namespace in own for o in rel.all_objects()]
    groups = _node_groups(plan)
    return {
        name: ClusterView(name, sites[name], tuple(objs), values.get(name, {}), tuple(groups.get(name, ())))
        for name, objs in objects.items()
    }


def _node_groups(plan: Plan) -> dict[str, list[NodeGroup]]:
    """EKS node groups by site name. The autoscaler discovers a group by tags on its Auto Scaling group, which
    gpufleet sets beside the node group (cluster-autoscaler cloudprovider/aws/README.md, "Auto-Discovery Setup")."""
    enabled = f"{CA_TAG_PREFIX}/enabled"
    tagged = {
        r.parent
        for r in plan.resources
        if r.type == ASG_TAG and (r.inputs.get("tag") or {}).get("key") == enabled and r.parent
    }
    out: dict[str, list[NodeGroup]] = {}
    for r in plan.resources:
        if r.type != NODE_GROUP:
            continue
        site = next((a.name for a in plan.ancestors(r.key) if a.type.endswith(SITE_SUFFIX)), None)
        if site is not None:
            out.setdefault(site, []).append(NodeGroup(r, r.parent in tagged))
    return out
