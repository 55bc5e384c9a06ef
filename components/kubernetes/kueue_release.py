"""Installing Kueue on a cluster (every site's, and a hybrid estate's MultiKueue manager): its namespace and the
pinned chart carrying gpufleet's whole Configuration (components.kubernetes.kueue.controller_config)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from components.kubernetes import helm, monitoring
from model import conventions, versions

KUEUE_NAMESPACE = "kueue-system"
PROVISIONING_CRD_ANNOTATION = "gpufleet.io/provisioning-request-crd"


def namespace(resource_name: str, labels: Mapping[str, str], opts: pulumi.ResourceOptions) -> k8s.core.v1.Namespace:
    """`kueue-system`. The chart's manager runs as non-root, drops all capabilities and uses RuntimeDefault seccomp
    (charts/kueue/values.yaml), so its namespace enforces Pod Security `restricted`."""
    psa = conventions.pod_security_labels("restricted")
    return k8s.core.v1.Namespace(
        resource_name, metadata=k8s.meta.v1.ObjectMetaArgs(name=KUEUE_NAMESPACE, labels={**labels, **psa}), opts=opts
    )


def release(
    resource_name: str,
    config: dict[str, Any],
    *,
    provisioning_crd: bool,
    opts: pulumi.ResourceOptions,
) -> k8s.helm.v3.Release:
    """The Kueue chart with `config` as its whole Configuration. Kueue turns on its ProvisioningRequest admission
    check only if the CRD exists when it starts (cmd/kueue/main.go, ServerSupportsProvisioningRequest), so where
    gpufleet installs that CRD (`provisioning_crd`) the manager pod carries an annotation naming its source: the
    pod restarts, and finds the CRD, when the CRD first appears or changes."""
    manager: dict[str, Any] = {}
    if provisioning_crd:
        manager = {"manager": {"podAnnotations": {PROVISIONING_CRD_ANNOTATION: versions.PROVISIONING_REQUEST_CRD_URL}}}
    values: dict[str, Any] = {
        # never the chart's ServiceMonitor: it cannot carry the labels Prometheus selects (monitoring.py)
        "enablePrometheus": False,
        "managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(config, sort_keys=False)},
    }
    if manager:
        values["controllerManager"] = manager
    return helm.release(
        resource_name, versions.KUEUE, name=monitoring.KUEUE_RELEASE, namespace=KUEUE_NAMESPACE, create_namespace=False,
        values=values, opts=opts,
    )  # fmt: skip
