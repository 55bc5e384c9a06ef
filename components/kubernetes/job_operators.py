"""JobOperators: the controllers (and CRDs) of the job frameworks a cluster's Kueue enables beyond Kubernetes'
own kinds, from charts pinned in versions.py. Which frameworks need which operator: model.frameworks.

JobSet (jobset.x-k8s.io/jobset): the JobSet chart, CRD in its `crds/` folder (charts/jobset at the pinned tag),
controller and webhook in `jobset-system`. On a MultiKueue manager the controller leaves alone the JobSets Kueue
dispatches (`spec.managedBy: kueue.x-k8s.io/multikueue`); the CRD is what lets tenants create them there.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_kubernetes as k8s

from components.kubernetes import helm
from model import versions
from model.frameworks import FrameworkName, enabled, operators

OPERATOR_CHARTS: dict[str, tuple[versions.Chart, str]] = {"jobset": (versions.JOBSET, "jobset-system")}
"""Operator key (model.frameworks) -> its pinned chart and namespace."""

OPERATOR_VALUES: dict[str, dict[str, object]] = {
    # The chart runs the controller as non-root without naming the user; the image's is 65532 (distroless
    # `nonroot`, Dockerfile `USER 65532:65532` at the pinned tag), named here so the pod says which UID it runs as.
    "jobset": {
        "controller": {
            "podSecurityContext": {
                "runAsNonRoot": True,
                "runAsUser": 65532,
                "runAsGroup": 65532,
                "seccompProfile": {"type": "RuntimeDefault"},
            }
        }
    },
}
"""Operator key -> the chart values gpufleet sets (charts/<chart>/values.yaml at the pinned tag)."""


class JobOperators(pulumi.ComponentResource):
    """One Helm release per operator the frameworks need (none for Kubernetes' own kinds)."""

    releases: dict[str, k8s.helm.v3.Release]

    def __init__(
        self,
        name: str,
        frameworks: Sequence[FrameworkName],
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("gpufleet:kubernetes:JobOperators", name, None, opts)
        self.releases = {}
        for key in operators(enabled(list(frameworks))):
            chart, namespace = OPERATOR_CHARTS[key]
            self.releases[key] = helm.release(
                f"{name}-{key}",
                chart,
                name=key,
                namespace=namespace,
                create_namespace=True,
                values=OPERATOR_VALUES.get(key, {}),
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(depends_on)),
            )
        self.register_outputs({})
