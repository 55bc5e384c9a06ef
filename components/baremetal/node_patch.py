"""Node labels and taints of a bootstrapped server, kept by a Kubernetes NodePatch.

The labels are the pool's (model.nodes.pool_labels), the server's topology (rack, leaf, rail: what Kueue
Topology levels and topology-aware scheduling read) and the estate's cost labels (Tags.labels, with the
dedicated tenant or `shared`); the taints are the pool's (GPU taint, tenant taint on dedicated pools). The patch
depends on the server's last bootstrap step, so it applies to a node that is registered and Ready.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.baremetal.bootstrap import node_labels
from model.conventions import SHARED
from model.nodes import pool_taints
from model.spec import BaremetalNodePool, EstateSpec, Server
from model.tags import Tags


def patch_labels(spec: EstateSpec, tags: Tags, pool: BaremetalNodePool, server: Server) -> dict[str, str]:
    """Every label the NodePatch sets on the server's node."""
    return {**tags.labels(tenant=pool.dedicated_to or SHARED), **node_labels(spec, pool, server)}


def node_patch(
    name: str,
    node_name: pulumi.Input[str],
    spec: EstateSpec,
    tags: Tags,
    pool: BaremetalNodePool,
    server: Server,
    opts: pulumi.ResourceOptions,
) -> k8s.core.v1.NodePatch:
    return k8s.core.v1.NodePatch(
        name,
        metadata=k8s.meta.v1.ObjectMetaPatchArgs(name=node_name, labels=patch_labels(spec, tags, pool, server)),
        spec=k8s.core.v1.NodeSpecPatchArgs(
            taints=[k8s.core.v1.TaintPatchArgs(key=t.key, value=t.value, effect=t.effect) for t in pool_taints(pool)]
        ),
        opts=opts,
    )
