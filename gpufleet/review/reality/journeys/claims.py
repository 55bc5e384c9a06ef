"""DRA claims as Kueue counts them at the tag of versions.KUEUE (pkg/dra/claims.go,
GetResourceRequestsForResourceClaimTemplates): each pod's `resourceClaims` naming a ResourceClaimTemplate.

- The template must exist in the workload's namespace, else the Workload's requests cannot be computed and Kueue
  requeues it (pkg/controller/core/workload_controller.go). A ComputeDomain's channel template is created by
  NVIDIA's ComputeDomain controller under `spec.channel.resourceClaimTemplate.name` (NVIDIA/k8s-dra-driver-gpu at
  versions.NVIDIA_DRA_DRIVER: templates/compute-domain-workload-claim-template.tmpl.yaml).
- Each `exactly` request counts `count` devices (1 by default) of its DeviceClass; a class that no
  `resources.deviceClassMappings` entry names makes the Workload inadmissible ("DeviceClass ... is not mapped in
  DRA configuration"); a mapped class counts as the mapping's resource name.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from gpufleet.review.reality.journeys.core import Cite, ClusterView, PodSet
from gpufleet.review.reality.journeys.kueue import TAG, Config
from gpufleet.review.reality.journeys.resources import Amounts
from model import dra

CLAIMS = Cite("DRA claims counted through resources.deviceClassMappings", f"{TAG} pkg/dra/claims.go")


def templates(cluster: ClusterView, namespace: str) -> dict[str, dict[str, Any]]:
    """ResourceClaimTemplates of `namespace`: those on the cluster and those the ComputeDomain controller makes."""
    out = {str(t["metadata"]["name"]): t for t in cluster.in_namespace("ResourceClaimTemplate", namespace)}
    for cd in cluster.in_namespace("ComputeDomain", namespace):
        name = (((cd.get("spec") or {}).get("channel") or {}).get("resourceClaimTemplate") or {}).get("name")
        if name:
            out.setdefault(str(name), dra.channel_claim_template(str(name), namespace))
    return out


def requests(cluster: ClusterView, namespace: str, ps: PodSet, cfg: Config) -> Amounts | tuple[str, str, str]:
    """What one pod of `ps` claims through DRA, as Kueue's quota resources; or (why, blocker, unblock)."""
    known = templates(cluster, namespace)
    mapped = {c: str(m["name"]) for m in cfg.device_class_mappings for c in m.get("deviceClassNames") or []}
    out: Amounts = {}
    for claim in ps.spec.get("resourceClaims") or []:
        name = claim.get("resourceClaimTemplateName")
        if not name:
            continue
        template = known.get(str(name))
        if template is None:
            return (
                f"pod set {ps.name} claims ResourceClaimTemplate {namespace}/{name}, which does not exist (no "
                "ComputeDomain there names it either): Kueue cannot count the claim and requeues the workload",
                f"ResourceClaimTemplate/{namespace}/{name}",
                f"apply the ComputeDomain whose spec.channel.resourceClaimTemplate.name is {name} first",
            )
        for req in (((template.get("spec") or {}).get("spec") or {}).get("devices") or {}).get("requests") or []:
            exactly = req.get("exactly") or {}
            cls = str(exactly.get("deviceClassName", ""))
            if not cls:
                continue
            if cls not in mapped:
                return (
                    f"DeviceClass {cls} is not mapped in DRA configuration for podset {ps.name}: Kueue refuses the "
                    "workload as inadmissible",
                    "Configuration/kueue",
                    f"map {cls} in Kueue's resources.deviceClassMappings",
                )
            out[mapped[cls]] = out.get(mapped[cls], Decimal(0)) + Decimal(int(exactly.get("count", 1)))
    return out
